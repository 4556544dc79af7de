package rollout

import (
	"context"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// current reads what the registry says the cluster runs of app: the
// history's current revision, counted only when the cluster's tag points
// at its artifact (a publish that did not finish is no release).
func (p *registryTarget) current(ctx context.Context, app string) (Release, error) {
	cur, err := registry.Of(p.e.r.Fleet).Current(ctx, p.run.cluster, app)
	return Release{Exists: cur.Exists, Revision: cur.Revision, Digest: cur.Digest, Verification: cur.Verification, Undid: cur.Undid}, err
}

// pauses reads the fleet's pause record beside the cluster's tags
// (pausesAt).
func (p *registryTarget) pauses(ctx context.Context) ([]pause.Pause, error) {
	pauses, _, err := p.pausesAt(ctx)
	return pauses, err
}

// pausesAt reads the fleet's pause record beside the cluster's tags,
// unless a listing of the pause records taken at most pauseFresh ago says
// the cluster has none (noPauseRecord), and says when what it returns
// was read.
func (p *registryTarget) pausesAt(ctx context.Context) ([]pause.Pause, time.Time, error) {
	if at, none := p.e.noPauseRecord(ctx, p.d, p.run.cluster.Name); none {
		return nil, at, nil
	}
	at := time.Now()
	pauses, err := registry.Of(p.e.r.Fleet).Pauses(ctx, p.run.cluster)
	return pauses, at, err
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
