package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/report"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
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

// Run diffs every selected cluster, and writes the report.
func (o *DiffOptions) Run(ctx context.Context) error {
	if o.ShowSecrets {
		mask.Show(o.Out)
	}
	res := &diffRun{summaries: map[string]diff.Summary{}, plans: map[string][]plan.App{}}
	err := o.run(ctx, res)
	if res.r == nil {
		return err // nothing rendered: nothing to report
	}
	if o.PlanFile != "" {
		if perr := o.writePlan(res); perr != nil {
			var ee *exit.Error
			if err == nil || errors.As(err, &ee) && ee.Code == 1 {
				err = &exit.Error{Code: exit.DiffError, Err: perr} // differences, but no plan
			} else {
				fmt.Fprintln(o.ErrOut, "error:", perr)
			}
		}
	}
	return o.finish(o.GlobalOptions, func() report.Report {
		return report.OfDiff(res.r.Fleet, res.outcomes, res.summaries, o.collected, o.ShowSecrets)
	}, err)
}

// diffRun is what a diff found on every cluster.
type diffRun struct {
	r         *rendered.Set
	outcomes  []runner.Outcome
	summaries map[string]diff.Summary

	plans map[string][]plan.App // by cluster, with --out
}

// writePlan writes what the diff saw as a plan (--out), when it saw every
// selected cluster whole.
func (o *DiffOptions) writePlan(res *diffRun) error {
	p, err := rollout.Diffs{Outcomes: res.outcomes, Plans: res.plans}.Plan(res.r.Fleet, time.Now())
	if err != nil {
		return err
	}
	if err := p.Write(o.PlanFile); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	fmt.Fprintf(o.ErrOut, "Plan written to %s: apply it with kubectl fleet apply --plan %s\n", o.PlanFile, o.PlanFile)
	return nil
}

func (o *DiffOptions) run(ctx context.Context, res *diffRun) error {
	cfg, err := o.renderConfig(o.Selection, &o.SourceOptions, true)
	if err != nil {
		return &exit.Error{Code: exit.DiffError, Err: err}
	}
	// The clusters diffed later let their renders go until their turn.
	cfg.Shed = func(cs []*fleet.Cluster) map[string]bool { return rollout.Past(cs, o.Parallel) }
	r, err := rendered.Render(ctx, cfg)
	if err != nil {
		return &exit.Error{Code: exit.DiffError, Err: err}
	}
	res.r = r
	p := o.newPrinter(r.Clusters, o.Output == "json")
	defer p.Close()
	names, _ := fleet.Index(r.Clusters)
	p.InOrder(names) // read, not followed: the fleet's order every run
	var external *diff.External
	if os.Getenv("KUBECTL_EXTERNAL_DIFF") != "" && !p.JSON {
		if external, err = diff.NewExternal(); err != nil {
			return &exit.Error{Code: exit.DiffError, Err: err}
		}
		defer external.Remove()
	}
	d, extErr := o.diffAll(ctx, r, p, external)
	res.outcomes, res.summaries, res.plans = d.Outcomes, d.Summaries, d.Plans
	p.Close()
	sum := summary.Diff{Outcomes: d.Outcomes, Summaries: d.Summaries}
	if p.JSON {
		for _, res := range sum.Results() {
			p.Event(res)
		}
	} else {
		sum.Print(p.Out, p.Prefix, p.Many)
	}
	failed, differs := sum.Failed(), sum.Differs()
	if extErr != nil {
		return &exit.Error{Code: exit.DiffError, Err: extErr}
	}
	if external != nil && differs {
		if err := external.Run(o.IOStreams); err != nil {
			return &exit.Error{Code: exit.DiffError, Err: err}
		}
	}
	switch {
	case ctx.Err() != nil:
		return &exit.Error{Code: exit.Interrupted}
	case failed > 0:
		return &exit.Error{Code: exit.DiffError, Err: fmt.Errorf("%d of %d clusters could not be diffed", failed, len(d.Outcomes))}
	}
	if err := summary.Skipped(d.Outcomes, exit.DiffError); err != nil {
		return err
	}
	if differs {
		return &exit.Error{Code: 1}
	}
	return nil
}

// diffAll diffs r through the engine (rollout.Engine.Diff) into p, the
// report and, when set, the external diff's folders; the error is the
// external diff's.
func (o *DiffOptions) diffAll(ctx context.Context, r *rendered.Set, p *printer, external *diff.External) (rollout.Diffs, error) {
	var (
		mu     sync.Mutex
		extErr error
	)
	to := sinks.Set{Printer: p, Diffs: o.diffStyle(external != nil)}
	if !o.ShowSecrets {
		to.Report = o.collected
	}
	e := &rollout.Engine{Connector: connector{o.GlobalOptions}}
	d := e.Diff(ctx, r, rollout.DiffOptions{ForceConflicts: o.ForceConflicts, ShowSecrets: o.ShowSecrets, All: external != nil, Plan: o.PlanFile != "", Parallel: o.Parallel, Concurrency: o.Concurrency}, func(ev rollout.Event) {
		if de, ok := ev.(rollout.DiffEvent); ok {
			o.collected.App(de.Cluster, report.DiffApp(de.App, de.Diffs))
			if err := external.AddAll(de.Cluster, de.Diffs); err != nil {
				mu.Lock()
				extErr = cmp.Or(extErr, err)
				mu.Unlock()
			}
		}
		to.Emit(ev)
	})
	return d, extErr
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
