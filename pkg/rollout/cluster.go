package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// cluster rolls the run out to one cluster: its apps, its group's
// checks, the verdicts (now, or after the soak) and, with --atomic, the
// restore of a cluster that failed.
func (e *Engine) cluster(ctx context.Context, c *fleet.Cluster) error {
	if err := e.o.Rollback.Failed(c.Name); err != nil {
		return err
	}
	if err := e.r.Restore(c.Name); err != nil {
		return err // nothing is written without the render
	}
	if d := e.delivered(c); d != nil {
		return e.published(ctx, c, d)
	}
	e.emit(StageEvent{Cluster: c.Name, Stage: "connecting"})
	client, err := e.Connector.Connect(ctx, e.r.Fleet, c)
	if err != nil {
		return err
	}
	// A lock lost while held stops the cluster's writes, those in flight
	// too, to the end of its work (its soak, verdicts and --atomic
	// restore): another run may be writing there now. Nothing is
	// recorded or restored then.
	ctx = e.Locks.Writes(ctx, c.Name)
	results := e.r.Of(c.Name)
	skip, err := e.beforeWriting(ctx, c.Name, client, results)
	switch {
	case err != nil:
		return err
	case skip != nil && len(results) == 0:
		return skip
	case e.o.Rollback != nil && len(results) == 0:
		return nil // nothing to roll back here, said
	}
	errs, failed := e.applyApps(ctx, c, client, results)
	if p := pausedIn(errs); p != nil {
		// Paused: nothing more is written there, no gate, verdict or
		// restore; the waves after it are held (pauses).
		return &runner.SkipError{Reason: p.Error()}
	}
	if err := e.clusterGates(ctx, c, results, failed); err != nil {
		errs = append(errs, err)
	}
	if err := lostLock(ctx); err != nil {
		return e.rollBack(ctx, c.Name, err) // says it restored nothing
	}
	if len(errs) > 0 || !e.soaking(c) {
		e.settle(ctx, client, c.Name) // else after the soak
	}
	if len(errs) == 0 && skip != nil {
		return skip // some apps went back, the skipped ones are said
	}
	return e.rollBack(ctx, c.Name, errors.Join(errs...))
}

// beforeWriting does what comes before a cluster's first write: a
// rollback says which apps it skips there (returned as skip); with
// Diff, the diffs. (Plan is checked once the locks are taken:
// clusterRun.Check.)
func (e *Engine) beforeWriting(ctx context.Context, cluster string, client *kube.Client, results []render.Result) (skip, err error) {
	skip = e.skipped(cluster)
	if !e.o.Diff || skip != nil && len(results) == 0 {
		return skip, nil
	}
	for _, res := range results {
		diffs, err := e.diffApp(ctx, client, cluster, res, results, DiffOptions{ForceConflicts: e.o.ForceConflicts, Concurrency: e.o.Concurrency})
		if err != nil {
			return skip, fmt.Errorf("app %s: diff: %w", res.App, err)
		}
		e.emit(DiffEvent{Cluster: cluster, App: res.App, Diffs: diffs})
	}
	return skip, nil
}

// skipped says the apps a rollback skips on a cluster, and returns the
// skip, or nil when it skips none it was asked to roll back (an app with
// nothing to roll back there is said, and no failure).
func (e *Engine) skipped(cluster string) error {
	var reasons []string
	for _, s := range e.o.Rollback.Skipped(cluster) {
		e.emit(skipEvent{Type: "skip", Cluster: cluster, App: s.App, Reason: s.Reason, Nothing: s.Nothing})
		if !s.Nothing {
			reasons = append(reasons, s.Reason)
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return &runner.SkipError{Reason: strings.Join(reasons, "; ")}
}

// kubeApps are a cluster's appOps for this run.
func (e *Engine) kubeApps(c *fleet.Cluster, client *kube.Client, results []render.Result) *KubeApps {
	o, f := e.o, e.r.Fleet
	ops := &KubeApps{
		Fleet: f.Metadata.Name, Cluster: c.Name, Client: client, Results: results, Locks: &e.Locks, Emit: e.emit, Gates: e.gatesOf(c.Name),
		Pauses: o.Rollback == nil,
		Config: applyConfig{DryRun: o.DryRun, ForceConflicts: o.ForceConflicts, Prune: o.Prune || o.Rollback != nil, AllowEmpty: o.AllowEmpty || o.Rollback != nil, KeepTests: o.KeepTests, Timeout: o.Timeout, Concurrency: o.Concurrency},
		Tests:  func(app string) []*unstructured.Unstructured { return e.r.TestsOf(c.Name, app) },
		Ignore: f.IgnoreRules,
		Record: func(ctx context.Context, res render.Result, label string) *apply.Record {
			return e.recorded(e.record(ctx, c.Name, res), c.Name, res.App, label)
		},
		Namespace: func(app string) string {
			rolledBack, _ := o.Rollback.Record(c.Name, app) // where objects without a namespace went then
			return rolledBack.Namespace
		},
	}
	if o.Force != nil {
		ops.Force = func(app string) bool { return o.Force(c.Name, app) }
	}
	return ops
}

// applyApps applies a cluster's apps through clusterRun over KubeApps:
// in dependency order, each under its lock (a lock lost ends ctx, the
// cluster's Writes), and returns the errors and the apps that failed.
// With --atomic it keeps each app's set as it was, for rollBack.
func (e *Engine) applyApps(ctx context.Context, c *fleet.Cluster, client *kube.Client, results []render.Result) ([]error, map[string]bool) {
	ops := e.kubeApps(c, client, results)
	run := clusterRun{
		Cluster: c.Name, Ops: ops, Gates: e.gatesOf(c.Name), Write: !e.o.DryRun, Atomic: e.o.Atomic,
		Done: func(app string, err error) { e.emit(AppEvent{Cluster: c.Name, App: app, Err: err}) },
	}
	if e.o.Plan != nil {
		// Every app is checked before anything is written, under its
		// lock: what was reviewed cannot change before it is applied.
		run.Check = func(ctx context.Context, app string) error {
			e.emit(StageEvent{Cluster: c.Name, Stage: "checking the plan"})
			planned, res := e.o.Plan.Cluster(c.Name).App(app), resultOf(results, app)
			if err := plan.CheckArtifact(planned, res.Source.Artifact); err != nil {
				return err
			}
			return plan.Check(ctx, client, planned, res.Objects, e.o.Concurrency)
		}
	}
	for _, res := range inDependencyOrder(e.r.Fleet, results, func(r render.Result) string { return r.App }) {
		run.Apps = append(run.Apps, e.app(c, res, results))
	}
	errs, failed := run.Run(ctx)
	if e.o.Atomic {
		e.mu.Lock()
		if e.before == nil {
			e.before = map[string][]*inventory.Set{}
		}
		e.before[c.Name] = ops.Before
		e.mu.Unlock()
	}
	return errs, failed
}

// app is how res's app goes on cluster c: its dependencies, whether it
// is waited for and tested, and whether its apply alone verifies it.
func (e *Engine) app(c *fleet.Cluster, res render.Result, results []render.Result) App {
	o, f := e.o, e.r.Fleet
	a := App{Name: res.App}
	if fa := f.App(res.App); fa != nil {
		a.DependsOn = fa.DependsOn
		switch {
		case fa.Tests == "":
		case o.SkipGates:
			a.SkippedTests = "--skip-gates"
		case o.SkipTests:
			a.SkippedTests = "--skip-tests"
		}
	}
	tests := len(e.r.TestsOf(c.Name, res.App)) > 0
	a.Tests = tests && !o.DryRun
	// An app others depend on, or with tests, is waited for, --wait or
	// not.
	switch dependent := dependedOn(f, res.App, results); {
	case o.Wait:
		a.WaitWhy = "--wait"
	case dependent != "":
		a.WaitWhy = "app " + dependent + " depends on it"
	case tests:
		a.WaitWhy = "its tests run once it is"
	}
	a.Wait = a.WaitWhy != ""
	a.Final = !a.Tests && a.SkippedTests == "" && e.gated() && !e.soaking(c) && !checks(f, c)
	return a
}

// clusterGates runs the gates of the cluster's group once its apps went
// through (its checks; the soak comes after the group), or says in its
// gates why they did not run.
func (e *Engine) clusterGates(ctx context.Context, c *fleet.Cluster, results []render.Result, failed map[string]bool) error {
	gates := e.gatesOf(c.Name)
	switch {
	case e.o.SkipGates:
		gates.Unverified("", "gates skipped (--skip-gates)")
	case len(failed) > 0: // clusterRun said so
	case e.verifies() && ctx.Err() == nil:
		cluster := render.ClusterOf(e.r.Fleet, c)
		if len(results) > 0 {
			cluster = results[0].Cluster // with the attributes read from it
		}
		return e.runChecks(ctx, c, cluster, gates)
	}
	return nil
}

// record says how an app's apply to a cluster is recorded in its
// history: the plugin version, the source's git commit, and what made it
// (an apply, or a rollback to an earlier revision).
func (e *Engine) record(ctx context.Context, cluster string, res render.Result) *apply.Record {
	rev, ok := e.o.Rollback.Record(cluster, res.App)
	if !ok {
		rev.Description, rev.Chart = "apply", res.Chart
		e.mu.Lock()
		if e.outside[e.clusters[cluster].Group] {
			rev.Description = "apply outside the deploy windows, --ignore-windows"
		}
		e.mu.Unlock()
		rev.Source = e.source(ctx, res)
		rev.Sensitive = e.r.Mask.In(objectMaps(res.Objects)...)
	}
	return &apply.Record{Revision: rev, Limit: e.o.HistoryLimit}
}

// inDependencyOrder orders items (apps, or their renders: name says
// which app each is) so that every app comes after the apps it depends
// on.
func inDependencyOrder[T any](f *fleet.Fleet, items []T, name func(T) string) []T {
	names := make([]string, len(items))
	byApp := make(map[string]T, len(items))
	for i, it := range items {
		names[i] = name(it)
		byApp[names[i]] = it
	}
	out := make([]T, 0, len(items))
	for _, n := range f.DependencyOrder(names) {
		out = append(out, byApp[n])
	}
	return out
}

// dependedOn is an app of the run that depends on app, or "" for none.
func dependedOn(f *fleet.Fleet, app string, results []render.Result) string {
	for _, r := range results {
		if a := f.App(r.App); a != nil && slices.Contains(a.DependsOn, app) {
			return a.Name
		}
	}
	return ""
}

// objectMaps are objs' contents.
func objectMaps(objs []*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.Object
	}
	return out
}
