package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// PauseOptions are the options of "kubectl fleet pause" and "resume".
type PauseOptions struct {
	*GlobalOptions
	SelectOptions
	Apps     []string
	Reason   string
	Parallel int
	lift     bool
}

// NewCmdPause returns the pause command.
func NewCmdPause(g *GlobalOptions) *cobra.Command {
	return newCmdPause(g, false, &cobra.Command{
		Use:   "pause --reason TEXT",
		Short: "Pause rollouts to the selected clusters, recorded in the clusters",
		Long: `Record in each selected cluster (a ConfigMap pause.<fleet> in the namespace
kubectl-fleet) that the fleet's apps, or those of --app, are paused: who
(as the cluster authenticates them), when and why. Every runner of the
fleet reads it there: CI jobs, reconcile's shards, colleagues.

apply and reconcile write no paused app to a paused cluster (a run in
progress stops before its next write there; the cluster is reported as
skipped), and start no later batch or group past it ("production not
started: prod-eu paused 10m ago by alice: \"investigating latency\"").
status and history show the pauses; resume lifts them. Dry runs, diff,
rollback and delete are not held.

Exit codes:
  0  every selected cluster paused
  1  a cluster could not be paused, or an error`,
		Example: `  kubectl fleet pause -g production --reason "investigating latency"
  kubectl fleet pause -c prod-eu --app web --reason "INC-1234"`,
	})
}

// NewCmdResume returns the resume command.
func NewCmdResume(g *GlobalOptions) *cobra.Command {
	return newCmdPause(g, true, &cobra.Command{
		Use:   "resume",
		Short: "Lift the pauses of the selected clusters",
		Long: `Lift the pauses kubectl fleet pause recorded in each selected cluster: those
of every app, or with --app those of these apps (a pause of every app is
lifted only without --app).

Exit codes:
  0  every selected cluster resumed (or was not paused)
  1  a cluster could not be resumed, or an error`,
		Example: `  kubectl fleet resume -g production
  kubectl fleet resume -c prod-eu --app web`,
	})
}

// newCmdPause gives cmd (pause, or with lift resume) its flags and run.
func newCmdPause(g *GlobalOptions, lift bool, cmd *cobra.Command) *cobra.Command {
	o := &PauseOptions{GlobalOptions: g, lift: lift}
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		switch {
		case !lift && o.Reason == "":
			return fmt.Errorf("--reason is required: say why, for whoever finds the pause")
		case o.Parallel < 1:
			return fmt.Errorf("--parallel must be at least 1")
		}
		if err := fleet.CheckAppNames(o.Apps...); err != nil {
			return fmt.Errorf("--app: %w", err)
		}
		return o.Run(cmd.Context())
	}
	o.SelectOptions.addFlags(cmd, g)
	cmd.Flags().StringSliceVar(&o.Apps, "app", nil, "only this app (repeatable; default every app of the fleet)")
	cmd.Flags().IntVar(&o.Parallel, "parallel", 10, "clusters worked on at once")
	if !lift {
		cmd.Flags().StringVar(&o.Reason, "reason", "", "why (required): shown to every run the pause holds")
	}
	return cmd
}

// Run pauses or resumes every selected cluster.
func (o *PauseOptions) Run(ctx context.Context) error {
	f, clusters, err := o.reached(ctx, o.Selection)
	if err != nil {
		return err
	}
	ch := pause.Change{Fleet: f, Clusters: clusters, Apps: o.Apps, Lift: o.lift, Reason: o.Reason, Now: time.Now(), Parallel: o.Parallel}
	outcomes, said := ch.Apply(ctx, connector{o.GlobalOptions}, registry.Of(f))
	p := o.newPrinter(clusters, false)
	failed := summary.Each(p.Out, p.Prefix, outcomes, func(oc runner.Outcome) string { return said[oc.Cluster] }, "error")
	return summary.Verdict(ctx, failed, len(outcomes), "not done")
}
