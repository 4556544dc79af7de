package cmd

import (
	"context"
	"fmt"
	"sync"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// soakInterval is how often a soak reads the objects.
var soakInterval = 5 * time.Second

// setSoaks gives every wave whose group has a soak an After hook: after
// the group succeeded, its applied objects are watched that long, and an
// object that is no longer healthy fails its cluster (and so, by the
// group's budget, the rollout; --atomic rolls it back). The last group
// soaks too: nothing follows it, but its verdict, --atomic and the exit
// code wait for the soak.
func (o *ApplyOptions) setSoaks(r *rendered, ws []runner.Wave, p *printer, pr *progress, tally *counts) {
	for i := range ws {
		g := r.fleet.Group(ws[i].Name)
		if g == nil || g.Soak <= 0 {
			continue
		}
		ws[i].After = func(ctx context.Context, succeeded []string) map[string]error {
			return o.soak(ctx, r, succeeded, g.Soak, p, pr, tally)
		}
	}
}

func (o *ApplyOptions) soak(ctx context.Context, r *rendered, clusters []string, d time.Duration, p *printer, pr *progress, tally *counts) map[string]error {
	end := time.Now().Add(d)
	var (
		mu   sync.Mutex
		errs = map[string]error{}
		wg   sync.WaitGroup
	)
	report := func(cluster, state string, left time.Duration, err error) {
		if state == "passed" || state == "failed" {
			tally.gate(cluster, "soak "+state)
		}
		p.emit(rollout.SoakEvent{Type: "soak", Cluster: cluster, State: state, Left: left.Seconds(), Error: errString(err)})
	}
	for _, name := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			report(name, "started", d, nil)
			next := time.Now()
			for {
				pr.stage(name, "soak, %s left", time.Until(end).Round(time.Second))
				if err := o.soakCheck(ctx, r, name); err != nil {
					report(name, "failed", time.Until(end), err)
					o.gatesOf(name).Fail("", reason("soak", err))
					o.settleSoak(ctx, r, name, p, tally)
					err = o.rollBack(ctx, r, name, fmt.Errorf("soak: %w", err), p, pr, tally)
					mu.Lock()
					errs[name] = err
					mu.Unlock()
					return
				}
				if time.Now().After(end) {
					report(name, "passed", 0, nil)
					o.gatesOf(name).Pass("", "soak "+d.String())
					o.settleSoak(ctx, r, name, p, tally)
					return
				}
				next = next.Add(soakInterval)
				select {
				case <-ctx.Done():
					mu.Lock()
					errs[name] = fmt.Errorf("soak interrupted with %s left", time.Until(end).Round(time.Second))
					mu.Unlock()
					return
				case <-time.After(min(time.Until(next), time.Until(end))):
				}
			}
		}()
	}
	wg.Wait()
	return errs
}

// soakCheck reads every object applied to a cluster and returns an error
// for the first one that is not healthy.
func (o *ApplyOptions) soakCheck(ctx context.Context, r *rendered, name string) error {
	c := r.fleet.Cluster(name)
	client, err := o.connect(ctx, r.fleet, c)
	if err != nil {
		return err
	}
	for _, res := range r.of(name) {
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
func (o *ApplyOptions) settleSoak(ctx context.Context, r *rendered, name string, p *printer, tally *counts) {
	client, err := o.connect(ctx, r.fleet, r.fleet.Cluster(name))
	if err != nil {
		return // soakCheck said so
	}
	o.settle(ctx, client, r, name, p, tally)
}
