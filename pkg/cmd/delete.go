package cmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
)

// DeleteOptions are the options of "kubectl fleet delete".
type DeleteOptions struct {
	*GlobalOptions
	SelectOptions
	SourceOptions
	WriteOptions
	// LockDuration is --lock-duration, LockTimeout --lock-timeout.
	LockDuration, LockTimeout time.Duration
}

// NewCmdDelete returns the delete command.
func NewCmdDelete(g *GlobalOptions) *cobra.Command {
	o := &DeleteOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete apps from the selected clusters",
		Long: `Delete every object of the selected apps (the fleet file's, or the ad hoc
source's by --name or base name) from each selected cluster: exactly the
members of the app's ApplySet, in reverse dependency order (Namespaces and
CRDs last), then the set's parent. Nothing is rendered, and nothing outside
the set is touched. Clusters go group by group as apply does, each group's
maxParallel and maxFailures applying, identity pins verified first.

It asks once for confirmation on a terminal; --yes skips the question, and
without a terminal --yes is required.

Exit codes:
  0  deleted everywhere (or nothing to delete)
  1  a cluster failed or was not started, or an error`,
		Example: `  kubectl fleet delete --app web --group staging
  kubectl fleet delete -k overlays --yes
  kubectl fleet delete --dry-run=server`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.WriteOptions.validate(); err != nil {
				return err
			}
			if err := o.SourceOptions.Validate(); err != nil {
				return err
			}
			if err := validateLocks(o.LockDuration, o.LockTimeout); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.SourceOptions.addFlags(cmd, g)
	o.WriteOptions.addFlags(cmd, "delete", "do not ask for confirmation", "clusters worked on at once at most")
	g.addSkipUnreachableFlag(cmd)
	addLockFlags(cmd, &o.LockDuration, &o.LockTimeout)
	return cmd
}

// Run deletes.
func (o *DeleteOptions) Run(ctx context.Context) error {
	f, clusters, err := o.selected(o.Selection)
	if err != nil {
		return err
	}
	apps, err := o.SourceOptions.Resolve(f, clusters, o.namespace())
	if err != nil {
		return err
	}
	if err := checkContexts(ctx, o.GlobalOptions, f, clusters); err != nil {
		return err
	}
	dryRun := o.dryRun()
	if !dryRun && !o.Yes {
		if err := o.asker().Confirm(ctx, "Delete", rollout.DeleteWhat(apps, clusters)); err != nil {
			return err
		}
	}
	e := &rollout.Engine{Connector: connector{o.GlobalOptions}, Locks: rollout.Locks{Duration: o.LockDuration, Timeout: o.LockTimeout}, Log: o.ErrOut}
	r := &rendered.Set{Fleet: f, Clusters: clusters}
	_, _, err = runRollout(ctx, o.GlobalOptions, &ReportOptions{}, rolloutRun{Engine: e, Set: r, Options: rollout.Options{DryRun: dryRun, Parallel: o.Parallel}, Delete: true, Apps: apps, Verb: "delete", JSON: o.Output == "json"})
	return err
}
