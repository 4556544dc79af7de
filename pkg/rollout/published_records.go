package rollout

import (
	"context"
	"fmt"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// publishedReader reads releases of delivered clusters from their
// registries (the history's current revision, counted only when the
// cluster's tag points at its artifact: a publish that did not finish is
// no release), and of the other clusters through Next.
type publishedReader struct {
	Fleet *fleet.Fleet
	Next  Reader
}

// Release reads what cluster runs of app.
func (p publishedReader) Release(ctx context.Context, cluster, app string) (Release, error) {
	c := p.Fleet.Cluster(cluster)
	d := p.Fleet.DeliveryOf(c)
	if d == nil {
		return p.Next.Release(ctx, cluster, app)
	}
	reg, err := publish.For(p.Fleet, d)
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
