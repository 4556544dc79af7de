package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollback"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// RollbackOptions are the options of "kubectl fleet rollback".
type RollbackOptions struct {
	ApplyOptions
	// Apps are --app: the apps to roll back; none: every app with
	// revisions on each cluster.
	Apps []string
	// ToRevision is --to-revision; 0: the latest earlier revision of
	// another render (previous).
	ToRevision int
}

// NewCmdRollback returns the rollback command.
func NewCmdRollback(g *GlobalOptions) *cobra.Command {
	o := &RollbackOptions{ApplyOptions: ApplyOptions{GlobalOptions: g}}
	cmd := &cobra.Command{
		Use:   "rollback",
		Short: "Re-apply an earlier revision of apps on the selected clusters",
		Long: `Bring apps back to a revision kept in each cluster (see "kubectl fleet
history"): the previous one, or --to-revision N. The revision's stored
objects are re-applied and what it did not have is pruned, through the same
rollout as apply: groups in order with their maxParallel and maxFailures,
identity pins verified, protected groups confirmed, --dry-run=server,
--diff, --wait, -o json. Nothing is rendered, and the groups' checks, soaks
and the apps' tests do not run.

A rollback is itself a new revision ("rollback to 3"). A cluster that does
not have the revision asked for is reported and skipped, not guessed; it
does not count against its group's maxFailures.

Without --app, every app with revisions on a cluster is rolled back.
--to-revision needs exactly one --app: revision numbers are per app.

Exit codes:
  0    every selected cluster rolled back
  1    a cluster failed, was skipped or not started, or an error
  130  interrupted (Ctrl-C)`,
		Example: `  kubectl fleet rollback --app web --group staging
  kubectl fleet rollback --app web --to-revision 3 --wait
  kubectl fleet rollback --app web --dry-run=server --diff`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseSet(cmd, "does not apply to rollback, which re-applies the objects as they were stored", "namespace"); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.WriteOptions.addFlags(cmd, "rollback", "do not ask before writing to protected groups", "clusters rolled back at once at most (a group's maxParallel may lower it)")
	g.addSkipUnreachableFlag(cmd)
	cmd.Flags().StringSliceVar(&o.Apps, "app", nil, "the app to roll back (repeatable); default: every app with revisions on the cluster")
	cmd.Flags().IntVar(&o.ToRevision, "to-revision", 0, "the revision to go back to (default: the latest before the current with another render)")
	o.addRolloutFlags(cmd)
	return cmd
}

// Validate checks the flags.
func (o *RollbackOptions) Validate() error {
	if err := fleet.CheckAppNames(o.Apps...); err != nil {
		return fmt.Errorf("--app: %w", err)
	}
	switch {
	case o.ToRevision < 0:
		return fmt.Errorf("--to-revision must be 1 or more")
	case o.ToRevision > 0 && len(o.Apps) != 1:
		return fmt.Errorf("--to-revision %d needs exactly one --app: revision numbers are per app", o.ToRevision)
	}
	return o.ApplyOptions.Validate()
}

// Run rolls back: it reads, on every selected cluster, the revision
// each app goes back to (rollback.Read), then rolls those out through
// the engine.
func (o *RollbackOptions) Run(ctx context.Context) error {
	f, clusters, err := o.reached(ctx, o.Selection)
	if err != nil {
		return err
	}
	opts := o.options(o.dryRun(), o.Parallel)
	var results []render.Result
	opts.Rollback, results = rollback.Read(ctx, connector{o.GlobalOptions}, registry.Of(f), f, clusters, o.Apps, o.ToRevision, o.Parallel)
	opts.Rollback.Mask(o.mask, results)
	r := &rendered.Set{Fleet: f, Clusters: clusters, Results: results, Mask: o.mask}
	if opts.Confirm, err = o.confirmer(ctx, o.GlobalOptions, r, "Roll back"); err != nil {
		return err
	}
	n, err := o.notifier(f, opts.DryRun)
	if err != nil {
		return err
	}
	// A rollback asked for is a release whose verb says so.
	told := o.record(ctx, n, r, "rollback")
	_, _, err = runRollout(ctx, o.GlobalOptions, &o.ReportOptions, rolloutRun{Engine: o.newEngine(o.GlobalOptions), Set: r, Options: opts, Verb: "roll back", JSON: o.Output == "json", Record: told.recorder(), Trace: told.trace()})
	return closeNotifier(n, err)
}
