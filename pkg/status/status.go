// Package status reports, for one app on one cluster, every object's health
// by kstatus rules (Current, InProgress, Failed, NotFound, …), whether it
// has drifted from the rendered state, and when the app was last applied.
package status

import (
	"context"
	"fmt"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
	// Drifted: applying the render would change the live object.
	Drifted bool `json:"drifted"`
	// Orphaned: a member of the app's set that is no longer rendered.
	Orphaned bool   `json:"orphaned,omitempty"`
	Error    string `json:"error,omitempty"`
}

// App is one app's status on one cluster.
type App struct {
	App         string `json:"app"`
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
	Objects      []Object               `json:"objects"`
}

// RevisionLabel is the current revision and its state: "r8 verified",
// "r8 failed"; "" when none is recorded.
func (a App) RevisionLabel() string {
	switch {
	case a.Revision == 0:
		return ""
	case a.Verification == nil:
		return fmt.Sprintf("r%d", a.Revision)
	}
	return fmt.Sprintf("r%d %s", a.Revision, a.Verification.State)
}

// verificationOf reads what the gates said of an app's current revision;
// nil when there is none, or it cannot be read.
func verificationOf(ctx context.Context, c *kube.Client, set *inventory.Set) *revision.Verification {
	if set.Revision == 0 {
		return nil
	}
	v, err := revision.VerificationOf(ctx, c, set.App, set.Revision)
	if err != nil {
		return nil
	}
	return &v
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
	out := App{App: app, LastApplied: set.LastApplied, Revision: set.Revision, Source: set.Source, Digest: set.Digest, Verification: verificationOf(ctx, c, set)}
	if out.Key, err = digest.KeyOf(ctx, c); err != nil {
		return App{}, err
	}
	for _, d := range diffs {
		if d.Kind == diff.Kept {
			continue // leaves the app at its next apply --prune
		}
		out.Objects = append(out.Objects, objectOf(d))
	}
	return out, nil
}

// objectOf is the status of one object diffed with diff.Options.Health.
func objectOf(d diff.Object) Object {
	o := Object{Ref: d.Ref, Drifted: d.Kind == diff.Change || d.Kind == diff.Adopt, Orphaned: d.Kind == diff.Prune}
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
	members, err := set.Members(ctx, c, inventory.ContentsOf(nil))
	if err != nil {
		return App{}, fmt.Errorf("listing the members of app %s: %w", set.App, err)
	}
	out := App{App: set.App, LastApplied: set.LastApplied, Revision: set.Revision, Source: set.Source, Digest: set.Digest, Verification: verificationOf(ctx, c, set)}
	if out.Key, err = digest.KeyOf(ctx, c); err != nil {
		return App{}, err
	}
	for _, m := range members {
		o := Object{Ref: object.Ref(m), Namespace: m.GetNamespace()}
		if res, err := object.Health(m); err != nil {
			o.Health, o.Error = string(kstatus.UnknownStatus), err.Error()
		} else {
			o.Health, o.Message = string(res.Status), res.Message
		}
		out.Objects = append(out.Objects, o)
	}
	return out, nil
}

// rank orders states from best to worst.
var rank = map[string]int{Current: 0, InProgress: 1, "Drifted": 2, "Terminating": 3, string(kstatus.UnknownStatus): 4, NotFound: 5, Failed: 6}

// Summary is an app's state in one word and how many objects have it:
// the worst of its objects' states, drift counted as "Drifted".
func (a App) Summary() (state string, n int) {
	state = Current
	for _, o := range a.Objects {
		s := o.Health
		if o.Drifted && s == Current {
			s = "Drifted"
		}
		if o.Orphaned {
			s = "Drifted"
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

// Cell is the app's state in a line: the worst health and how many of its
// objects have it, and how many drifted (orphans included), so that
// neither hides the other ("InProgress 6/131, 2 drifted"); an app whose
// objects are all Current but some drifted is "Drifted 2/131".
func (a App) Cell() string {
	health, n, drifted := Current, 0, 0
	for _, o := range a.Objects {
		if o.Drifted || o.Orphaned {
			drifted++
		}
		if o.Orphaned {
			continue // not rendered: its health is not the app's
		}
		switch {
		case rank[o.Health] > rank[health]:
			health, n = o.Health, 1
		case o.Health == health:
			n++
		}
	}
	switch {
	case health == Current && drifted > 0:
		return fmt.Sprintf("Drifted %d/%d", drifted, len(a.Objects))
	case drifted > 0:
		return fmt.Sprintf("%s %d/%d, %d drifted", health, n, len(a.Objects), drifted)
	}
	return fmt.Sprintf("%s %d/%d", health, n, len(a.Objects))
}

// OK reports whether every object is Current and in sync.
func (a App) OK() bool {
	state, _ := a.Summary()
	return state == Current
}
