package rollout

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

// PublishedReader reads releases of delivered clusters from their
// registries (the history's current revision, counted only when the
// cluster's tag points at its artifact: a publish that did not finish is
// no release), and of the other clusters through Next.
type PublishedReader struct {
	Fleet *fleet.Fleet
	Next  Reader
}

// Release reads what cluster runs of app.
func (p PublishedReader) Release(ctx context.Context, cluster, app string) (Release, error) {
	c := p.Fleet.Cluster(cluster)
	d := p.Fleet.DeliveryOf(c)
	if d == nil {
		return p.Next.Release(ctx, cluster, app)
	}
	reg, err := publish.For(d)
	if err != nil {
		return Release{}, err
	}
	return PublishedRelease(ctx, reg, cluster, app)
}

// PublishedRelease is what the registry says a delivered cluster runs
// of app.
func PublishedRelease(ctx context.Context, reg publish.Registry, cluster, app string) (Release, error) {
	h, err := reg.History(ctx, app, cluster)
	if err != nil {
		return Release{}, err
	}
	cur, ok := h.Record()
	if !ok {
		return Release{}, nil
	}
	at, found, err := reg.Resolve(ctx, app, cluster)
	switch {
	case err != nil:
		return Release{}, err
	case !found || at.String() != cur.Artifact:
		return Release{Exists: true, Verification: revision.Verification{State: revision.Unverified, Reason: fmt.Sprintf("its tag is not at revision %d's artifact", cur.Number)}}, nil
	}
	return Release{Exists: true, Revision: cur.Number, Digest: cur.Digest, Verification: cur.Verification}, nil
}

// PublishedState is a reconcile pass's StateReader of a delivered
// cluster, read from its registry: an app's current revision counts only
// when the tag points at its artifact (PublishedRelease), else the pass
// publishes it again. Its renders' digests have no key (nothing secret is
// published). Drift is none: the cluster's Flux corrects it every
// interval.
type PublishedState struct {
	Registry publish.Registry
	Cluster  string
	read     map[string]Release
}

// Key is none.
func (p *PublishedState) Key(context.Context) (digest.Key, error) { return nil, nil }

// Set is what the registry says the cluster runs of app.
func (p *PublishedState) Set(ctx context.Context, app string) (*inventory.Set, error) {
	r, err := PublishedRelease(ctx, p.Registry, p.Cluster, app)
	if err != nil {
		return nil, err
	}
	if p.read == nil {
		p.read = map[string]Release{}
	}
	p.read[app] = r
	return &inventory.Set{App: app, Exists: r.Exists, Revision: r.Revision, Digest: r.Digest}, nil
}

// Verification is what the gates said of the current revision, read by
// Set.
func (p *PublishedState) Verification(_ context.Context, app string, n int) (revision.Verification, error) {
	if r := p.read[app]; r.Revision == n {
		return r.Verification, nil
	}
	return revision.Verification{}, fmt.Errorf("revision %d of app %s is not the current one", n, app)
}

// Drifted is none.
func (p *PublishedState) Drifted(context.Context, *inventory.Set, string, []*unstructured.Unstructured) ([]string, error) {
	return nil, nil
}
