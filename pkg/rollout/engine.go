package rollout

import (
	"context"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/memo"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollback"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Connector is how the engine reaches the clusters: the command's
// kubeconfigs and clients, shared with its render.
type Connector interface {
	kube.IdleConnector
	// Explain says a cluster's error the way a user reads it: a cluster
	// that never answered is said to be unreachable.
	Explain(ctx context.Context, cluster string, err error) error
	// Kubeconfig writes a kubeconfig that reaches only c, for its
	// group's checks, and returns how to remove it.
	Kubeconfig(f *fleet.Fleet, c *fleet.Cluster) (path string, remove func(), err error)
}

// Options are what one run does: the flags of apply, rollback and
// reconcile, as data.
type Options struct {
	// DryRun sends every write with dryRun=All: no lock, revision, gate
	// or promotion.
	DryRun bool
	// Diff emits each app's diff (DiffEvent) before its cluster's first
	// write.
	Diff                              bool
	ForceConflicts, Prune, AllowEmpty bool
	// Wait waits for every app's health, not only those others depend
	// on or whose tests follow.
	Wait bool
	// Timeout bounds each cluster's waits.
	Timeout time.Duration
	// Concurrency is the requests in flight per cluster, Parallel the
	// clusters worked on at once.
	Concurrency, Parallel int
	// HistoryLimit keeps that many revisions per app and cluster (0: all).
	HistoryLimit int
	// SkipTests runs no app's tests, SkipGates no test, check or soak
	// and no promotion rule; KeepTests leaves test objects in place.
	SkipTests, SkipGates, KeepTests bool
	// Atomic puts a failed cluster back the way it was before the run.
	Atomic bool
	// Plan, when set, is --plan: a cluster whose render or live objects
	// changed since the plan fails before anything is written to it.
	Plan *plan.Plan
	// Rollback, when set, makes the run a rollback: the run's results
	// are the revisions it chose (rollback.Read), recorded as it says.
	Rollback *rollback.Chosen
	// RetryRolledBack applies a render an automatic rollback took away
	// from a cluster (Release.Undid) again; else the cluster is skipped.
	RetryRolledBack bool
	// NewestFirst runs the waves in reverse, each after the one that
	// follows it in the fleet: an automatic rollback undoes the newest
	// wave first.
	NewestFirst bool
	// Force, when set, says whether an app's apply to a cluster takes
	// fields over (reconcile --correct-drift on a drifted app).
	Force func(cluster, app string) bool
	// Promote are the renders the promotion rule holds the waves to:
	// those of the run's clusters and of the earlier groups' clusters it
	// does not write to; nil: the run's own. Not used by dry runs,
	// rollbacks and SkipGates.
	Promote []render.Result
	// Confirm, when set, is asked before a protected group's wave
	// starts; its error leaves the wave not started.
	Confirm func(group string, clusters []string) error
	// SoakInterval is how often a soak reads the objects (0:
	// defaultSoakInterval).
	SoakInterval time.Duration
	// IgnoreWindows starts writes to a group outside its deploy windows
	// (--ignore-windows); its revisions say so.
	IgnoreWindows bool
	// Now is the clock the deploy windows are read on (nil: time.Now).
	Now func() time.Time
}

// Engine rolls a render out to a fleet, group by group: per cluster the
// apps in dependency order with their phases and tests, the group's
// checks and soak, --atomic restores, locks, revisions and verdicts, the
// promotion rule between groups. Everything it does is said as events
// to one Sink; commands print, count and report them. An Engine runs
// once: a reconcile pass makes a new one.
type Engine struct {
	Connector Connector
	// Locks are the run's locks: set Duration and Timeout before Warm
	// or Run.
	Locks Locks
	// Log gets what is said outside any cluster's events (a lock that
	// could not be released).
	Log io.Writer

	o    Options
	r    *rendered.Set
	emit Sink

	mu sync.Mutex
	// runs are the clusters' runs, by name (runOf): each its target and
	// what the run did there.
	runs map[string]*clusterRun
	// targetOf, when set, is every cluster's target (a test's own, the
	// proof that the lifecycle holds for a third one); nil: the cluster
	// written to, or delivered through its registry.
	targetOf func(run *clusterRun) target
	// clusters are the fleet's, by name (begin): looked up once per
	// cluster and per soak read, not found by a scan each time.
	clusters  map[string]*fleet.Cluster
	sources   memo.Memo[string, revision.Source]
	promotion *promotion
	// waves are the run's (Run), for its Undo.
	waves []runner.Wave
	// soakRuns are the waves' soaks, by wave, and soakedIn the wave
	// whose soak ends each cluster that soaks (soaks, as the run
	// begins): its verdict waits for it.
	soakRuns map[string]soakRun
	soakedIn map[string]string
	// outside are the groups written to outside their deploy windows
	// (--ignore-windows): their revisions say so.
	outside map[string]bool
	// signing is each artifact's signing in the run (signAt): one at a
	// time, and once.
	signing memo.Memo[string, *signedOnce]
	// renders are what the run knows of delivered clusters' renders
	// (noteRenders), by cluster and app: of the set Prepare rendered,
	// prepared, alone.
	renders  memo.Memo[string, renderFacts]
	prepared *rendered.Set
	// pauseLists are the listings of delivered clusters' pause records,
	// by registry (noPauseRecord).
	pauseListMu sync.Mutex
	pauseLists  map[string]pauseList
}

// Run rolls r out as o says, says everything to sink, and returns every
// cluster's outcome in wave order. Its locks are released when it
// returns, those Warm took too.
func (e *Engine) Run(ctx context.Context, r *rendered.Set, o Options, sink Sink) []runner.Outcome {
	defer e.Locks.Release(ctx, e.Log)
	e.begin(r, o, sink)
	ws := Waves(r.Fleet, r.Clusters)
	if o.NewestFirst {
		ws = newestFirst(ws)
	}
	e.waves = ws
	if err := e.publishAll(ctx); err != nil {
		return e.notStarted(ws, err)
	}
	if e.gated() {
		e.promotion = e.promote()
	}
	s := schedule{Waves: ws, Parallel: o.Parallel, Brakes: e.brakes(ws), Emit: e.emit}
	if e.gated() {
		s.Soaks = e.soakRuns
	}
	r.ShedAll(waiting(r.Fleet, r.Clusters, o)) // a set rendered whole (reconcile's)
	return runWaves(ctx, s, func(ctx context.Context, name string) error {
		c := e.clusters[name]
		err := e.Connector.Explain(ctx, name, e.cluster(ctx, c))
		if err != nil || !e.soaking(c) {
			// Nothing more is written there: a soak follows success
			// only, and releases the cluster once over (soaks).
			e.release(ctx, name)
		}
		e.emit(EndEvent{Cluster: name, Err: err})
		return err
	})
}

// forget lets go of a cluster's render once its work is over (a soak's
// after the soak), unless the promotion rule reads it for the waves
// after: at most the clusters in flight, and the groups waited for, hold
// theirs.
func (e *Engine) forget(name string) {
	if e.promotion == nil || !e.promotion.Holds(name) {
		e.r.Forget(name)
	}
}

// Past are the names of cs past the first n: the clusters a diff of cs,
// n at a time, does not start at once (rendered.Config.Shed).
func Past(cs []*fleet.Cluster, n int) map[string]bool {
	out := map[string]bool{}
	for _, c := range cs[min(n, len(cs)):] {
		out[c.Name] = true
	}
	return out
}

// waiting are the clusters of a rollout of f's clusters cs with o whose
// renders may be let go from the render on (rendered.Config.Shed), or
// once the run starts (a set rendered whole): those that do not start at
// once, and whose renders the promotion rule, which
// reads them from the set's Results, does not read (Promotion.Holds, by
// the fleet's groups and batches alone).
func waiting(f *fleet.Fleet, cs []*fleet.Cluster, o Options) map[string]bool {
	out, n := map[string]bool{}, 0
	for _, w := range Waves(f, cs) {
		for _, name := range w.Clusters {
			if n++; n > o.Parallel {
				out[name] = true
			}
		}
	}
	if o.Gated() {
		dropHeld(f, cs, out)
	}
	return out
}

// Unread are the clusters of a read of f's clusters cs, n at a time
// (status), whose renders may be let go from the render on
// (rendered.Config.Shed) and made again for their read: those past the
// first n, but for those whose renders the promotion rule reads from the
// set's Results (Held).
func Unread(f *fleet.Fleet, cs []*fleet.Cluster, n int) map[string]bool {
	out := Past(cs, n)
	dropHeld(f, cs, out)
	return out
}

// dropHeld deletes from names the clusters of f's clusters cs whose
// renders the promotion rule reads (Promotion.Holds, by the fleet's
// groups and batches alone).
func dropHeld(f *fleet.Fleet, cs []*fleet.Cluster, names map[string]bool) {
	results := make([]render.Result, len(cs))
	for i, c := range cs {
		results[i].Cluster.Name = c.Name
	}
	p := promotionOf(f, results)
	maps.DeleteFunc(names, func(name string, _ bool) bool { return p.Holds(name) })
}

// notStarted is the outcome of a run that failed before its first wave:
// every cluster not started, for err.
func (e *Engine) notStarted(ws []runner.Wave, err error) []runner.Outcome {
	var out []runner.Outcome
	for _, w := range ws {
		for _, name := range w.Clusters {
			out = append(out, runner.Outcome{Cluster: name, Wave: w.Name, Batch: w.Batch, State: runner.NotStarted, Err: err})
			e.emit(EndEvent{Cluster: name, Err: err})
		}
	}
	return out
}

// begin readies a run of r as o says, its events to sink.
func (e *Engine) begin(r *rendered.Set, o Options, sink Sink) {
	e.o, e.r, e.emit, e.soakRuns, e.soakedIn = o, r, sink, nil, nil
	if r != e.prepared {
		e.renders.Reset() // another set's
	}
	all := make([]*fleet.Cluster, len(r.Fleet.Clusters))
	for i := range r.Fleet.Clusters {
		all[i] = &r.Fleet.Clusters[i]
	}
	_, e.clusters = fleet.Index(all)
	if o.Gated() {
		e.soakRuns = e.soaks(Waves(r.Fleet, r.Clusters))
	}
}

// connect is the client of the fleet's cluster name.
func (e *Engine) connect(ctx context.Context, name string) (*kube.Client, error) {
	return e.Connector.Connect(ctx, e.r.Fleet, e.clusters[name])
}

// Release releases the locks Warm took, when no Run follows (the render
// failed).
func (e *Engine) Release(ctx context.Context) { e.Locks.Release(ctx, e.Log) }

// Prepare renders cfg for a rollout with o, in one call: while the
// renders are checked the engine warms the first wave (Warm; not for a
// dry run), and once they all rendered it reads what the promotion rule
// holds the waves to (o.Promote, Promoted). A failure releases what Warm
// took; a caller that then does not Run (a refused confirmation) defers
// Release.
func (e *Engine) Prepare(ctx context.Context, cfg rendered.Config, o *Options, yes bool) (*rendered.Set, error) {
	if !o.DryRun {
		cfg.Warm = func(ctx context.Context, req *rendered.Request) { e.Warm(ctx, req, o.Parallel, yes) }
	}
	cfg.Shed = func(cs []*fleet.Cluster) map[string]bool { return waiting(cfg.Fleet, cs, *o) }
	e.renders.Reset()
	delivered := map[string]bool{}
	for i := range cfg.Fleet.Clusters {
		if c := &cfg.Fleet.Clusters[i]; cfg.Fleet.DeliveryOf(c) != nil {
			delivered[c.Name] = true
		}
	}
	cfg.Shedding = func(results []render.Result) {
		if len(results) > 0 && delivered[results[0].Cluster.Name] {
			e.noteRenders(results)
		}
	}
	r, err := rendered.Render(ctx, cfg)
	e.prepared = r
	if err == nil {
		o.Promote, err = Promoted(ctx, cfg, r, *o)
	}
	if err != nil {
		e.Release(ctx)
		return nil, err
	}
	return r, nil
}

// Warm connects to the clusters of the first wave and asks each who the
// user is (for its locks and revisions) once every render succeeded
// (rendered.Config.Warm), in the background while the run starts; unless
// the first group is protected and yes (--yes) is not given, it starts
// taking their locks too (Locks.Early). Nothing is sent before every
// render and decryption of the run succeeded: a run that cannot render
// leaves no trace on a cluster. Nothing else is written; an error is the
// cluster's own connect's, met again when its apply starts. Later waves
// connect when they start: a cluster that is down now may be up by then.
// So do the first wave's clusters past the first parallel (its
// maxParallel): at 1,000 clusters ten at a time, the rest would hold a
// connection and a lock, renewed, for minutes before their turn.
func (e *Engine) Warm(ctx context.Context, req *rendered.Request, parallel int, yes bool) {
	f := req.Fleet
	ws := Waves(f, req.Clusters)
	if len(ws) == 0 {
		return
	}
	g := f.Group(ws[0].Group)
	lockEarly := yes || g == nil || !g.Protected
	for _, name := range ws[0].Clusters[:ws[0].AtOnce(parallel)] {
		c := f.Cluster(name)
		if f.DeliveryOf(c) != nil {
			continue // nothing is locked there, nothing written
		}
		go func() {
			if client, err := e.Connector.Connect(ctx, f, c); err == nil {
				if lockEarly {
					e.Locks.Early(ctx, client, name, rendered.AppsOf(req.Apps, c))
				}
				e.Locks.User(client, name)(ctx)
			}
		}()
	}
}

// recorded makes rec say the revision an app's apply leaves current on
// cluster ("revision 3 recorded (rollback to 1)"), after label when not
// empty, or why none could be recorded (revised).
func (e *Engine) recorded(rec *apply.Record, cluster, app, label string) *apply.Record {
	rec.Forbidden = func(err error) {
		e.revised(RevisionEvent{Type: typeRevision, Cluster: cluster, App: app, Error: err.Error(), Label: label})
	}
	rec.Done = func(rev revision.Revision, isNew bool) {
		e.revised(RevisionEvent{Type: typeRevision, Cluster: cluster, App: app, Revision: rev.Number, New: isNew, Description: rev.Description, Label: label, Digest: rev.Digest, Source: rev.Source.Artifact})
	}
	return rec
}

// revised notes the revision an app's apply left current on a cluster
// (settle and restore ask its run for it) and says it.
func (e *Engine) revised(rev RevisionEvent) {
	if rev.Error == "" {
		e.runOf(rev.Cluster).revised(rev)
	}
	e.emit(rev)
}

// appsByWave lists the apps each wave deploys.
func appsByWave(r *rendered.Set, ws []runner.Wave) map[string][]string {
	out := map[string][]string{}
	for _, w := range ws {
		for _, c := range w.Clusters {
			for _, app := range r.Apps(c) {
				if !slices.Contains(out[w.Name], app) {
					out[w.Name] = append(out[w.Name], app)
				}
			}
		}
	}
	return out
}
