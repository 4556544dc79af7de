// Package status reports, for one app on one cluster, every object's health
// by kstatus rules (Current, InProgress, Failed, NotFound, …), whether it
// has drifted from the rendered state, and when the app was last applied.
package status

import (
	"context"
	"fmt"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Health values beyond kstatus's own.
const (
	// NotFound: rendered but not in the cluster.
	NotFound = string(kstatus.NotFoundStatus)
	// Current: healthy.
	Current = string(kstatus.CurrentStatus)
	// Failed: kstatus says it failed.
	Failed = string(kstatus.FailedStatus)
	// InProgress: on its way.
	InProgress = string(kstatus.InProgressStatus)
)

// Object is one object's status.
type Object struct {
	Ref       string `json:"object"`
	Namespace string `json:"namespace,omitempty"`
	Health    string `json:"health"`
	Message   string `json:"message,omitempty"`
	// Drifted: applying the render would change the live object, and
	// RenderChanged says why: the render is not what the last apply
	// sent ("out of sync"); without it the live object was edited since
	// ("drifted").
	Drifted       bool `json:"drifted"`
	RenderChanged bool `json:"renderChanged,omitempty"`
	// Orphaned: a member of the app's set that is no longer rendered.
	Orphaned bool   `json:"orphaned,omitempty"`
	Error    string `json:"error,omitempty"`
}

// App is one app's status on one cluster.
type App struct {
	App string `json:"app"`
	// NotDeployed: the app was never applied to the cluster (it records
	// no set).
	NotDeployed bool   `json:"notDeployed,omitempty"`
	LastApplied string `json:"lastApplied,omitempty"`
	// Revision is the app's current revision (0: none recorded), and
	// Source its source commit when it came from git.
	Revision int    `json:"revision,omitempty"`
	Source   string `json:"source,omitempty"`
	// Digest is the current revision's render digest, under Key, the
	// cluster's digest key.
	Digest string     `json:"digest,omitempty"`
	Key    digest.Key `json:"-"`
	// Verification is what the gates said of the current revision.
	Verification *revision.Verification `json:"verification,omitempty"`
	// RolledBack, when the current revision is an automatic rollback's
	// (onFailure: rollback), is its description: "rollback (automatic)
	// to 1: production/canary failed (…)".
	RolledBack string   `json:"rolledBack,omitempty"`
	Objects    []Object `json:"objects"`
	// Published is, for a delivered cluster, its tag and its Flux.
	Published *Published `json:"published,omitempty"`
}

// RevisionLabel is the current revision and its state: "r8 verified",
// "r8 failed"; "" when none is recorded.
func (a App) RevisionLabel() string {
	switch {
	case a.Revision == 0:
		return ""
	case a.Verification == nil:
		return fmt.Sprintf("r%d", a.Revision)
	case a.RolledBack != "":
		return fmt.Sprintf("r%d %s, rolled back automatically", a.Revision, a.Verification.State)
	}
	return fmt.Sprintf("r%d %s", a.Revision, a.Verification.State)
}

// currentOf reads what the gates said of an app's current revision (nil
// when there is none, or it cannot be read), and the description of an
// automatic rollback's.
func currentOf(ctx context.Context, c *kube.Client, set *inventory.Set) (*revision.Verification, string) {
	if set.Revision == 0 {
		return nil, ""
	}
	rev, err := revision.Recorded(ctx, c, set.App, set.Revision)
	if err != nil {
		return nil, ""
	}
	return &rev.Verification, rev.AutomaticRollback()
}

// Options configure a status.
type Options struct {
	// Ignore names fields whose differences are not drift.
	Ignore []object.IgnoreRule
	// Concurrency bounds the object requests in flight.
	Concurrency int
	// Version is the plugin's version: an object the last apply of this
	// version made, and nobody changed since, cannot have drifted and
	// needs no dry run (diff.Options.SkipUnchanged).
	Version string
}

// Run computes the status of one app's rendered objects on a cluster:
// drift by a dry-run apply of each object but those the last apply made
// and nobody changed since, health from the live objects (read with the
// dry runs, or listed with the app's members).
func Run(ctx context.Context, c *kube.Client, app string, objs []*unstructured.Unstructured, o Options) (App, error) {
	set, err := inventory.Load(ctx, c, app)
	if err != nil {
		return App{}, err
	}
	// Force: a field someone else changed by hand is drift, not a
	// conflict. Health: only what status reports is kept of each object.
	diffs, err := diff.Run(ctx, c, objs, diff.Options{App: app, FieldManager: "kubectl-fleet", Force: true, Concurrency: o.Concurrency, Set: set, Ignore: o.Ignore,
		SkipUnchanged: true, Version: o.Version, Health: true})
	if err != nil {
		return App{}, err
	}
	out := App{App: app, NotDeployed: !set.Exists, LastApplied: set.LastApplied, Revision: set.Revision, Source: set.Source, Digest: set.Digest}
	out.Verification, out.RolledBack = currentOf(ctx, c, set)
	if out.Key, err = digest.KeyOf(ctx, c); err != nil {
		return App{}, err
	}
	for _, d := range diffs {
		if d.Action == change.Kept {
			continue // leaves the app at its next apply --prune
		}
		out.Objects = append(out.Objects, objectOf(d))
	}
	return out, nil
}

// objectOf is the status of one object diffed with diff.Options.Health.
func objectOf(d diff.Object) Object {
	o := Object{Ref: d.Ref, Drifted: d.Action.Updates(), RenderChanged: d.RenderChanged, Orphaned: d.Action == change.Pruned}
	switch {
	case d.Err != nil:
		o.Health, o.Error = string(kstatus.UnknownStatus), d.Err.Error()
	case d.Current == nil:
		o.Health = NotFound
	case d.HealthErr != nil:
		o.Namespace = d.Current.GetNamespace()
		o.Health, o.Error = string(kstatus.UnknownStatus), d.HealthErr.Error()
	default:
		o.Namespace = d.Current.GetNamespace()
		o.Health, o.Message = string(d.Health.Status), d.Health.Message
	}
	if o.Namespace == "" && d.Merged != nil {
		o.Namespace = d.Merged.GetNamespace()
	}
	return o
}

// FromInventory computes the status of an app from what the cluster
// records alone, without a render: the current revision's objects stand
// for the render when they were stored (so drift is reported too), else
// the set's live members are reported by health alone.
func FromInventory(ctx context.Context, c *kube.Client, set *inventory.Set, o Options) (App, error) {
	if set.Revision > 0 {
		if _, objs, err := revision.Load(ctx, c, set.App, set.Revision); err == nil {
			return Run(ctx, c, set.App, objs, o)
		}
	}
	// Of each member, its health is kept as it is listed, not the member.
	objects, err := inventory.KeepMembers(ctx, c, set, inventory.ContentsOf(nil), kube.HealthFields, func(m *unstructured.Unstructured) (Object, bool) {
		o := Object{Ref: object.Ref(m), Namespace: m.GetNamespace()}
		if res, err := object.Health(m); err != nil {
			o.Health, o.Error = string(kstatus.UnknownStatus), err.Error()
		} else {
			o.Health, o.Message = string(res.Status), res.Message
		}
		return o, true
	})
	if err != nil {
		return App{}, fmt.Errorf("listing the members of app %s: %w", set.App, err)
	}
	out := App{App: set.App, LastApplied: set.LastApplied, Revision: set.Revision, Source: set.Source, Digest: set.Digest}
	out.Verification, out.RolledBack = currentOf(ctx, c, set)
	if out.Key, err = digest.KeyOf(ctx, c); err != nil {
		return App{}, err
	}
	out.Objects = objects
	return out, nil
}

// Deployed reports whether any app of results runs on any cluster: the
// promotion rule has nothing to say of a fleet that runs nothing yet, or
// nothing any more (every app deleted).
func Deployed(results map[string][]App) bool {
	for _, apps := range results {
		for _, a := range apps {
			if !a.NotDeployed {
				return true
			}
		}
	}
	return false
}

// States of an app beyond its objects' health.
const (
	// Drifted: objects edited live since the last apply.
	Drifted = "Drifted"
	// OutOfSync: the render changed since the last apply (objects that
	// differ, or members no longer rendered).
	OutOfSync = "OutOfSync"
	// NotDeployed: never applied to the cluster.
	NotDeployed = "NotDeployed"
)

// rank orders states from best to worst.
var rank = map[string]int{Current: 0, InProgress: 1, NotObserved: 2, OutOfSync: 2, Drifted: 3, "Terminating": 4, string(kstatus.UnknownStatus): 5, NotFound: 6, NotDeployed: 7, Failed: 8, TagMoved: 8}

// sync is what an object's difference from the render is: "" (none),
// Drifted or OutOfSync.
func (o Object) sync() string {
	switch {
	case o.Orphaned, o.Drifted && o.RenderChanged:
		return OutOfSync
	case o.Drifted:
		return Drifted
	}
	return ""
}

// Summary is an app's state in one word and how many objects have it:
// the worst of its objects' states, a Current object that differs counted
// as Drifted or OutOfSync; NotDeployed for an app never applied.
func (a App) Summary() (state string, n int) {
	if a.NotDeployed {
		return NotDeployed, len(a.Objects)
	}
	state = Current
	if s := a.Published.state(); s != "" {
		state = s
	}
	for _, o := range a.Objects {
		s := o.Health
		if d := o.sync(); d != "" && (s == Current || o.Orphaned) {
			s = d
		}
		switch {
		case rank[s] > rank[state]:
			state, n = s, 1
		case s == state:
			n++
		}
	}
	return state, n
}

// Cell is the app's state in a line: the worst health of its rendered
// objects and how many have it ("1 of 2 InProgress": objects, not
// kubectl's READY), then how many were edited live ("drifted") and how
// many the render changed since the last apply ("out of sync", members
// no longer rendered included), so that none hides another:
// "6 of 131 InProgress, 2 drifted". An app never applied is "not
// deployed".
func (a App) Cell() string {
	if a.NotDeployed {
		return "not deployed"
	}
	if c := a.Published.cell(); c != "" {
		return c
	}
	health, n, total, drifted, outOfSync := Current, 0, 0, 0, 0
	for _, o := range a.Objects {
		switch o.sync() {
		case Drifted:
			drifted++
		case OutOfSync:
			outOfSync++
		}
		if o.Orphaned {
			continue // not rendered: its health is not the app's
		}
		total++
		switch {
		case rank[o.Health] > rank[health]:
			health, n = o.Health, 1
		case o.Health == health:
			n++
		}
	}
	cell := fmt.Sprintf("%d of %d %s", n, total, health)
	if total == 0 {
		cell = "no objects"
	}
	if drifted > 0 {
		cell += fmt.Sprintf(", %d drifted", drifted)
	}
	if outOfSync > 0 {
		cell += fmt.Sprintf(", %d out of sync", outOfSync)
	}
	return cell
}

// OK reports whether every object is Current and in sync.
func (a App) OK() bool {
	state, _ := a.Summary()
	return state == Current
}

// Unobserved reports whether the app is published to a cluster no
// context reads, and nothing else is wrong with it: not a failure, but
// nothing says what runs there (status's own exit code).
func (a App) Unobserved() bool {
	state, _ := a.Summary()
	return state == NotObserved
}
