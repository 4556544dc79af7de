package rollout

import (
	"context"
	"errors"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// A target is how a run reaches one cluster: the cluster written to
// (kubeTarget: locks, server-side apply, revisions in the cluster,
// --atomic by re-applying what was there) or delivered through a
// registry (registryTarget: tags, records beside them, its Flux read
// back, --atomic by moving the tags back). A cluster's lifecycle
// (Engine.cluster, then end and release, from the wave or its soak) is
// written once, over this interface; a third way to reach a cluster is
// a third implementation (docs/development.md, "Adding a delivery
// target").
type target interface {
	appOps
	// connect reaches the cluster, when the run reads or writes it, and
	// returns the context the cluster's writes go on in (a lock lost
	// ends it: Locks.Writes).
	connect(ctx context.Context) (context.Context, error)
	// observed reports whether the run reads the cluster once connected:
	// its checks, soak and verdicts see what it runs. An unobserved
	// cluster's releases are unverified (NotObserved).
	observed() bool
	// prepare does what comes before the cluster's first write, given
	// its apps' renders: with Diff, their diffs, said as DiffEvents; for
	// a target without locks, the plan's check (Options.Plan).
	prepare(ctx context.Context, results []render.Result) error
	// planCheck is the plan's check of one app once its lock is taken
	// (appsRun.Check), nil when prepare checked it or there is no plan.
	planCheck(results []render.Result) func(ctx context.Context, app string) error
	// app is how res's app goes on the cluster, among its results.
	app(res render.Result, results []render.Result) App
	// key is the key the cluster's render digests are computed under (a
	// delivered cluster's renders hold no Secret: none).
	key(ctx context.Context) digest.Key
	// verdict records v on the revision of ev's app this run recorded
	// (recorded: there is one), says in ev what became of it, and
	// reports whether ev is to be said.
	verdict(ctx context.Context, ev *verificationEvent, recorded bool, v revision.Verification) bool
	// current reads what the cluster runs of app: the promotion rule's
	// Reader, for the clusters of the run and those upstream of it.
	current(ctx context.Context, app string) (Release, error)
	// pauses reads the pauses recorded for the cluster (kubectl fleet
	// pause): what holds the waves downstream.
	pauses(ctx context.Context) ([]pause.Pause, error)
	// approvals reads the approvals recorded for the cluster's apps, the
	// digest key they are given under (nil: none), and who the cluster
	// says the user is (an approval by the one who publishes does not
	// count where that is the rule).
	approvals(ctx context.Context, apps []string) (found map[string]approval.Approval, key []byte, self string, err error)
	// diff says what an apply of the run would change there, app by app
	// (DiffEvents), without a write: Engine.Diff's verb.
	diff(ctx context.Context, o DiffOptions) (diff.Summary, []plan.App, error)
	// remove deletes apps from the cluster, dependents first: Engine.Delete's
	// verb.
	remove(ctx context.Context, apps []rendered.App) error
	// restore, with --atomic, puts the cluster back the way it was
	// before the run once it failed with err, and says what it did in
	// the error it returns (an *AtomicError); err as it is otherwise.
	restore(ctx context.Context, err error) error
}

// clusterRun is one cluster's part of a run: how the run reaches it
// (its target) and what the run did there, kept here rather than in the
// engine's maps: what its gates said, the revisions it recorded.
type clusterRun struct {
	cluster *fleet.Cluster
	target  target
	gates   gateSet

	// mu guards revisions, and a delivered target's histories read
	// before the waves (readHistory).
	mu sync.Mutex
	// revisions are the revisions this run recorded, by app (revised).
	revisions map[string]RevisionEvent
}

// revised notes the revision an app's apply left current.
func (c *clusterRun) revised(rev RevisionEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.revisions == nil {
		c.revisions = map[string]RevisionEvent{}
	}
	c.revisions[rev.App] = rev
}

// revision is the revision this run recorded for app, and whether it
// recorded one.
func (c *clusterRun) revision(app string) (RevisionEvent, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rev, ok := c.revisions[app]
	return rev, ok
}

// runOf is the run of the fleet's cluster name, made on first use.
func (e *Engine) runOf(name string) *clusterRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	if run, ok := e.runs[name]; ok {
		return run
	}
	if e.runs == nil {
		e.runs = map[string]*clusterRun{}
	}
	c := e.clusters[name]
	run := &clusterRun{cluster: c}
	switch d := e.r.Fleet.DeliveryOf(c); {
	case e.targetOf != nil:
		run.target = e.targetOf(run) // a test's
	case d != nil:
		run.target = &registryTarget{e: e, run: run, d: d, moved: map[string]v1.Hash{}}
	default:
		run.target = &kubeTarget{e: e, run: run}
	}
	e.runs[name] = run
	return run
}

// targetReader is the promotion rule's Reader over the clusters'
// targets.
type targetReader struct{ e *Engine }

// Release reads what cluster runs of app.
func (r targetReader) Release(ctx context.Context, cluster, app string) (Release, error) {
	return r.e.runOf(cluster).target.current(ctx, app)
}

// cluster rolls the run out to one cluster through its target: its
// apps in dependency order, its group's checks, then, unless its group
// soaks first, its end (verdicts, and with --atomic the restore of a
// cluster that failed).
func (e *Engine) cluster(ctx context.Context, c *fleet.Cluster) error {
	if err := e.o.Rollback.Failed(c.Name); err != nil {
		return err
	}
	run := e.runOf(c.Name)
	t := run.target
	var results []render.Result
	if p, ok := t.(*registryTarget); ok && !p.needsObjects() {
		results = e.r.Kept(c.Name) // published already (publishAll)
	} else {
		if err := e.r.Rerender(c.Name); err != nil {
			return err // nothing is written without the render
		}
		results = e.r.Of(c.Name)
	}
	ctx, err := t.connect(ctx)
	if err != nil {
		return err
	}
	skip := e.skipped(c.Name)
	switch {
	case skip != nil && len(results) == 0:
		return skip
	case e.o.Rollback != nil && len(results) == 0:
		return nil // nothing to roll back here, said
	}
	if err := e.undone(ctx, t, results); err != nil {
		return err
	}
	if err := t.prepare(ctx, results); err != nil {
		return err
	}
	errs, failed := e.applyApps(ctx, run, results)
	if p := pausedIn(errs); p != nil {
		// Paused: nothing more is written there, no gate, verdict or
		// restore; the waves after it are held (pauses).
		return &runner.SkipError{Reason: p.Error()}
	}
	if err := e.clusterGates(ctx, run, results, failed); err != nil {
		errs = append(errs, err)
	}
	if err := lostLock(ctx); err != nil {
		return t.restore(ctx, err) // says it restored nothing
	}
	if len(errs) == 0 && e.soaking(c) {
		return skip // its soak ends it (soaks)
	}
	if err := e.end(ctx, c.Name, errors.Join(errs...)); err != nil {
		return err
	}
	return skip // some apps went back, the skipped ones are said
}

// applyApps applies a cluster's apps through appsRun over its target:
// in dependency order, each under its lock (a lock lost ends ctx, the
// cluster's Writes), and returns the errors and the apps that failed.
func (e *Engine) applyApps(ctx context.Context, run *clusterRun, results []render.Result) ([]error, map[string]bool) {
	name := run.cluster.Name
	apps := appsRun{
		Cluster: name, Ops: run.target, Gates: &run.gates, Write: !e.o.DryRun, Atomic: e.o.Atomic,
		Check: run.target.planCheck(results),
		Done:  func(app string, err error) { e.emit(AppEvent{Cluster: name, App: app, Err: err}) },
	}
	for _, res := range inDependencyOrder(e.r.Fleet, results, func(r render.Result) string { return r.App }) {
		apps.Apps = append(apps.Apps, run.target.app(res, results))
	}
	return apps.Run(ctx)
}

// clusterGates runs the gates of the cluster's group once its apps went
// through (its checks; the soak comes after the group), or says in its
// gates why they did not run.
func (e *Engine) clusterGates(ctx context.Context, run *clusterRun, results []render.Result, failed map[string]bool) error {
	c, gates := run.cluster, &run.gates
	switch {
	case len(failed) > 0: // appsRun said so
	case !run.target.observed():
		if !e.o.DryRun {
			gates.Unverified("", NotObserved+": no context reads cluster "+c.Name)
		}
	case e.o.SkipGates:
		gates.Unverified("", "gates skipped (--skip-gates)")
	case e.verifies() && ctx.Err() == nil:
		return e.runChecks(ctx, c, render.ClusterIn(e.r.Fleet, c, results), gates)
	}
	return nil
}

// end ends a cluster's work once its gates are over (at once, or after
// its group's soak): the verdicts recorded on its revisions (settle),
// then, with --atomic, the restore of a cluster that failed with err.
// It returns the cluster's error, which says what the restore did.
func (e *Engine) end(ctx context.Context, cluster string, err error) error {
	e.settle(ctx, cluster)
	return e.runOf(cluster).target.restore(ctx, err)
}

// release lets go of a cluster once nothing more is written there (at
// once, or after its group's soak): its locks, its idle connections
// and its render.
func (e *Engine) release(ctx context.Context, cluster string) {
	e.Locks.releaseCluster(ctx, cluster, e.Log)
	e.Connector.Idle(cluster)
	e.forget(cluster)
}
