package rollout

import (
	"context"
	"fmt"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
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

// pauseFresh is how long a delivered cluster's pauses, once read, hold
// for the tags of its next apps: the cluster's first app reads them
// right before its tag moves, and an app whose turn comes later than
// this reads them again. A pause given while a cluster's apps wait for
// their Flux therefore stops the next tag that moves after it, as
// pausedNow stops a written-to cluster's next write.
const pauseFresh = 10 * time.Second

// Apply moves the app's tag, then waits for the cluster's Flux; a pause
// of the app, read in the registry first (or, within pauseFresh, by the
// cluster's app before it), stops it before its tag moves (as KubeApps:
// not in a dry run or a rollback), as does a pause that cannot be read:
// failing closed.
func (p *registryTarget) Apply(ctx context.Context, app App) error {
	if o := p.e.o; !o.DryRun && o.Rollback == nil {
		if time.Since(p.pausesRead) > pauseFresh {
			var err error
			if p.paused, err = p.pauses(ctx); err != nil {
				return fmt.Errorf("reading the pauses of the fleet: %w", err)
			}
			p.pausesRead = time.Now()
		}
		if held := pause.Find(p.paused, app.Name); held != nil {
			return &pausedError{Cluster: p.run.cluster.Name, Pause: *held}
		}
	}
	return p.publishApp(ctx, resultOf(p.results, app.Name))
}
