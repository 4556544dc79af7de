package rollout

import (
	"context"
	"fmt"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// current reads what the registry says the cluster runs of app: the
// history's current revision, counted only when the cluster's tag points
// at its artifact (a publish that did not finish is no release).
func (p *registryTarget) current(ctx context.Context, app string) (Release, error) {
	reg, err := publish.For(p.e.r.Fleet, p.d)
	if err != nil {
		return Release{}, err
	}
	return PublishedRelease(ctx, reg, p.run.cluster.Name, app)
}

// pauses reads the fleet's pause record beside the cluster's tags.
func (p *registryTarget) pauses(ctx context.Context) ([]pause.Pause, error) {
	return registry.Of(p.e.r.Fleet).Pauses(ctx, p.run.cluster)
}

// approvals reads the approval records of apps beside the cluster's
// tags: no digest key (a delivered cluster's renders hold no Secret),
// and who its read-only context authenticates, if it has one.
func (p *registryTarget) approvals(ctx context.Context, apps []string) (map[string]approval.Approval, []byte, string, error) {
	found, err := registry.Of(p.e.r.Fleet).Approvals(ctx, p.run.cluster, apps)
	if err != nil {
		return nil, nil, "", err
	}
	return found, nil, p.e.deliveredUser(ctx, p.run.cluster), nil
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
