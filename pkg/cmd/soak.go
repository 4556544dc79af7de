package cmd

import (
	"context"
	"fmt"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output/progress"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// soakInterval is how often a soak reads the objects (tests shorten it).
var soakInterval = rollout.DefaultSoakInterval

// soaks are the soaks of the waves whose group has one: after the group
// succeeded, its applied objects are watched that long (rollout.Soak),
// and an object that is no longer healthy fails its cluster (and so, by
// the group's budget, the rollout; --atomic rolls it back). The last
// group soaks too: nothing follows it, but its verdict, --atomic and the
// exit code wait for the soak. A cluster's locks cover its soak, verdict
// and restore (its Writes, rollout.Locks.Writes), and go once its soak is
// over: a lock lost meanwhile stops the soak, and nothing is recorded or
// restored there.
func (o *ApplyOptions) soaks(r *rendered.Set, ws []runner.Wave, p *printer, pr *progress.Display, tally *summary.Tally) map[string]rollout.Soak {
	out := map[string]rollout.Soak{}
	for i := range ws {
		g := r.Fleet.Group(ws[i].Name)
		if g == nil || g.Soak <= 0 {
			continue
		}
		s := rollout.Soak{
			Duration: g.Soak, Interval: soakInterval,
			Health: func(ctx context.Context, cluster string) error { return o.soakCheck(ctx, r, cluster) },
			Gates:  o.gatesOf,
			Emit:   o.events.emit,
			Stage:  func(cluster, stage string) { pr.Stage(cluster, "%s", stage) },
			Ended: func(ctx context.Context, cluster string, err error) error {
				o.settleSoak(ctx, r, cluster, p, tally)
				return o.rollBack(ctx, r, cluster, err, p, pr, tally)
			},
			Writes: o.locks.Writes,
			Release: func(ctx context.Context, cluster string) {
				o.locks.ReleaseCluster(ctx, cluster, o.ErrOut)
				o.idle(cluster)
			},
		}
		out[ws[i].Name] = s
	}
	return out
}

// soakCheck reads every object applied to a cluster and returns an error
// for the first one that is not healthy.
func (o *ApplyOptions) soakCheck(ctx context.Context, r *rendered.Set, name string) error {
	c := r.Fleet.Cluster(name)
	client, err := o.connect(ctx, r.Fleet, c)
	if err != nil {
		return err
	}
	for _, res := range r.Of(name) {
		for _, obj := range res.Objects {
			obj = obj.DeepCopy()
			h, err := apply.Health(context.WithoutCancel(ctx), client, obj)
			switch {
			case apierrors.IsNotFound(err):
				return fmt.Errorf("%s is gone", object.Ref(obj))
			case err != nil:
				return fmt.Errorf("%s: %w", object.Ref(obj), err)
			case h.Status != kstatus.CurrentStatus:
				return fmt.Errorf("%s is %s: %s", object.Ref(obj), h.Status, h.Message)
			}
		}
	}
	return nil
}

// settleSoak records the verdict of a cluster whose soak ended.
func (o *ApplyOptions) settleSoak(ctx context.Context, r *rendered.Set, name string, p *printer, tally *summary.Tally) {
	client, err := o.connect(ctx, r.Fleet, r.Fleet.Cluster(name))
	if err != nil {
		return // soakCheck said so
	}
	o.settle(ctx, client, r, name, p, tally)
}
