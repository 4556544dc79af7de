package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/history"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// HistoryOptions are the options of "kubectl fleet history".
type HistoryOptions struct {
	*GlobalOptions
	SelectOptions
	// Apps are --app; none: every app with revisions on each cluster.
	Apps     []string
	Output   string
	Parallel int
}

// NewCmdHistory returns the history command.
func NewCmdHistory(g *GlobalOptions) *cobra.Command {
	o := &HistoryOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List the revisions of apps on the selected clusters",
		Long: `List, per cluster and app, the revisions kept in the cluster: every apply
that changed the render recorded one (number, time, who applied it as the
cluster authenticated them, the source's git commit with -dirty when it had
changes not committed, how many objects, the render's digest, and what made
it: apply, or rollback to N). The current revision is marked.

Revisions live in the cluster, as Secrets of type fleet.kubectl.io/revision
in the kubectl-fleet namespace; apply --history-limit bounds them.

Exit codes:
  0  every selected cluster answered
  1  a cluster could not be read, or an error`,
		Example: `  kubectl fleet history
  kubectl fleet history --app web --group production
  kubectl fleet history -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseSet(cmd, "does not apply to history, which lists revisions, not objects", "namespace"); err != nil {
				return err
			}
			if o.Output != "" && o.Output != "json" && o.Output != "yaml" {
				return fmt.Errorf("--output %q: want json or yaml", o.Output)
			}
			if err := fleet.CheckAppNames(o.Apps...); err != nil {
				return fmt.Errorf("--app: %w", err)
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	cmd.Flags().StringSliceVar(&o.Apps, "app", nil, "only this app (repeatable)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json (JSON Lines: one object per revision and line) or yaml (a list)")
	cmd.Flags().IntVar(&o.Parallel, "parallel", 10, "clusters queried at once")
	return cmd
}

// Run lists.
func (o *HistoryOptions) Run(ctx context.Context) error {
	f, clusters, err := o.reached(ctx, o.Selection)
	if err != nil {
		return err
	}
	outcomes, entries, pauses := history.Read(ctx, connector{o.GlobalOptions}, registry.Of(f), f, clusters, o.Apps, o.Parallel)
	rep := history.Report{Clusters: clusters, Outcomes: outcomes, Entries: entries, Pauses: pauses}
	return rep.Print(ctx, o.newPrinter(clusters, o.Output == "json"), o.ErrOut, o.Output)
}
