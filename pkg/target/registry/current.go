package registry

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Current is what a delivered cluster runs of an app, as its registry
// says: the history's current revision (Revision 0: none recorded).
type Current struct {
	Exists       bool
	Revision     int
	Digest       string
	Verification revision.Verification
	// Undid is the render an automatic rollback took away, when the
	// current revision is one (revision.Revision.Undid).
	Undid string
}

// Current reads what delivered cluster c runs of app.
func (r Fleet) Current(ctx context.Context, c *fleet.Cluster, app string) (Current, error) {
	reg, err := r.registry(c)
	if err != nil {
		return Current{}, err
	}
	return CurrentOf(ctx, reg, c.Name, app)
}

// CurrentOf is what reg says cluster runs of app: the history's current
// revision, counted only when the cluster's tag points at its artifact
// (a publish that did not finish is no release).
func CurrentOf(ctx context.Context, reg publish.Registry, cluster, app string) (Current, error) {
	h, err := reg.History(ctx, app, cluster)
	if err != nil {
		return Current{}, err
	}
	cur, ok := h.Record()
	if !ok {
		return Current{}, nil
	}
	at, found, err := reg.Resolve(ctx, app, cluster)
	switch {
	case err != nil:
		return Current{}, err
	case !found || at.String() != cur.Artifact:
		return Current{Exists: true, Verification: revision.Verification{State: revision.Unverified, Reason: fmt.Sprintf("its tag is not at revision %d's artifact", cur.Number)}}, nil
	}
	return Current{Exists: true, Revision: cur.Number, Digest: cur.Digest, Verification: cur.Verification, Undid: cur.Undid}, nil
}

// State is a reconcile pass's StateReader of a delivered cluster, read
// from its registry: an app's current revision counts only when the tag
// points at its artifact (Current), else the pass publishes it again.
// Its renders' digests have no key (nothing secret is published). Drift
// is none: the cluster's Flux corrects it every interval.
type State struct {
	registry publish.Registry
	cluster  string
	read     map[string]Current
}

// State is delivered cluster c's State, for a reconcile pass.
func (r Fleet) State(c *fleet.Cluster) (*State, error) {
	reg, err := r.registry(c)
	return &State{registry: reg, cluster: c.Name}, err
}

// Key is none.
func (p *State) Key(context.Context) (digest.Key, error) { return nil, nil }

// Set is what the registry says the cluster runs of app.
func (p *State) Set(ctx context.Context, app string) (*inventory.Set, error) {
	r, err := CurrentOf(ctx, p.registry, p.cluster, app)
	if err != nil {
		return nil, err
	}
	if p.read == nil {
		p.read = map[string]Current{}
	}
	p.read[app] = r
	return &inventory.Set{App: app, Exists: r.Exists, Revision: r.Revision, Digest: r.Digest}, nil
}

// Verification is what the gates said of the current revision, read by
// Set.
func (p *State) Verification(_ context.Context, app string, n int) (revision.Verification, error) {
	if r := p.read[app]; r.Revision == n {
		return r.Verification, nil
	}
	return revision.Verification{}, fmt.Errorf("revision %d of app %s is not the current one", n, app)
}

// Drifted is none.
func (p *State) Drifted(context.Context, *inventory.Set, string, []*unstructured.Unstructured) ([]string, error) {
	return nil, nil
}
