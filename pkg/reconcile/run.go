package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Pass is one pass of the loop (Loop's pass): render, refuse a protected
// group without --yes, check this shard's clusters (Decide), and apply
// those that need it through apply's rollout, holding its waves to the
// promotion rule over every selected cluster. What renders and what
// applies are the command's: the same as apply's.
type Pass struct {
	Config Config
	Shard  fleet.Shard
	// Yes is --yes: a protected group may be written to.
	Yes     bool
	Clients Clients
	Metrics Metrics
	// Healthy is told whether a pass got as far as the clusters (the
	// health check's failures in a row).
	Healthy func(ok bool)
	// Ended is told how long a pass took and whether it went through.
	Ended func(d time.Duration, ok bool)
	Log   Log
	// Render renders the selection, as apply does; cfg renders more of
	// the fleet for the promotion rule.
	Render func(ctx context.Context) (rendered.Config, *rendered.Set, error)
	// Printer says the checks of clusters (emit) until closed.
	Printer func(clusters []*fleet.Cluster) (emit rollout.Sink, close func())
	// Options are apply's; Run sets Force and Promote.
	Options rollout.Options
	// Apply applies sub with o through apply's rollout; it returns the
	// outcomes and the revisions each cluster's apps were left at.
	Apply func(ctx context.Context, sub *rendered.Set, o rollout.Options) ([]runner.Outcome, func(cluster string) map[string]int, error)
}

// Run does pass n.
func (p Pass) Run(ctx context.Context, n int) error {
	start := time.Now()
	started := fmt.Sprintf("pass %d started at %s", n, start.UTC().Format(time.RFC3339))
	if p.Shard.Sharded() {
		started += fmt.Sprintf(" (shard %s)", p.Shard)
	}
	p.Log.Say(Note(started))
	cfg, r, err := p.Render(ctx)
	if err == nil {
		err = RefuseProtected(r.Fleet, rollout.Waves(r.Fleet, r.Clusters), p.Yes)
	}
	p.Healthy(err == nil)
	if err != nil {
		return p.end(n, start, PassEvent{}, err)
	}
	// A replica checks and applies its shard's clusters; the promotion
	// rule below still sees them all, reading the other shards' release
	// state from the clusters themselves.
	mine := Owned(r, p.Shard)
	emit, closePrinter := p.Printer(mine.Clusters)
	dc := p.Config
	dc.Pass = n
	d := Decide(ctx, dc, mine, p.Clients, p.Metrics, emit)
	closePrinter()
	if len(d.Apply) == 0 {
		return p.end(n, start, d.Pass, nil)
	}
	// The promotion rule sees every selected cluster, those this pass
	// skips too: a later group waits for what they have verified.
	opts := p.Options
	opts.Force = d.Forced
	if opts.Promote, err = rollout.Promoted(ctx, cfg, r, opts); err != nil {
		return p.end(n, start, d.Pass, err)
	}
	sub := r.Only(d.Apply)
	outcomes, revisions, err := p.Apply(ctx, sub, opts)
	Applied(p.Metrics, sub, outcomes, revisions, time.Now())
	return p.end(n, start, d.Pass, err)
}

// end says how pass n, started at start, ended, and returns err.
func (p Pass) end(n int, start time.Time, ev PassEvent, err error) error {
	d := time.Since(start)
	p.Ended(d, err == nil)
	p.Log.Say(ev.Ended(n, d, err))
	return err
}
