package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Delete deletes apps from clusters in the fleet's waves, with their
// budgets but no promotion rule (deleting waits for no verification):
// on each cluster, under each app's lock, the app's objects and its set,
// dependents before what they depend on. Of o, it takes DryRun and
// Parallel. It says everything to sink and returns every cluster's
// outcome in wave order.
func (e *Engine) Delete(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster, apps []rendered.App, o Options, sink Sink) []runner.Outcome {
	defer e.Locks.Release(ctx, e.Log)
	e.begin(&rendered.Set{Fleet: f, Clusters: clusters}, o, sink)
	// Dependents go before what they depend on.
	apps = inDependencyOrder(f, apps, func(a rendered.App) string { return a.Name })
	slices.Reverse(apps)
	return runWaves(ctx, schedule{Waves: Waves(f, clusters), Parallel: o.Parallel}, func(ctx context.Context, name string) error {
		err := e.Connector.Explain(ctx, name, e.deleteFrom(ctx, e.clusters[name], apps))
		e.Locks.releaseCluster(ctx, name, e.Log)
		e.Connector.Idle(name)
		e.emit(EndEvent{Cluster: name, Err: err})
		return err
	})
}

// deleteFrom deletes, in order, the apps that go to cluster c, through
// its target.
func (e *Engine) deleteFrom(ctx context.Context, c *fleet.Cluster, apps []rendered.App) error {
	return e.runOf(c.Name).target.remove(ctx, apps)
}

// remove deletes, in order, the apps that go to the cluster, each under
// its lock: its objects and its set.
func (k *kubeTarget) remove(ctx context.Context, apps []rendered.App) error {
	e, c := k.e, k.run.cluster
	f, dryRun := e.r.Fleet, e.o.DryRun
	e.emit(StageEvent{Cluster: c.Name, Stage: "connecting"})
	client, err := e.Connector.Connect(ctx, f, c)
	if err != nil {
		return err
	}
	ctx, lost, stopped, done := stopOnLostLock(ctx)
	defer done()
	var errs []error
	for _, a := range apps {
		if !a.GoesTo(c) {
			continue
		}
		if !dryRun {
			if err := e.Locks.Acquire(ctx, client, c.Name, a.Name, labelOf(a.Name, true), true, e.emit, lost); err != nil {
				errs = append(errs, fmt.Errorf("app %s: %w", a.Name, err))
				continue
			}
		}
		e.emit(StageEvent{Cluster: c.Name, Stage: "deleting " + a.Name})
		found, err := apply.Delete(ctx, client, f.Metadata.Name, a.Name, dryRun, func(ch apply.Change) { e.emit(objectChanged(c.Name, a.Name, a.Name, ch, dryRun)) })
		if err != nil {
			errs = append(errs, fmt.Errorf("app %s: %w", a.Name, err))
		} else if !found {
			e.emit(OutputEvent{Cluster: c.Name, Line: a.Name + ": nothing to delete (never applied here)"})
		}
	}
	if err := stopped(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// remove deletes apps from a delivered cluster: each app's tag moves
// to the artifact of nothing, and the cluster's Flux prunes what it
// applied (its Kustomization prunes); when the cluster is observed, the
// run waits until Flux applied it. A tag that does not exist is
// nothing to delete.
func (p *registryTarget) remove(ctx context.Context, apps []rendered.App) error {
	e, c, d := p.e, p.run.cluster, p.d
	reg, err := publish.For(e.r.Fleet, d)
	if err != nil {
		return err
	}
	if _, err := p.connect(ctx); err != nil {
		return err
	}
	client := p.client
	var errs []error
	for _, a := range apps {
		if !a.GoesTo(c) {
			continue
		}
		if err := e.unpublishApp(ctx, c, d, reg, client, a.Name); err != nil {
			errs = append(errs, fmt.Errorf("app %s: %w", a.Name, err))
		}
	}
	return errors.Join(errs...)
}

// unpublishApp moves one app's tag of c to the artifact of nothing.
func (e *Engine) unpublishApp(ctx context.Context, c *fleet.Cluster, d *fleet.Delivery, reg publish.Registry, client *kube.Client, app string) error {
	prev, found, err := reg.Resolve(ctx, app, c.Name)
	switch {
	case err != nil:
		return err
	case !found:
		e.emit(OutputEvent{Cluster: c.Name, Line: app + ": nothing to delete (never published here)"})
		return nil
	}
	img, err := publish.Nothing(e.claim(c.Name, app, 0))
	if err != nil {
		return err
	}
	none, err := img.Digest()
	if err != nil {
		return err
	}
	ev := PublishEvent{Type: typePublish, Cluster: c.Name, App: app, Repository: publish.Scheme + reg.Base + "/" + app, Tag: c.Name, Digest: none.String(), Previous: prev.String(), DryRun: e.o.DryRun, Label: app}
	if e.o.DryRun {
		e.emit(ev)
		return nil
	}
	e.emit(StageEvent{Cluster: c.Name, Stage: "deleting " + app})
	if _, err := reg.Push(ctx, app, img); err != nil {
		return err
	}
	if d.Signing != nil {
		s, err := e.signer(d.Signing)
		if err != nil {
			return err
		}
		if err := reg.Sign(ctx, app, none, s, e.claim(c.Name, app, 0)); err != nil {
			return err
		}
	}
	if err := reg.Tag(ctx, app, c.Name, none); err != nil {
		return err
	}
	e.emit(ev)
	if client == nil {
		e.emit(OutputEvent{Cluster: c.Name, Line: app + ": the artifact of nothing published; not observed: its Flux prunes what it applied when it pulls"})
		return nil
	}
	_, err = e.await(ctx, c.Name, d, reg, client, app, none.String())
	return err
}

// DeleteWhat is what delete asks to confirm: "app web, api from c1,
// c2".
func DeleteWhat(apps []rendered.App, clusters []*fleet.Cluster) string {
	names, _ := fleet.Index(clusters)
	appNames := make([]string, len(apps))
	for i, a := range apps {
		appNames[i] = a.Name
	}
	return fmt.Sprintf("app %s from %s", strings.Join(appNames, ", "), strings.Join(names, ", "))
}
