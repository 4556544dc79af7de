package rollout

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// publishedApps are a delivered cluster's appOps: an app's "apply"
// moves its tag and, when the cluster is observed, waits for its Flux.
// Nothing takes a lock on the cluster (nothing writes to it); --atomic
// remembers each tag as it moves (movedOf).
type publishedApps struct {
	e       *Engine
	cluster *fleet.Cluster
	d       *fleet.Delivery
	client  *kube.Client // nil: not observed, or a dry run
	results []render.Result
	moved   map[string]v1.Hash
	// by is who publishes, as the history records it: read once, when
	// the first revision is (revision.Publisher).
	by func() string
}

// dependencyApplied says whether app, a dependency outside the run, was
// ever published to the cluster and, when the cluster is observed,
// whether its Flux applied it and is Ready.
func (p *publishedApps) dependencyApplied(ctx context.Context, app string) error {
	reg, err := publish.For(p.e.r.Fleet, p.d)
	if err != nil {
		return fmt.Errorf("not started: dependency %s: %w", app, err)
	}
	at, found, err := reg.Resolve(ctx, app, p.cluster.Name)
	switch {
	case err != nil:
		return fmt.Errorf("not started: dependency %s: %w", app, err)
	case !found:
		return fmt.Errorf("not started: dependency %s was never published to this cluster (select it too: --app %s)", app, app)
	case p.client == nil:
		return nil // its tag is there; whether Flux applied it, nothing here reads
	}
	flux, err := reg.ReadFlux(ctx, p.client.Dynamic, p.d, p.e.r.Fleet.Metadata.Name, app, p.cluster.Name)
	switch {
	case err != nil:
		return fmt.Errorf("not started: dependency %s: %w", app, err)
	case len(flux.Tampered) > 0:
		return fmt.Errorf("not started: dependency %s: %w", app, tamperedError(p.cluster.Name, flux))
	case !flux.Converged(at.String()):
		return fmt.Errorf("not started: dependency %s: its Flux has not applied %s: %s", app, publish.Short(at.String()), flux.Status())
	}
	return nil
}

func (p *publishedApps) Lock(context.Context, string) error     { return nil }
func (p *publishedApps) Remember(context.Context, string) error { return nil }
func (p *publishedApps) Test(context.Context, App) error        { return nil }

// Apply moves the app's tag, then waits for the cluster's Flux; a pause
// of the app, read in the registry first, stops it before its tag moves
// (as KubeApps: not in a dry run or a rollback), as does a pause that
// cannot be read: failing closed.
func (p *publishedApps) Apply(ctx context.Context, app App) error {
	if o := p.e.o; !o.DryRun && o.Rollback == nil {
		pauses, err := pause.ReadPublished(ctx, p.e.r.Fleet, p.d, p.cluster.Name)
		if err != nil {
			return fmt.Errorf("reading the pauses of the fleet: %w", err)
		}
		if held := pause.Find(pauses, app.Name); held != nil {
			return &pausedError{Cluster: p.cluster.Name, Pause: *held}
		}
	}
	return p.e.publishApp(ctx, p.cluster, p.d, p.client, resultOf(p.results, app.Name), p.moved, p.by)
}
