package rollout

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// dependencyApplied says whether app, a dependency outside the run, was
// ever published to the cluster and, when the cluster is observed,
// whether its Flux applied it and is Ready.
func (p *registryTarget) dependencyApplied(ctx context.Context, app string) error {
	reg, err := publish.For(p.e.r.Fleet, p.d)
	if err != nil {
		return fmt.Errorf("not started: dependency %s: %w", app, err)
	}
	at, found, err := reg.Resolve(ctx, app, p.run.cluster.Name)
	switch {
	case err != nil:
		return fmt.Errorf("not started: dependency %s: %w", app, err)
	case !found:
		return fmt.Errorf("not started: dependency %s was never published to this cluster (select it too: --app %s)", app, app)
	case p.client == nil:
		return nil // its tag is there; whether Flux applied it, nothing here reads
	}
	flux, err := reg.ReadFlux(ctx, p.client.Dynamic, p.d, p.e.r.Fleet.Metadata.Name, app, p.run.cluster.Name)
	switch {
	case err != nil:
		return fmt.Errorf("not started: dependency %s: %w", app, err)
	case len(flux.Tampered) > 0:
		return fmt.Errorf("not started: dependency %s: %w", app, tamperedError(p.run.cluster.Name, flux))
	case !flux.Converged(at.String()):
		return fmt.Errorf("not started: dependency %s: its Flux has not applied %s: %s", app, publish.Short(at.String()), flux.Status())
	}
	return nil
}

func (p *registryTarget) Lock(context.Context, string) error     { return nil }
func (p *registryTarget) Remember(context.Context, string) error { return nil }
func (p *registryTarget) Test(context.Context, App) error        { return nil }

// pauseFresh is how long what was read of delivered clusters' pauses
// holds before a tag moves: a listing of the registry's pause records,
// which says the clusters without one (noPauseRecord), or a cluster's
// own record, read when it has one, or when its app's turn comes later
// than this after the read before. A pause given during a wave
// therefore stops every tag that moves more than pauseFresh after it,
// as pausedNow stops a written-to cluster's next write; and a wave of
// 10,000 unchanged clusters reads a listing every pauseFresh, not
// 10,000 records.
const pauseFresh = 10 * time.Second

// Apply moves the app's tag, then waits for the cluster's Flux; a pause
// of the app, read in the registry first (within pauseFresh), stops it
// before its tag moves (as KubeApps: not in a dry run or a rollback),
// as does a pause that cannot be read: failing closed.
func (p *registryTarget) Apply(ctx context.Context, app App) error {
	if o := p.e.o; !o.DryRun && o.Rollback == nil {
		if time.Since(p.pausesRead) > pauseFresh {
			var err error
			if p.paused, p.pausesRead, err = p.pausesAt(ctx); err != nil {
				return fmt.Errorf("reading the pauses of the fleet: %w", err)
			}
		}
		if held := pause.Find(p.paused, app.Name); held != nil {
			return &pausedError{Cluster: p.run.cluster.Name, Pause: *held}
		}
	}
	return p.publishApp(ctx, resultOf(p.results, app.Name))
}

// pauseList is a listing of a registry's pause records (registry.Paused)
// and when it was taken.
type pauseList struct {
	paused map[string]bool
	at     time.Time
}

// noPauseRecord says whether cluster has no pause record in delivery
// d's registry, as a listing taken at most pauseFresh ago says (one at a
// time: a stale listing is taken again by the first cluster that needs
// it, the others wait for it), and when that listing was taken; false
// when the listing fails: the cluster's record is read then.
func (e *Engine) noPauseRecord(ctx context.Context, d *fleet.Delivery, cluster string) (time.Time, bool) {
	key := d.OCI + " " + strconv.FormatBool(d.Insecure)
	e.pauseListMu.Lock()
	defer e.pauseListMu.Unlock()
	l, ok := e.pauseLists[key]
	if !ok || time.Since(l.at) > pauseFresh {
		at := time.Now()
		paused, err := registry.Of(e.r.Fleet).Paused(ctx, d)
		if err != nil {
			return time.Time{}, false
		}
		l = pauseList{paused: paused, at: at}
		if e.pauseLists == nil {
			e.pauseLists = map[string]pauseList{}
		}
		e.pauseLists[key] = l
	}
	return l.at, !l.paused[cluster]
}
