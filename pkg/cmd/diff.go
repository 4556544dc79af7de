package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/report"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sinks"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// DiffOptions are the options of "kubectl fleet diff".
type DiffOptions struct {
	*GlobalOptions
	SelectOptions
	SourceOptions
	Output         string
	Parallel       int
	Concurrency    int
	ShowSecrets    bool
	ForceConflicts bool
	ReportOptions
	// PlanFile is --out: where to write the plan.
	PlanFile string
}

// NewCmdDiff returns the diff command.
func NewCmdDiff(g *GlobalOptions) *cobra.Command {
	o := &DiffOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Show what apply would change on every selected cluster",
		Long: `Render every selected cluster, server-side apply each object with dry run
(field manager kubectl-fleet) and compare the result with the live object.
Objects apply --prune would delete (members of the app's ApplySet no longer
rendered) show as deletions. Noise is removed (managedFields,
resourceVersion, generation, uid, timestamps, status, server annotations)
and Secret values are masked as kubectl diff masks them.

With $KUBECTL_EXTERNAL_DIFF set, that program is run once on two folders,
LIVE and MERGED, each with a folder per cluster, as kubectl diff does.

Exit codes (kubectl diff's convention):
  0  no cluster differs
  1  some cluster differs
  2  an error`,
		Example: `  kubectl fleet diff
  kubectl fleet diff -k overlays --group production
  kubectl fleet diff -o json | jq -r 'select(.type=="diff") | .object'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return &exit.Error{Code: exit.DiffError, Err: err}
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.SourceOptions.addFlags(cmd, g)
	g.addSkipUnreachableFlag(cmd)
	o.ReportOptions.addFlags(cmd)
	cmd.Flags().StringVar(&o.PlanFile, "out", "", "also write a plan to this file: what apply --plan will write, or refuse to once anything moved")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json (JSON Lines: one object per event and line; jq -s . makes one array)")
	cmd.Flags().IntVar(&o.Parallel, "parallel", 10, "clusters diffed at once")
	cmd.Flags().IntVar(&o.Concurrency, "concurrency", 16, "requests in flight per cluster")
	cmd.Flags().BoolVar(&o.ShowSecrets, "show-secrets", false, "show Secret values instead of masking them")
	cmd.Flags().BoolVar(&o.ForceConflicts, "force-conflicts", false, "diff as apply --force-conflicts would apply")
	return cmd
}

// Validate checks the flags.
func (o *DiffOptions) Validate() error {
	if err := validateJSONOutput(o.Output); err != nil {
		return err
	}
	if o.Parallel < 1 || o.Concurrency < 1 {
		return fmt.Errorf("--parallel and --concurrency must be at least 1")
	}
	if err := o.ReportOptions.validate(); err != nil {
		return err
	}
	return o.SourceOptions.Validate()
}

// Run diffs every selected cluster, and writes the plan (--out) and
// the report.
func (o *DiffOptions) Run(ctx context.Context) error {
	if o.ShowSecrets {
		mask.Show(o.Out)
	}
	r, d, err := o.run(ctx)
	if r == nil {
		return err // nothing rendered: nothing to report
	}
	if o.PlanFile != "" {
		perr := d.WritePlan(r.Fleet, o.PlanFile, time.Now())
		if perr == nil {
			fmt.Fprintf(o.ErrOut, "Plan written to %s: apply it with kubectl fleet apply --plan %s\n", o.PlanFile, o.PlanFile)
		}
		err = summary.WithPlan(err, perr, o.ErrOut)
	}
	return o.finish(o.GlobalOptions, func() report.Report {
		return report.OfDiff(r.Fleet, d.Outcomes, d.Summaries, o.collected, o.ShowSecrets)
	}, err)
}

// run renders, diffs every cluster through the engine (rollout.Engine.Diff)
// into the printer, the report and the external diff program's folders,
// and ends with the summary (summary.Diff.Finish).
func (o *DiffOptions) run(ctx context.Context) (*rendered.Set, rollout.Diffs, error) {
	cfg, err := o.renderConfig(o.Selection, &o.SourceOptions, true)
	if err != nil {
		return nil, rollout.Diffs{}, &exit.Error{Code: exit.DiffError, Err: err}
	}
	// The clusters diffed later let their renders go until their turn.
	cfg.Shed = func(cs []*fleet.Cluster) map[string]bool { return rollout.Past(cs, o.Parallel) }
	r, err := rendered.Render(ctx, cfg)
	if err != nil {
		return nil, rollout.Diffs{}, &exit.Error{Code: exit.DiffError, Err: err}
	}
	p := o.newPrinter(r.Clusters, o.Output == "json")
	defer p.Close()
	names, _ := fleet.Index(r.Clusters)
	p.InOrder(names) // read, not followed: the fleet's order every run
	external, err := diff.ExternalFromEnv(p.JSON)
	if err != nil {
		return r, rollout.Diffs{}, &exit.Error{Code: exit.DiffError, Err: err}
	}
	defer external.Remove()
	to := sinks.Set{Printer: p, Diffs: o.diffStyle(external != nil), Report: o.collected, DiffApps: true, Unmasked: o.ShowSecrets, External: external}
	e := &rollout.Engine{Connector: connector{o.GlobalOptions}}
	d := e.Diff(ctx, r, rollout.DiffOptions{ForceConflicts: o.ForceConflicts, ShowSecrets: o.ShowSecrets, All: external != nil, Plan: o.PlanFile != "", Parallel: o.Parallel, Concurrency: o.Concurrency}, to.Emit)
	err = summary.Diff{Outcomes: d.Outcomes, Summaries: d.Summaries}.Finish(ctx, p, external.Err(), func() error { return external.Run(o.IOStreams) })
	return r, d, err
}

// diffStyle is how diffs are printed: only their action when
// $KUBECTL_EXTERNAL_DIFF shows them (external), coloured on a terminal.
func (g *GlobalOptions) diffStyle(external bool) diff.Style {
	switch {
	case external:
		return diff.ActionOnly
	case output.UseColor(g.Out, g.NoColor):
		return diff.Colored
	}
	return diff.Plain
}
