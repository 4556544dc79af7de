package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/memo"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output/progress"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/report"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/version"
)

// ApplyFlags are the values of a rollout's flags. They are registered
// once (addRolloutFlags, addApplyFlags) for apply, rollback and reconcile,
// and a reconcile pass copies them whole: a flag added here reaches every
// pass without anyone copying it by hand.
type ApplyFlags struct {
	Diff           bool
	ForceConflicts bool
	Prune          bool
	AllowEmpty     bool
	Wait           bool
	Timeout        time.Duration
	Concurrency    int
	SkipTests      bool
	KeepTests      bool
	// SkipGates runs no test, check or soak and promotes whatever the
	// earlier groups run; the revisions are recorded as unverified.
	SkipGates bool
	// HistoryLimit keeps the newest revisions of each app per cluster.
	HistoryLimit int
	// Atomic rolls a failed cluster back to what it had before.
	Atomic bool
	// PlanFile is --plan: apply only what this plan (diff --out) saw.
	PlanFile string
	// LockDuration is --lock-duration, LockTimeout --lock-timeout.
	LockDuration, LockTimeout time.Duration
	// Report is --report, ReportFormat --report-format.
	Report, ReportFormat string
}

// ApplyOptions are the options of "kubectl fleet apply".
type ApplyOptions struct {
	*GlobalOptions
	SelectOptions
	SourceOptions
	WriteOptions
	ApplyFlags
	// locks are the locks taken; ReportOptions collects the report.
	locks rollout.Locks
	ReportOptions
	plan *plan.Plan

	// rollback, when set, makes the run a rollback: the objects come from
	// revisions stored in the clusters (RollbackOptions).
	rollback *rollbackPlan
	// sources describes each source path's git state once per run.
	sources memo.Memo[string, revision.Source]
	// before holds, with --atomic, each cluster's sets of the apps as
	// they were before this apply, for a rollback after a failed soak.
	mu     sync.Mutex
	before map[string][]*inventory.Set
	// gates are what each cluster's gates said in this run, and
	// promotion the rule that holds a wave back until the earlier groups
	// verified its release (nil: no rule, as in a dry run).
	gates     map[string]*rollout.Gates
	promotion *rollout.Promotion

	// Set by reconcile, which runs apply's rollout pass after pass:
	// forceApp says whether an app's apply to a cluster takes fields over
	// (--correct-drift on a drifted app); onChange is told every object's
	// change; outcomes are the clusters' outcomes of the last rollout, and
	// tally what it counted.
	forceApp func(cluster, app string) bool
	onChange func(cluster, app string, action apply.Action)
	// events are the consumers of this run's events.
	events   consumers
	outcomes []runner.Outcome
	tally    *summary.Tally
}

// NewCmdApply returns the apply command.
func NewCmdApply(g *GlobalOptions) *cobra.Command {
	o := &ApplyOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Apply to the selected clusters, group by group",
		Long: `Render every selected cluster (any render error stops everything before any
write), then roll out group by group in fleet-file order: inside a group,
maxParallel clusters at once (capped by --parallel); past the group's
maxFailures no further cluster or group is started.

On each cluster: the identity pins (server, uid) are verified before the
first write; objects are server-side applied with field manager
kubectl-fleet, CRDs and Namespaces first (waiting until CRDs are
established), then the rest concurrently; every object is recorded in the
app's ApplySet (configmap kubectl-fleet/fleet-<app>), so --prune deletes
exactly the members no longer rendered, and never on an empty render
without --allow-empty. --wait waits until the objects are healthy by kstatus
rules (Deployments available, Jobs complete, ...).

Writing to a group marked protected asks for confirmation on a terminal;
--yes skips it, and without a terminal --yes is required.

Exit codes:
  0    every selected cluster applied
  1    a cluster failed or was not started, or an error
  130  interrupted (Ctrl-C): running requests finish, nothing new starts`,
		Example: `  kubectl fleet apply -k overlays --group staging
  kubectl fleet apply --prune --wait --timeout 5m
  kubectl fleet apply --dry-run=server --diff -c prod-eu`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.SourceOptions.addFlags(cmd, g)
	o.WriteOptions.addFlags(cmd, "apply", "do not ask before writing to protected groups", "clusters applied at once at most (a group's maxParallel may lower it)")
	g.addSkipUnreachableFlag(cmd)
	o.addRolloutFlags(cmd)
	o.addApplyFlags(cmd)
	cmd.Flags().StringVar(&o.PlanFile, "plan", "", "apply only if, per cluster, the render and the live objects are still what this plan (diff --out) saw; else that cluster fails, nothing written to it")
	return cmd
}

// addRolloutFlags adds the flags apply, reconcile and rollback share.
func (f *ApplyFlags) addRolloutFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.Diff, "diff", false, "print each cluster's diff before writing to it")
	cmd.Flags().BoolVar(&f.ForceConflicts, "force-conflicts", false, "take fields over from other field managers")
	cmd.Flags().BoolVar(&f.Wait, "wait", false, "wait until the objects are healthy; a cluster that is not within --timeout fails")
	cmd.Flags().DurationVar(&f.Timeout, "timeout", 5*time.Minute, "how long --wait (and waiting for CRDs) may take per cluster")
	cmd.Flags().IntVar(&f.Concurrency, "concurrency", 32, "requests in flight per cluster")
	cmd.Flags().IntVar(&f.HistoryLimit, "history-limit", revision.DefaultLimit, "revisions kept per app and cluster (0: all); older ones are deleted")
	addLockFlags(cmd, &f.LockDuration, &f.LockTimeout)
	addReportFlags(cmd, &f.Report, &f.ReportFormat)
}

// addApplyFlags adds the flags of a rollout of renders, which apply and
// reconcile share.
func (f *ApplyFlags) addApplyFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.Prune, "prune", false, "delete the app's objects that are no longer rendered")
	cmd.Flags().BoolVar(&f.AllowEmpty, "allow-empty", false, "let --prune act on an empty render (deletes everything of the app)")
	cmd.Flags().BoolVar(&f.SkipTests, "skip-tests", false, "do not run the apps' tests (apps[].tests); the summary says so, and the revisions are recorded as unverified")
	cmd.Flags().BoolVar(&f.SkipGates, "skip-gates", false, "for emergencies: run no test, check or soak, and do not wait for the earlier groups to have verified the release; the revisions are recorded as unverified")
	cmd.Flags().BoolVar(&f.KeepTests, "keep-tests", false, "leave the test objects in place after a run, for debugging")
	cmd.Flags().BoolVar(&f.Atomic, "atomic", false, "roll a cluster that fails back to the revisions it had before this apply (objects this apply created are removed)")
}

// runState readies the state a run keeps beside the flags: the locks'
// durations and the report's collector.
func (o *ApplyOptions) runState() error {
	o.locks.Duration, o.locks.Timeout = o.LockDuration, o.LockTimeout
	o.ReportOptions.Report, o.ReportOptions.ReportFormat = o.ApplyFlags.Report, o.ApplyFlags.ReportFormat
	if err := o.ReportOptions.validate(); err != nil {
		return err
	}
	return validateLocks(&o.locks)
}

// Validate checks the flags.
func (o *ApplyOptions) Validate() error {
	if err := o.WriteOptions.validate(); err != nil {
		return err
	}
	switch {
	case o.AllowEmpty && !o.Prune:
		return fmt.Errorf("--allow-empty only works with --prune")
	case o.Concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1")
	case o.HistoryLimit < 0:
		return fmt.Errorf("--history-limit must be 0 (keep all) or more")
	}
	if err := o.runState(); err != nil {
		return err
	}
	return o.SourceOptions.validate()
}

// Run applies.
func (o *ApplyOptions) Run(ctx context.Context) error {
	o.SourceOptions.withTests = !o.SkipTests && !o.SkipGates
	if !o.dryRun() {
		o.SourceOptions.warm = o.warm
		defer o.locks.Release(ctx, o.ErrOut) // the early ones, when the render fails
	}
	r, err := o.render(ctx, o.Selection, &o.SourceOptions, true)
	if err != nil {
		return err
	}
	if o.PlanFile != "" {
		if o.plan, err = plan.Load(o.PlanFile); err != nil {
			return err
		}
		apps := map[string][]string{}
		for _, c := range r.Clusters {
			apps[c.Name] = []string{}
			for _, res := range r.Of(c.Name) {
				apps[c.Name] = append(apps[c.Name], res.App)
			}
		}
		if err := o.plan.Agree(apps); err != nil {
			return err
		}
	}
	if err := o.promote(ctx, r); err != nil {
		return err
	}
	return o.rollout(ctx, r, "apply")
}

// warm connects to the clusters of the first wave and asks each who the
// user is (for its locks and revisions) while the sources render, so that
// the TLS handshake and that read overlap the render instead of
// following it; unless a protected group's confirmation comes first, it
// starts taking their locks too (rollout.Locks.Early), released unused
// if the render fails. Nothing else is written; an error is the
// cluster's own connect's, met again when its apply starts. Later waves
// connect when they start: a cluster that is down now may be up by then.
// So do the first wave's clusters past the first --parallel (its
// maxParallel): at 1,000 clusters ten at a time, the rest would hold a
// connection and a lock, renewed, for minutes before their turn.
func (o *ApplyOptions) warm(ctx context.Context, pl *rendered.Request) {
	f, clusters := pl.Fleet, pl.Clusters
	ws := waves(f, clusters)
	if len(ws) == 0 {
		return
	}
	g := f.Group(ws[0].Name)
	lockEarly := o.Yes || g == nil || !g.Protected
	_, byName := index(clusters)
	for _, name := range ws[0].Clusters[:ws[0].AtOnce(o.Parallel)] {
		go func() {
			if client, err := o.connect(ctx, f, byName[name]); err == nil {
				if lockEarly {
					o.locks.Early(ctx, client, name, rendered.AppsOf(pl.Apps, byName[name]))
				}
				o.locks.User(client, name)(ctx)
			}
		}()
	}
}

// rollout writes r to its clusters group by group: apply's rollout, and
// rollback's.
func (o *ApplyOptions) rollout(ctx context.Context, r *rendered.Set, verb string) error {
	defer o.locks.Release(ctx, o.ErrOut)
	dryRun := o.dryRun()
	ws := waves(r.Fleet, r.Clusters)
	if err := o.confirmations(ctx, r.Fleet, ws, dryRun); err != nil {
		return err
	}
	p := o.newPrinter(r.Clusters, o.Output == "json")
	pr := o.newProgress(r.Clusters, p.json)
	var tally summary.Tally
	p.out = output.NewSyncWriter(pr.Writer(o.Out))
	o.events = consumers{p: p, tally: &tally, pr: pr, collected: o.collected, onChange: o.onChange}
	plan := rollout.Schedule{Waves: ws, Parallel: o.Parallel, Apps: appsByWave(r, ws), Promotion: o.promotion, Emit: o.events.emit}
	if o.verifies() && !o.SkipGates {
		plan.Soaks = o.soaks(r, ws, p, pr, &tally)
	}
	switch {
	case o.SkipGates && o.verifies():
		p.notes = append(p.notes, "Gates were skipped (--skip-gates): no test, check or soak ran, the earlier groups' verification was not required, and the revisions are unverified.")
	case o.SkipTests && slices.ContainsFunc(r.Fleet.Apps, func(a fleet.App) bool { return a.Tests != "" }):
		p.notes = append(p.notes, "Tests were skipped (--skip-tests).")
	}
	_, byName := index(r.Clusters)
	apply := o.explained(func(ctx context.Context, name string) error {
		return o.applyCluster(ctx, r, byName[name], p, pr, &tally, dryRun)
	})
	outcomes := rollout.Run(ctx, plan, func(ctx context.Context, name string) error {
		err := apply(ctx, name)
		if err != nil || !o.soaking(r.Fleet, byName[name]) {
			// Nothing more is written there: a soak follows success
			// only, and releases the locks once over (soaks).
			o.locks.ReleaseCluster(ctx, name, o.ErrOut)
			o.idle(name)
		}
		pr.End(name, err)
		return err
	})
	pr.Finish()
	o.outcomes, o.tally = outcomes, &tally
	err := finishRollout(ctx, p, outcomes, &tally, byName, dryRun, verb)
	return o.ReportOptions.finish(o.GlobalOptions, func() report.Report {
		return rolloutReport(strings.ReplaceAll(verb, " ", ""), outcomes, &tally, func(c string) string { return byName[c].Group }, o.collected, dryRun)
	}, err)
}

// finishRollout prints the summary of a write rollout and turns it into
// the exit code: 130 when interrupted, 1 when a cluster did not finish.
func finishRollout(ctx context.Context, p *printer, outcomes []runner.Outcome, tally *summary.Tally, byName map[string]*fleet.Cluster, dryRun bool, verb string) error {
	p.close()
	s := summary.Rollout{Outcomes: outcomes, Tally: tally, Done: done[verb], Nothing: "nothing to " + verb, DryRun: dryRun, Group: func(c string) string { return byName[c].Group }, RolledBack: rolledBack}
	if p.json {
		for _, res := range s.Results() {
			p.event(res)
		}
	} else {
		s.Print(p.out, p.prefix, p.many, p.notes)
	}
	failed := s.Failed()
	switch refused := refused(outcomes); {
	case ctx.Err() != nil:
		return &ExitError{Code: ExitInterrupted}
	case refused == len(outcomes):
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("aborted (not confirmed): nothing written")}
	case refused > 0 && failed == refused:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("aborted (not confirmed): %d of %d clusters not written", refused, len(outcomes))}
	case failed > 0:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d of %d clusters did not %s", failed, len(outcomes), verb)}
	}
	return skipped(outcomes, ExitFailed)
}

// refused is how many clusters were not started because a protected
// group's question was answered no.
func refused(outcomes []runner.Outcome) int {
	n := 0
	for _, oc := range outcomes {
		if oc.State == runner.NotStarted && errors.Is(oc.Err, errNotConfirmed) {
			n++
		}
	}
	return n
}

// skipped is the error for clusters skipped: exit 3 when all were
// unreachable (--skip-unreachable), else code; nil when none was.
func skipped(outcomes []runner.Outcome, code int) error {
	n, unreachable := 0, 0
	for _, oc := range outcomes {
		var skip *runner.SkipError
		if oc.State == runner.Skipped && errors.As(oc.Err, &skip) {
			n++
			if skip.Unreachable {
				unreachable++
			}
		}
	}
	switch {
	case n == 0:
		return nil
	case unreachable == n:
		return &ExitError{Code: ExitSkipped, Err: fmt.Errorf("%d of %d clusters skipped: unreachable", n, len(outcomes))}
	}
	return &ExitError{Code: code, Err: fmt.Errorf("%d of %d clusters skipped", n, len(outcomes))}
}

// confirmations sets a gate on each protected group's wave: a question on a
// terminal, nothing with --yes or --dry-run, a refusal otherwise.
func (o *ApplyOptions) confirmations(ctx context.Context, f *fleet.Fleet, ws []runner.Wave, dryRun bool) error {
	if o.Yes || dryRun {
		return nil
	}
	in := bufio.NewReader(o.In)
	for i := range ws {
		w := &ws[i]
		if g := f.Group(w.Name); g == nil || !g.Protected {
			continue
		}
		if !o.stdinIsTerminal() {
			return fmt.Errorf("group %s is protected (%s): pass --yes to write to it without a terminal to confirm on", w.Name, strings.Join(w.Clusters, ", "))
		}
		verb := "Apply to"
		if o.rollback != nil {
			verb = "Roll back"
		}
		question := fmt.Sprintf("%s protected group %s (%s)?", verb, w.Name, strings.Join(w.Clusters, ", "))
		w.Gate = func() error { return ask(ctx, o.ErrOut, in, question) }
	}
	return nil
}

// ask puts a yes/no question on out and reads the answer from in; anything
// but y or yes is a refusal, and so is Ctrl-C (ctx done) while it waits.
func ask(ctx context.Context, out io.Writer, in *bufio.Reader, question string) error {
	fmt.Fprintf(out, "%s [y/N] ", question)
	answer := make(chan string, 1)
	go func() {
		line, _ := in.ReadString('\n')
		answer <- line
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(out)
		return fmt.Errorf("%w: interrupted", errNotConfirmed)
	case line := <-answer:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return nil
		}
	}
	return errNotConfirmed
}

// errNotConfirmed is a protected group's question answered no.
var errNotConfirmed = errors.New("not confirmed")

func (o *ApplyOptions) applyCluster(ctx context.Context, r *rendered.Set, c *fleet.Cluster, p *printer, pr *progress.Display, tally *summary.Tally, dryRun bool) error {
	if err := o.rollback.failed(c.Name); err != nil {
		return err
	}
	pr.Stage(c.Name, "connecting")
	client, err := o.connect(ctx, r.Fleet, c)
	if err != nil {
		return err
	}
	// A lock lost while held stops the cluster's writes, those in flight
	// too, to the end of its work (its soak, verdicts and --atomic
	// restore): another run may be writing there now. Nothing is
	// recorded or restored then.
	ctx = o.locks.Writes(ctx, c.Name)
	results := r.Of(c.Name)
	skip, err := o.beforeWriting(ctx, r, c.Name, client, results, p)
	switch {
	case err != nil:
		return err
	case skip != nil && len(results) == 0:
		return skip
	}
	errs, failed := o.applyApps(ctx, r, c, client, results, dryRun)
	if err := o.clusterGates(ctx, r, c, results, failed, p, pr, tally); err != nil {
		errs = append(errs, err)
	}
	if err := rollout.LostLock(ctx); err != nil {
		return o.rollBack(ctx, r, c.Name, err, p, pr, tally) // says it restored nothing
	}
	if len(errs) > 0 || !o.soaking(r.Fleet, c) {
		o.settle(ctx, client, r, c.Name, p, tally) // else after the soak
	}
	if len(errs) == 0 && skip != nil {
		return skip // some apps went back, the skipped ones are said
	}
	return o.rollBack(ctx, r, c.Name, errors.Join(errs...), p, pr, tally)
}

// beforeWriting does what comes before a cluster's first write: a
// rollback says which apps it skips there (returned as skip); with
// --diff, the diffs. (--plan is checked once the locks are taken:
// rollout.ClusterRun.Check.)
func (o *ApplyOptions) beforeWriting(ctx context.Context, r *rendered.Set, cluster string, client *kube.Client, results []render.Result, p *printer) (skip, err error) {
	w := p.cluster(cluster)
	skip = o.rollback.skipped(cluster, p, w)
	if !o.Diff || skip != nil && len(results) == 0 {
		return skip, nil
	}
	d := &DiffOptions{GlobalOptions: o.GlobalOptions, ShowSecrets: false, ForceConflicts: o.ForceConflicts}
	for _, res := range results {
		diffs, err := diff.Run(ctx, client, res.Objects, diff.Options{App: res.App, FieldManager: apply.FieldManager, Force: o.ForceConflicts, Concurrency: o.Concurrency, Context: 3, Cluster: cluster, Ignore: r.Fleet.IgnoreRules(res.App), SkipUnchanged: true, Version: version.Get(), Others: rollout.OthersOf(results, res.App), Fleet: r.Fleet.Metadata.Name})
		if err != nil {
			return skip, fmt.Errorf("app %s: diff: %w", res.App, err)
		}
		d.printDiffs(p, w, cluster, res.App, diffs)
		o.collected.Diffs(cluster, diffs)
	}
	return skip, nil
}

// applyApps applies a cluster's apps through rollout.ClusterRun over
// rollout.KubeApps: in dependency order, each under its lock (a lock
// lost ends ctx, the cluster's Writes), and returns the errors and the
// apps that failed. With --atomic it keeps each app's set as it was, for
// rollBack.
func (o *ApplyOptions) applyApps(ctx context.Context, r *rendered.Set, c *fleet.Cluster, client *kube.Client, results []render.Result, dryRun bool) ([]error, map[string]bool) {
	ops := &rollout.KubeApps{
		Fleet: r.Fleet.Metadata.Name, Cluster: c.Name, Client: client, Results: results, Locks: &o.locks, Emit: o.events.emit, Gates: o.gatesOf(c.Name),
		Config: rollout.ApplyConfig{DryRun: dryRun, ForceConflicts: o.ForceConflicts, Prune: o.pruning(), AllowEmpty: o.AllowEmpty || o.rollback != nil, KeepTests: o.KeepTests, Timeout: o.Timeout, Concurrency: o.Concurrency},
		Tests:  func(app string) []*unstructured.Unstructured { return r.TestsOf(c.Name, app) },
		Ignore: r.Fleet.IgnoreRules,
		Record: func(ctx context.Context, res render.Result) *apply.Record { return o.record(ctx, r, c.Name, res) },
		Namespace: func(app string) string {
			rolledBack, _ := o.rollback.recordOf(c.Name, app) // where objects without a namespace went then
			return rolledBack.Namespace
		},
	}
	if o.forceApp != nil {
		ops.Force = func(app string) bool { return o.forceApp(c.Name, app) }
	}
	run := rollout.ClusterRun{
		Cluster: c.Name, Ops: ops, Gates: o.gatesOf(c.Name), Write: !dryRun, Atomic: o.Atomic,
		Done: func(app string, err error) { o.collected.App(c.Name, report.Outcome(app, err)) },
	}
	if o.plan != nil {
		// Every app is checked before anything is written, under its
		// lock: what was reviewed cannot change before it is applied.
		run.Check = func(ctx context.Context, app string) error {
			o.events.emit(rollout.StageEvent{Cluster: c.Name, Stage: "checking the plan"})
			return plan.Check(ctx, client, o.plan.Cluster(c.Name).App(app), rollout.ResultOf(results, app).Objects, o.Concurrency)
		}
	}
	for _, res := range inDependencyOrder(r.Fleet, results) {
		a := rollout.App{Name: res.App}
		if fa := r.Fleet.App(res.App); fa != nil {
			a.DependsOn = fa.DependsOn
			switch {
			case fa.Tests == "":
			case o.SkipGates:
				a.SkippedTests = "--skip-gates"
			case o.SkipTests:
				a.SkippedTests = "--skip-tests"
			}
		}
		a.Tests = len(r.TestsOf(c.Name, res.App)) > 0 && !dryRun
		// An app others depend on, or with tests, is waited for,
		// --wait or not.
		switch dependent := dependedOn(r.Fleet, res.App, results); {
		case o.Wait:
			a.WaitWhy = "--wait"
		case dependent != "":
			a.WaitWhy = "app " + dependent + " depends on it"
		case len(r.TestsOf(c.Name, res.App)) > 0:
			a.WaitWhy = "its tests run once it is"
		}
		a.Wait = a.WaitWhy != ""
		a.Final = !a.Tests && a.SkippedTests == "" && o.verifies() && !o.SkipGates && !o.soaking(r.Fleet, c) && !o.checks(r.Fleet, c)
		run.Apps = append(run.Apps, a)
	}
	errs, failed := run.Run(ctx)
	if o.Atomic {
		o.mu.Lock()
		if o.before == nil {
			o.before = map[string][]*inventory.Set{}
		}
		o.before[c.Name] = ops.Before
		o.mu.Unlock()
	}
	return errs, failed
}

// clusterGates runs the gates of the cluster's group once its apps went
// through (its checks; the soak comes after the group), or says in its
// gates why they did not run.
func (o *ApplyOptions) clusterGates(ctx context.Context, r *rendered.Set, c *fleet.Cluster, results []render.Result, failed map[string]bool, p *printer, pr *progress.Display, tally *summary.Tally) error {
	gates := o.gatesOf(c.Name)
	switch {
	case o.SkipGates:
		gates.Unverified("", "gates skipped (--skip-gates)")
	case len(failed) > 0: // ClusterRun said so
	case o.verifies() && ctx.Err() == nil:
		cluster := render.ClusterOf(r.Fleet, c)
		if len(results) > 0 {
			cluster = results[0].Cluster // with the attributes read from it
		}
		return o.runChecks(ctx, r.Fleet, c, cluster, p, pr, tally, gates)
	}
	return nil
}

// rollBack, with --atomic, puts a cluster that failed (err) back the way
// it was before this apply, and says so in the error it returns. Ctrl-C
// rolls nothing back: the user stopped the run. Nor does a lock lost
// (ctx, the cluster's Writes, ended with it), before the restore or
// during it: another run may be writing there now, and a restore would
// re-apply and prune under it. That is said: "not restored (lost the
// lock)", "rollback stopped (lost the lock)".
func (o *ApplyOptions) rollBack(ctx context.Context, r *rendered.Set, cluster string, err error, p *printer, pr *progress.Display, tally *summary.Tally) (rolled error) {
	o.mu.Lock()
	before := o.before[cluster]
	o.mu.Unlock()
	switch {
	case err == nil || len(before) == 0:
		return err
	case rollout.LostLock(ctx) != nil:
		return &atomicError{err: err, note: "not restored (lost the lock)"}
	case ctx.Err() != nil:
		return err
	}
	client, cerr := o.connect(ctx, r.Fleet, r.Fleet.Cluster(cluster))
	if cerr != nil {
		return &atomicError{err: err, note: "rollback failed: " + cerr.Error()}
	}
	defer func() {
		// Stopped by a lock lost meanwhile: said, rather than the
		// cancelled requests' errors.
		var a *atomicError
		if errors.As(rolled, &a) && rollout.LostLock(ctx) != nil && !strings.HasPrefix(a.note, "rolled back") {
			a.note = "rollback stopped (lost the lock)"
		}
	}()
	pr.Stage(cluster, "rolling back")
	return &atomicError{err: err, note: o.restore(ctx, client, cluster, before, r.Fleet, p, p.cluster(cluster), tally)}
}

// pruning reports whether applies prune: --prune, or a rollback, which
// brings back exactly what the revision had.
func (o *ApplyOptions) pruning() bool { return o.Prune || o.rollback != nil }

// record says how an app's apply to a cluster is recorded in its
// history: the plugin version, the source's git commit, and what made it
// (an apply, or a rollback to an earlier revision).
func (o *ApplyOptions) record(ctx context.Context, r *rendered.Set, cluster string, res render.Result) *apply.Record {
	rev, ok := o.rollback.recordOf(cluster, res.App)
	if !ok {
		rev.Description, rev.Chart = "apply", res.Chart
		rev.Source, _ = o.sources.Do(res.Source.Path, func() (revision.Source, error) {
			return revision.SourceOf(ctx, res.Source.Path, r.Fleet.Path), nil
		})
	}
	return &apply.Record{Revision: rev, Limit: o.HistoryLimit}
}

// inDependencyOrder orders a cluster's results so that every app comes
// after the apps it depends on.
func inDependencyOrder(f *fleet.Fleet, results []render.Result) []render.Result {
	names := make([]string, len(results))
	byApp := map[string]render.Result{}
	for i, r := range results {
		names[i] = r.App
		byApp[r.App] = r
	}
	out := make([]render.Result, 0, len(results))
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

// done is what the summary calls a cluster a verb went through on.
var done = map[string]string{"apply": "applied", "delete": "deleted", "roll back": "rolled back"}
