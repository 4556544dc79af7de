package reconcile

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/status"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/version"
)

// AppCheck is what a reconcile pass found of one app on one cluster.
type AppCheck struct {
	App string
	// Render is the digest of this pass's render; Current the current
	// revision's (Revision; 0: none recorded), Exists whether the app's
	// set exists at all.
	Render   string
	Current  string
	Revision int
	Exists   bool
	// Verification is what the gates said of the current revision,
	// read when the render is the current revision's.
	Verification revision.Verification
	// Drifted are the objects that drifted or are missing, checked only
	// when the render is the current revision's.
	Drifted []string
	Err     error
	// Unobserved: a delivered cluster no context reads, whose gates
	// cannot pass (published, not observed): they are not run again.
	Unobserved bool
}

// Unverified reports whether the render is what the cluster runs, but its
// gates have not passed there (they failed, or never ran) and could: the
// pass runs them again, and a later group does not get it meanwhile.
func (a AppCheck) Unverified() bool {
	return !a.Changed() && a.Verification.State != revision.Verified && !a.Unobserved
}

// Changed reports whether the render is not what the cluster runs.
func (a AppCheck) Changed() bool { return !a.Exists || a.Revision == 0 || a.Current != a.Render }

// ClusterCheck is what a pass found on one cluster.
type ClusterCheck struct {
	Cluster string
	Apps    []AppCheck
	// Err: the cluster could not be checked (connecting).
	Err error
}

// Decisions of a pass about a cluster.
const (
	DecUnchanged  = "unchanged"
	DecChanged    = "changed"
	DecUnverified = "unverified"
	DecDrifted    = "drifted"
	DecError      = "error"
)

// Decide says what a pass does with a cluster: apply it when an app's
// render changed, when a current revision is not verified (its gates run
// again), when it could not be checked (apply then fails it where it
// should, against its group's maxFailures), or when it drifted and
// correctDrift; else skip it. Without rerunGates (--skip-gates or
// --skip-tests, whose verdict would be unverified again) an unverified
// revision is applied only when its render changes.
func (c ClusterCheck) Decide(correctDrift, rerunGates bool) (decision string, doApply bool) {
	if c.Err != nil {
		return DecError, true
	}
	drifted := false
	for _, a := range c.Apps {
		if a.Err != nil {
			return DecError, true
		}
		drifted = drifted || len(a.Drifted) > 0
	}
	for _, a := range c.Apps {
		if a.Changed() {
			return DecChanged, true
		}
	}
	for _, a := range c.Apps {
		if a.Unverified() && rerunGates {
			return DecUnverified, true
		}
	}
	if drifted {
		return DecDrifted, correctDrift
	}
	return DecUnchanged, false
}

// StateReader is what a pass reads of a cluster to decide: an app's set,
// its current revision's verification, and which of its rendered
// objects drifted. KubeState reads a real
// cluster; tests use fakes.
type StateReader interface {
	Set(ctx context.Context, app string) (*inventory.Set, error)
	Verification(ctx context.Context, app string, n int) (revision.Verification, error)
	Drifted(ctx context.Context, set *inventory.Set, app string, objs []*unstructured.Unstructured) ([]string, error)
	// Key is the cluster's digest key (package digest).
	Key(ctx context.Context) (digest.Key, error)
}

// Check finds, for each app of a cluster's render, whether the render
// changed and, if not, which objects drifted.
func Check(ctx context.Context, cluster string, st StateReader, results []render.Result) ClusterCheck {
	out := ClusterCheck{Cluster: cluster}
	key, keyErr := st.Key(ctx)
	for _, res := range results {
		a := AppCheck{App: res.App, Render: digest.Render(res.Objects, key)}
		set, err := st.Set(ctx, res.App)
		if keyErr != nil {
			err = keyErr
		}
		if err == nil {
			a.Exists, a.Revision, a.Current = set.Exists, set.Revision, set.Digest
			if !a.Changed() {
				a.Verification, err = st.Verification(ctx, res.App, set.Revision)
			}
			if !a.Changed() && err == nil {
				a.Drifted, err = st.Drifted(ctx, set, res.App, res.Objects)
			}
		}
		a.Err = err
		out.Apps = append(out.Apps, a)
	}
	return out
}

// KubeState reads a cluster through its client.
type KubeState struct {
	Client      *kube.Client
	Ignore      func(app string) []object.IgnoreRule
	Concurrency int
}

// Set reads the app's ApplySet.
func (k KubeState) Set(ctx context.Context, app string) (*inventory.Set, error) {
	return inventory.Load(ctx, k.Client, app)
}

// Key reads the cluster's digest key, once per client.
func (k KubeState) Key(ctx context.Context) (digest.Key, error) { return digest.KeyOf(ctx, k.Client) }

// Verification reads what the gates said of revision n of app.
func (k KubeState) Verification(ctx context.Context, app string, n int) (revision.Verification, error) {
	return revision.VerificationOf(ctx, k.Client, app, n)
}

// Drifted is what status calls drift (a dry-run apply with force would
// change the object), and the objects that are missing. Objects whose
// live version is the one the last apply of this render got back are
// what it made them, and need no dry run (inventory.Set.Moved): a pass
// over a cluster nobody touched lists metadata, and sends no object.
func (k KubeState) Drifted(ctx context.Context, set *inventory.Set, app string, objs []*unstructured.Unstructured) ([]string, error) {
	key, err := k.Key(ctx)
	if err != nil {
		return nil, err
	}
	if objs = set.Moved(ctx, k.Client, objs, digest.Render(objs, key), version.Get()); len(objs) == 0 {
		return nil, nil
	}
	st, err := status.Run(ctx, k.Client, app, objs, status.Options{Ignore: k.Ignore(app), Concurrency: k.Concurrency, Version: version.Get()})
	if err != nil {
		return nil, err
	}
	var out []string
	var errs []error
	for _, obj := range st.Objects {
		ref := obj.Ref
		if obj.Namespace != "" {
			ref += " -n " + obj.Namespace
		}
		switch {
		case obj.Orphaned:
		case obj.Error != "":
			errs = append(errs, fmt.Errorf("%s: %s", ref, obj.Error))
		case obj.Health == status.NotFound:
			out = append(out, ref+" (missing)")
		case obj.Drifted:
			out = append(out, ref)
		}
	}
	return out, errors.Join(errs...)
}
