package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
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
	// IgnoreWindows writes to groups outside their deploy windows.
	IgnoreWindows bool
	// RetryRolledBack applies again a release an automatic rollback
	// took away (apply only: reconcile never does).
	RetryRolledBack bool
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
	ReportOptions
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
  4    a group marked approval: required awaits approval of this release
       (kubectl fleet approve), and nothing else failed
  6    a group failed and, as its onFailure: rollback asks, what the run
       changed was rolled back
  7    every selected cluster applied, but a notify: sink marked required
       missed an event
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
	cmd.Flags().BoolVar(&o.RetryRolledBack, "retry-rolled-back", false, "apply again a release that onFailure: rollback took away from a cluster; without it such a cluster is skipped, here and in reconcile")
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
	cmd.Flags().BoolVar(&f.IgnoreWindows, "ignore-windows", false, "for emergencies: write to groups outside their deploy windows (groups[].windows); the revisions say so")
}

// runState readies the report's collector and checks the lock flags.
func (o *ApplyOptions) runState() error {
	o.ReportOptions.Report, o.ReportOptions.ReportFormat = o.ApplyFlags.Report, o.ApplyFlags.ReportFormat
	if err := o.ReportOptions.validate(); err != nil {
		return err
	}
	return validateLocks(o.LockDuration, o.LockTimeout)
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
	if _, err := rollout.EnvClock(); err != nil {
		return err
	}
	if err := o.runState(); err != nil {
		return err
	}
	return o.SourceOptions.Validate()
}

// Run applies.
func (o *ApplyOptions) Run(ctx context.Context) (err error) {
	o.SourceOptions.withTests = !o.SkipTests && !o.SkipGates
	e := o.newEngine(o.GlobalOptions)
	defer e.Release(ctx) // early locks of a run that does not start
	cfg, err := o.renderConfig(o.Selection, &o.SourceOptions, true)
	if err != nil {
		return err
	}
	// The sinks' credentials are read before anything is rendered or
	// locked; what they are sent is sent before the command ends.
	n, err := o.notifier(cfg.Fleet, o.dryRun())
	if err != nil {
		return err
	}
	defer func() { err = closeNotifier(n, err) }()
	if err := cfg.Fleet.CheckRollback(o.HistoryLimit); err != nil {
		return err
	}
	opts := o.options(o.dryRun(), o.Parallel)
	r, err := e.Prepare(ctx, cfg, &opts, o.Yes)
	if err != nil {
		return err
	}
	if o.PlanFile != "" {
		if opts.Plan, err = plan.LoadFor(o.PlanFile, r.AppNames()); err != nil {
			return err
		}
	}
	if opts.Confirm, err = o.confirmer(ctx, o.GlobalOptions, r, "Apply to"); err != nil {
		return err
	}
	told := o.record(ctx, n, r, "apply")
	outcomes, _, err := runRollout(ctx, o.GlobalOptions, &o.ReportOptions, rolloutRun{Engine: e, Set: r, Options: opts, Verb: "apply", JSON: o.Output == "json", Record: told.recorder(), Trace: told.trace()})
	return o.undo(ctx, e, r, outcomes, err, told.recorder())
}

// newEngine is an engine for one run, with the lock flags.
func (f *ApplyFlags) newEngine(g *GlobalOptions) *rollout.Engine {
	return &rollout.Engine{Connector: connector{g}, Locks: rollout.Locks{Duration: f.LockDuration, Timeout: f.LockTimeout}, Log: g.ErrOut}
}

// options are the engine's options for these flags, on the clock
// $KUBECTL_FLEET_NOW says (rollout.EnvClock).
func (f *ApplyFlags) options(dryRun bool, parallel int) rollout.Options {
	now, _ := rollout.EnvClock() // not a time: apply's Validate refused it; the machine's clock
	return rollout.Options{
		DryRun: dryRun, Diff: f.Diff, ForceConflicts: f.ForceConflicts, Prune: f.Prune, AllowEmpty: f.AllowEmpty, Wait: f.Wait, Timeout: f.Timeout,
		Concurrency: f.Concurrency, Parallel: parallel, HistoryLimit: f.HistoryLimit, SkipTests: f.SkipTests, SkipGates: f.SkipGates, KeepTests: f.KeepTests, Atomic: f.Atomic,
		IgnoreWindows: f.IgnoreWindows, RetryRolledBack: f.RetryRolledBack, Now: now,
	}
}
