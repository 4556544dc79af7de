package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/lock"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// UnlockOptions are the options of "kubectl fleet unlock".
type UnlockOptions struct {
	*GlobalOptions
	SelectOptions
	// Apps are --app: the apps whose locks to remove.
	Apps     []string
	Yes      bool
	Parallel int
}

// NewCmdUnlock returns the unlock command.
func NewCmdUnlock(g *GlobalOptions) *cobra.Command {
	o := &UnlockOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "unlock",
		Short: "Remove an app's stale lock from the selected clusters",
		Long: `apply, rollback and delete lock each app on each cluster they write to (a
Lease fleet-<app> in the namespace kubectl-fleet), renew the lock while they
work and remove it when they end; a run that dies leaves it to expire on its
own (--lock-duration, default 60s). Meanwhile, another run fails that app on
that cluster with "locked by USER@HOST (pid N) since TIME".

unlock shows the lock of each selected cluster (who holds it, since when,
whether it has expired), asks for confirmation on a terminal, and removes
it: only the lock shown, not one renewed or taken since. --yes skips the
question, and without a terminal --yes is required. Removing the lock of a
run that is still working lets another run write the app at the same time.

Exit codes:
  0    every selected cluster unlocked (or not locked)
  1    a cluster could not be read or unlocked, not confirmed, or an error
  130  interrupted (Ctrl-C)`,
		Example: `  kubectl fleet unlock --app web
  kubectl fleet unlock --app web --group production --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	cmd.Flags().StringSliceVar(&o.Apps, "app", nil, "the app whose lock to remove (repeatable; required)")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().IntVar(&o.Parallel, "parallel", 10, "clusters worked on at once at most")
	return cmd
}

// Validate checks the flags.
func (o *UnlockOptions) Validate() error {
	if len(o.Apps) == 0 {
		return fmt.Errorf("--app is required: the app whose lock to remove")
	}
	if err := fleet.CheckAppNames(o.Apps...); err != nil {
		return fmt.Errorf("--app: %w", err)
	}
	if o.Parallel < 1 {
		return fmt.Errorf("--parallel must be at least 1")
	}
	return nil
}

// Run shows the locks, asks, and removes them.
func (o *UnlockOptions) Run(ctx context.Context) error {
	f, clusters, err := o.reached(ctx, o.Selection)
	if err != nil {
		return err
	}
	p := o.newPrinter(clusters, false)
	conn := connector{o.GlobalOptions}
	found, read := lock.Read(ctx, conn, f, clusters, o.Apps, o.Parallel, func(cluster, line string) { fmt.Fprintln(p.Cluster(cluster), line) })
	if what := found.What(); what != "" && ctx.Err() == nil && !o.Yes {
		p.Close() // the locks' lines before the question
		if err := o.asker().Confirm(ctx, "Remove", what); err != nil {
			return err
		}
	}
	states, outcomes := found.Remove(ctx, conn, f, clusters, read, o.Apps, o.Parallel)
	p.Close()
	fmt.Fprintln(p.Out, "Summary:")
	failed := summary.Each(p.Out, p.Prefix, outcomes, func(oc runner.Outcome) string { return states[oc.Cluster] }, "failed")
	return summary.Verdict(ctx, failed, len(outcomes), "not unlocked")
}
