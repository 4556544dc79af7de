package rollout

import (
	"cmp"
	"fmt"
	"strconv"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/analysis"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Event is one thing that happened on a cluster during a rollout. Each
// marshals as its line of -o json (with "type" first) and reads as the
// line text output prints after the cluster's prefix, so that text, JSON,
// and any other consumer see the same events.
type Event interface {
	// Where is the cluster the event happened on.
	Where() string
	// Text is the event as a line of text, without the cluster prefix.
	Text() string
}

// Sink consumes events; a rollout's events go to one Sink, which may fan
// them out.
type Sink func(Event)

// labelled puts label before line when not empty: "web: …".
func labelled(label, line string) string {
	if label == "" {
		return line
	}
	return label + ": " + line
}

// The JSON types of the events (their "type" field, -o json), each
// said here once: what a consumer of -o json filters on.
const (
	typeObject       = "object"
	typePhase        = "phase"
	typeRevision     = "revision"
	typeVerification = "verification"
	typeCheck        = "check"
	typeSoak         = "soak"
	typeMeasurement  = "measurement"
	typeLock         = "lock"
	typeSkip         = "skip"
	typePublish      = "publish"
	typeFlux         = "flux"
	typeWave         = "wave"
	typePromotion    = "promotion"
	typeRollback     = "rollback"
)

// ObjectEvent is one object's outcome.
type ObjectEvent struct {
	Type      string `json:"type"`
	Cluster   string `json:"cluster"`
	App       string `json:"app"`
	Object    string `json:"object"`
	Namespace string `json:"namespace,omitempty"`
	// Action is what the apply did to the object; Health, instead, what
	// --wait or a test saw of it (one of the two is set).
	Action  change.Action      `json:"action,omitempty"`
	Health  apply.HealthResult `json:"health,omitempty"`
	DryRun  bool               `json:"dryRun,omitempty"`
	Reason  string             `json:"reason,omitempty"`
	Warning string             `json:"warning,omitempty"`
	Error   string             `json:"error,omitempty"`
	// Label goes before the text line ("web", "web (rollback)") when a
	// cluster gets several apps.
	Label string `json:"-"`
	// Test: a test object of the app, said and counted, but not the
	// app's progress, failures or metrics.
	Test bool `json:"-"`
	// Restore: an object of an --atomic restore, said but not counted
	// (the summary counts what the apply did).
	Restore bool `json:"-"`
}

// objectChanged is the event of an object's change.
func objectChanged(cluster, app, label string, ch apply.Change, dryRun bool) ObjectEvent {
	return ObjectEvent{Type: typeObject, Cluster: cluster, App: app, Object: ch.Ref, Namespace: ch.Namespace, Action: ch.Action, Health: ch.Health, DryRun: dryRun, Reason: ch.Reason, Warning: ch.Warning, Error: errString(ch.Err), Label: label}
}

// Where is the cluster.
func (e ObjectEvent) Where() string { return e.Cluster }

// Word is the health when one was seen, else the action: what the line
// says and the summary counts.
func (e ObjectEvent) Word() string { return cmp.Or(string(e.Health), string(e.Action)) }

// Text is "configmap/web configured", with the reason, error or warning.
func (e ObjectEvent) Text() string {
	line := e.Object + " " + e.Word()
	if e.DryRun && e.Health == "" && e.Action != change.Failed && e.Action != change.Skipped && e.Action != change.AfterCRD && e.Reason != change.NotValidated {
		line += " (server dry run)"
	}
	switch {
	case e.Error != "":
		line += ": " + e.Error
	case e.Reason != "":
		line += ": " + e.Reason
	}
	if e.Warning != "" {
		line += "; warning: " + e.Warning
	}
	return labelled(e.Label, line)
}

// phaseEvent is the start of an app's phase.
type phaseEvent struct {
	Type    string `json:"type"`
	Cluster string `json:"cluster"`
	App     string `json:"app"`
	Phase   int    `json:"phase"`
	Objects int    `json:"objects"`
	DryRun  bool   `json:"dryRun,omitempty"`
	Label   string `json:"-"`
}

// Where is the cluster.
func (e phaseEvent) Where() string { return e.Cluster }

// Text is "phase -1: 2 objects".
func (e phaseEvent) Text() string {
	return labelled(e.Label, fmt.Sprintf("phase %d: %d objects", e.Phase, e.Objects))
}

// StageEvent is what a cluster's rollout is at ("applying web, phase
// 2") and, when Objects is set, how many objects it goes through: for the
// live progress display, never printed.
type StageEvent struct {
	Cluster, Stage string
	Objects        int
}

// Where is the cluster.
func (e StageEvent) Where() string { return e.Cluster }

// Text is the stage.
func (e StageEvent) Text() string { return e.Stage }

// TestsEvent is the outcome of an app's tests on a cluster, for the
// summary (each test object has its ObjectEvent).
type TestsEvent struct {
	Cluster, App string
	Err          error
}

// Where is the cluster.
func (e TestsEvent) Where() string { return e.Cluster }

// Text is "tests of web passed".
func (e TestsEvent) Text() string { return "tests of " + e.App + " " + passed(e.Err) }

// RevisionEvent is the revision an apply left current.
type RevisionEvent struct {
	Type     string `json:"type"`
	Cluster  string `json:"cluster"`
	App      string `json:"app"`
	Revision int    `json:"revision"`
	// New: this apply recorded it; else the render was the current
	// revision's.
	New         bool   `json:"new"`
	Description string `json:"description,omitempty"`
	// Error says why no revision was recorded (RBAC).
	Error string `json:"error,omitempty"`
	Label string `json:"-"`
	// Digest is the render's, under the cluster's digest key: what the
	// promotion rule compares (revision.Revision.Digest).
	Digest string `json:"-"`
	// Source is, for a source read from a registry, the artifact the
	// revision was rendered from (oci://…@sha256:…).
	Source string `json:"source,omitempty"`
}

// Where is the cluster.
func (e RevisionEvent) Where() string { return e.Cluster }

// Text is "revision 3 recorded (rollback to 1)", "revision 2 is current
// (the render has not changed)", "revision not recorded: …".
func (e RevisionEvent) Text() string {
	line := fmt.Sprintf("revision %d recorded", e.Revision)
	switch {
	case e.Error != "":
		line = "revision not recorded: " + e.Error
	case !e.New:
		line = fmt.Sprintf("revision %d is current (the render has not changed)", e.Revision)
	case e.Description != "apply":
		line += " (" + e.Description + ")"
	}
	return labelled(e.Label, line)
}

// verificationEvent is what a cluster's gates said of the revision an
// app's apply left current.
type verificationEvent struct {
	Type     string `json:"type"`
	Cluster  string `json:"cluster"`
	App      string `json:"app"`
	Revision int    `json:"revision,omitempty"`
	// Digest is the artifact a delivered cluster's tag points at (it
	// has no revision recorded on it).
	Digest string   `json:"digest,omitempty"`
	State  string   `json:"state"`
	Reason string   `json:"reason,omitempty"`
	Gates  []string `json:"gates,omitempty"`
	// Error says why the verdict could not be recorded.
	Error string `json:"error,omitempty"`
	Label string `json:"-"`
}

// verdictOf is the event of an app's verdict on a cluster; err says why it
// was not recorded.
func verdictOf(cluster, app, label string, n int, v revision.Verification, err error) verificationEvent {
	return verificationEvent{Type: typeVerification, Cluster: cluster, App: app, Revision: n, State: string(v.State), Reason: v.Reason, Gates: v.Gates, Error: errString(err), Label: label}
}

// Where is the cluster.
func (e verificationEvent) Where() string { return e.Cluster }

// Text is "revision 8 failed: check smoke: exit status 1".
func (e verificationEvent) Text() string {
	line := fmt.Sprintf("revision %d %s", e.Revision, revision.Verification{State: revision.State(e.State), Reason: e.Reason})
	if e.Digest != "" {
		line = fmt.Sprintf("revision %d (%s) %s", e.Revision, publish.Short(e.Digest), revision.Verification{State: revision.State(e.State), Reason: e.Reason})
	}
	if e.Error != "" {
		line += "; not recorded: " + e.Error
	}
	return labelled(e.Label, line)
}

// CheckEvent is one check's result on a cluster.
type CheckEvent struct {
	Type    string  `json:"type"`
	Cluster string  `json:"cluster"`
	Check   string  `json:"check"`
	State   string  `json:"state"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

// Where is the cluster.
func (e CheckEvent) Where() string { return e.Cluster }

// Text is "check smoke failed (0.3s): exit status 1".
func (e CheckEvent) Text() string {
	line := fmt.Sprintf("check %s %s (%.1fs)", e.Check, e.State, e.Seconds)
	if e.Error != "" {
		line += ": " + e.Error
	}
	return line
}

// SoakEvent is a cluster's soak starting, passing, failing or being
// interrupted.
type SoakEvent struct {
	Type    string  `json:"type"`
	Cluster string  `json:"cluster"`
	State   string  `json:"state"`
	Left    float64 `json:"secondsLeft"`
	// Analyses are how many analyses the soak measures (started).
	Analyses int    `json:"analyses,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Where is the cluster.
func (e SoakEvent) Where() string { return e.Cluster }

// Text is "soak started: watching for 20s", "soak started: watching for
// 20s and 2 analyses", "soak passed", "soak failed with 12s left: …".
func (e SoakEvent) Text() string {
	left := (time.Duration(e.Left * float64(time.Second))).Round(time.Second)
	switch {
	case e.State == "started" && e.Analyses > 0 && left == 0:
		return "soak started: " + analyses(e.Analyses)
	case e.State == "started" && e.Analyses > 0:
		return fmt.Sprintf("soak started: watching for %s and %s", left, analyses(e.Analyses))
	case e.State == "started":
		return fmt.Sprintf("soak started: watching for %s", left)
	case e.Error != "" && left == 0:
		return fmt.Sprintf("soak %s: %s", e.State, e.Error)
	case e.Error != "":
		return fmt.Sprintf("soak %s with %s left: %s", e.State, left, e.Error)
	}
	return "soak " + e.State
}

// analyses is "1 analysis", "2 analyses".
func analyses(n int) string {
	if n == 1 {
		return "1 analysis"
	}
	return strconv.Itoa(n) + " analyses"
}

// MeasurementEvent is one measurement of an analysis on a cluster,
// taken while it soaks: its value, the condition that judged it and
// what it said (analysis.Outcome).
type MeasurementEvent struct {
	Type     string `json:"type"`
	Cluster  string `json:"cluster"`
	Analysis string `json:"analysis"`
	// N is the measurement's number, of Count (0: until the soak ends).
	N         int              `json:"n"`
	Count     int              `json:"count,omitempty"`
	Value     string           `json:"value"`
	Outcome   analysis.Outcome `json:"outcome"`
	Condition string           `json:"condition,omitempty"`
	Error     string           `json:"error,omitempty"`
}

// measured is the event of measurement m on cluster.
func measured(cluster string, m analysis.Measurement) MeasurementEvent {
	return MeasurementEvent{Type: typeMeasurement, Cluster: cluster, Analysis: m.Analysis, N: m.N, Count: m.Count, Value: m.Value, Outcome: m.Outcome, Condition: m.Condition, Error: errString(m.Err)}
}

// Where is the cluster.
func (e MeasurementEvent) Where() string { return e.Cluster }

// Text is "analysis error-rate (3/10): 0.0042 successful (result <
// 0.01)", "analysis error-rate (2/10): error: …".
func (e MeasurementEvent) Text() string {
	n := strconv.Itoa(e.N)
	if e.Count > 0 {
		n += "/" + strconv.Itoa(e.Count)
	}
	line := fmt.Sprintf("analysis %s (%s): ", e.Analysis, n)
	switch {
	case e.Error != "":
		return line + "error: " + e.Error
	case e.Condition == "":
		return line + e.Value + " " + string(e.Outcome)
	}
	return line + e.Value + " " + string(e.Outcome) + " (" + e.Condition + ")"
}

// lockEvent is what happened to an app's lock on a cluster, when it is
// worth saying: "waiting" for another holder, "not taken" (the user may
// not write leases), "lost" while held.
type lockEvent struct {
	Type    string `json:"type"`
	Cluster string `json:"cluster"`
	App     string `json:"app"`
	State   string `json:"state"`
	Holder  string `json:"holder,omitempty"`
	Error   string `json:"error,omitempty"`
	// Line is the text line (the lock package's own words).
	Line  string `json:"-"`
	Label string `json:"-"`
}

// Where is the cluster.
func (e lockEvent) Where() string { return e.Cluster }

// Text is the lock's line: "waiting up to 2m for the lock: …".
func (e lockEvent) Text() string { return labelled(e.Label, e.Line) }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// skipEvent is an app a rollback skips on a cluster ("" for the whole
// cluster), and why.
type skipEvent struct {
	Type    string `json:"type"`
	Cluster string `json:"cluster"`
	App     string `json:"app"`
	Reason  string `json:"reason"`
	// Nothing: nothing to roll back there; no failure.
	Nothing bool `json:"nothing,omitempty"`
}

// Where is the cluster.
func (e skipEvent) Where() string { return e.Cluster }

// Text is "web: skipped: app web has no revision 4 here", or "web:
// unchanged: nothing to roll back: …".
func (e skipEvent) Text() string {
	if e.Nothing {
		return labelled(e.App, "unchanged: "+e.Reason)
	}
	return labelled(e.App, "skipped: "+e.Reason)
}

// DiffEvent is what --diff found for an app on a cluster before writing
// to it: the sinks print it as diff does, and the report keeps it.
type DiffEvent struct {
	Cluster, App string
	Diffs        []diff.Object
}

// Where is the cluster.
func (e DiffEvent) Where() string { return e.Cluster }

// Text is how many objects differ; a printer shows the diffs themselves.
func (e DiffEvent) Text() string {
	return labelled(e.App, fmt.Sprintf("%d objects diffed", len(e.Diffs)))
}

// OutputEvent is a line of text for people: what a cluster's check
// printed, a note ("web: nothing to delete"). Shown in text, not in
// -o json (whose lines are events only).
type OutputEvent struct {
	Cluster, Line string
}

// Where is the cluster.
func (e OutputEvent) Where() string { return e.Cluster }

// Text is the line.
func (e OutputEvent) Text() string { return e.Line }

// AppEvent is an app's outcome on a cluster, once its apply (and tests)
// ended: for reports, not printed.
type AppEvent struct {
	Cluster, App string
	Err          error
}

// Where is the cluster.
func (e AppEvent) Where() string { return e.Cluster }

// Text is "web applied" or "web failed: …".
func (e AppEvent) Text() string {
	if e.Err != nil {
		return e.App + " failed: " + e.Err.Error()
	}
	return e.App + " applied"
}

// EndEvent is a cluster whose work is over, with its error: for the
// live display, not printed (the summary says it).
type EndEvent struct {
	Cluster string
	Err     error
}

// Where is the cluster.
func (e EndEvent) Where() string { return e.Cluster }

// Text is "done" or the error.
func (e EndEvent) Text() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return "done"
}

// PublishEvent is an app's artifact published for a delivered cluster:
// the cluster's tag moved to it (or already there, or, on a dry run,
// where it would move).
type PublishEvent struct {
	Type    string `json:"type"`
	Cluster string `json:"cluster"`
	App     string `json:"app"`
	// Repository is the app's (oci://…), Tag the cluster's there.
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Digest     string `json:"digest"`
	// Previous is what the tag pointed at before ("": no tag).
	Previous string `json:"previous,omitempty"`
	DryRun   bool   `json:"dryRun,omitempty"`
	Label    string `json:"-"`
}

// Where is the cluster.
func (e PublishEvent) Where() string { return e.Cluster }

// Text is "published oci://r/fleet/web:edge-1 sha256:0123456789ab (was
// sha256:…)".
func (e PublishEvent) Text() string {
	verb := "published"
	switch {
	case e.Previous == e.Digest:
		verb = "unchanged"
	case e.DryRun:
		verb = "would publish"
	}
	line := fmt.Sprintf("%s %s:%s %s", verb, e.Repository, e.Tag, publish.Short(e.Digest))
	if e.Previous != "" && e.Previous != e.Digest {
		line += " (was " + publish.Short(e.Previous) + ")"
	}
	return labelled(e.Label, line)
}

// FluxEvent is what a delivered cluster's Flux says once it applied an
// app's artifact.
type FluxEvent struct {
	Type    string       `json:"type"`
	Cluster string       `json:"cluster"`
	App     string       `json:"app"`
	Digest  string       `json:"digest"`
	Flux    publish.Flux `json:"flux"`
	Label   string       `json:"-"`
}

// Where is the cluster.
func (e FluxEvent) Where() string { return e.Cluster }

// Text is "Flux applied sha256:0123456789ab, Ready (healthy) since …".
func (e FluxEvent) Text() string {
	line := "Flux applied " + publish.Short(e.Digest) + ", Ready"
	if e.Flux.Wait {
		line += " (healthy)"
	}
	if !e.Flux.Since.IsZero() {
		line += " since " + e.Flux.Since.UTC().Format(time.RFC3339)
	}
	return labelled(e.Label, line)
}
