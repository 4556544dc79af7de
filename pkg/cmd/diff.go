package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/internal/memo"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/report"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/version"
)

// ExitDiffError is diff's exit code for errors; 1 means "differences".
const ExitDiffError = 2

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

	// sources describes each source path's git state once per run.
	sources memo.Memo[string, revision.Source]

	// external is set when $KUBECTL_EXTERNAL_DIFF shows the diffs; the
	// output then only names each changed object.
	external bool
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
				return &ExitError{Code: ExitDiffError, Err: err}
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
	return o.SourceOptions.validate()
}

// DiffSummary is the JSON form of one cluster's counts.
type DiffSummary struct {
	Type      string `json:"type"`
	Cluster   string `json:"cluster"`
	Create    int    `json:"create"`
	Change    int    `json:"change"`
	Prune     int    `json:"prune"`
	Unchanged int    `json:"unchanged"`
	Conflicts int    `json:"conflicts"`
	Errors    int    `json:"errors"`
	Error     string `json:"error,omitempty"`
}

// Run diffs every selected cluster, and writes the report.
func (o *DiffOptions) Run(ctx context.Context) error {
	res := &diffRun{summaries: map[string]diff.Summary{}, plans: map[string][]plan.App{}}
	err := o.run(ctx, res)
	if res.r == nil {
		return err // nothing rendered: nothing to report
	}
	if o.PlanFile != "" {
		if perr := o.writePlan(res); perr != nil {
			var ee *ExitError
			if err == nil || errors.As(err, &ee) && ee.Code == 1 {
				err = &ExitError{Code: ExitDiffError, Err: perr} // differences, but no plan
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

	mu    sync.Mutex
	plans map[string][]plan.App // by cluster, with --out
}

// writePlan writes what the diff saw as a plan (--out), when it saw every
// selected cluster whole.
func (o *DiffOptions) writePlan(res *diffRun) error {
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, Created: time.Now().UTC().Truncate(time.Second), Fleet: res.r.Fleet.Metadata.Name}
	for _, oc := range res.outcomes {
		if oc.State != runner.Succeeded {
			return fmt.Errorf("no plan written: cluster %s was not diffed whole (%s)", oc.Cluster, oc.State)
		}
		p.Clusters = append(p.Clusters, plan.Cluster{Name: oc.Cluster, Group: res.r.Fleet.Cluster(oc.Cluster).Group, Apps: res.plans[oc.Cluster]})
	}
	if err := p.Write(o.PlanFile); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	fmt.Fprintf(o.ErrOut, "Plan written to %s: apply it with kubectl fleet apply --plan %s\n", o.PlanFile, o.PlanFile)
	return nil
}

func (o *DiffOptions) run(ctx context.Context, res *diffRun) error {
	r, err := o.render(ctx, o.Selection, &o.SourceOptions, true)
	if err != nil {
		return &ExitError{Code: ExitDiffError, Err: err}
	}
	res.r = r
	p := o.newPrinter(r.Clusters, o.Output == "json")
	defer p.Close()
	names, byName := index(r.Clusters)
	p.InOrder(names) // read, not followed: the fleet's order every run
	var external *diff.External
	if os.Getenv("KUBECTL_EXTERNAL_DIFF") != "" && !p.JSON {
		if external, err = diff.NewExternal(); err != nil {
			return &ExitError{Code: ExitDiffError, Err: err}
		}
		defer external.Remove()
		o.external = true
	}
	var mu sync.Mutex
	summaries := res.summaries
	outcomes := runner.Run(ctx, runner.Every(names), o.Parallel, o.explained(func(ctx context.Context, name string) error {
		s, err := o.diffCluster(ctx, r, byName[name], p, external, res)
		p.Done(name)
		o.idle(name)
		mu.Lock()
		summaries[name] = s
		mu.Unlock()
		return err
	}))
	res.outcomes = outcomes
	p.Close()
	failed, differs := 0, false
	var lines []summary.Line
	for _, oc := range outcomes {
		s := summaries[oc.Cluster]
		differs = differs || s.Differs()
		if oc.State != runner.Succeeded && oc.State != runner.Skipped {
			failed++
		}
		if p.JSON {
			p.Event(DiffSummary{Type: "summary", Cluster: oc.Cluster, Create: s.Create, Change: s.Change, Prune: s.Prune, Unchanged: s.Unchanged, Conflicts: s.Conflicts, Errors: s.Errors, Error: errString(oc.Err)})
			continue
		}
		lines = append(lines, summary.Line{Cluster: oc.Cluster, Text: diffLine(oc, s)})
	}
	summary.Lines(p.Out, p.Prefix, p.Many, ": ", lines)
	if external != nil && differs {
		if err := external.Run(o.IOStreams); err != nil {
			return &ExitError{Code: ExitDiffError, Err: err}
		}
	}
	switch {
	case ctx.Err() != nil:
		return &ExitError{Code: ExitInterrupted}
	case failed > 0:
		return &ExitError{Code: ExitDiffError, Err: fmt.Errorf("%d of %d clusters could not be diffed", failed, len(outcomes))}
	}
	if err := skipped(outcomes, ExitDiffError); err != nil {
		return err
	}
	switch {
	case differs:
		return &ExitError{Code: 1}
	}
	return nil
}

func (o *DiffOptions) diffCluster(ctx context.Context, r *rendered.Set, c *fleet.Cluster, p *printer, external *diff.External, run *diffRun) (diff.Summary, error) {
	client, err := o.connect(ctx, r.Fleet, c)
	if err != nil {
		return diff.Summary{}, err
	}
	w := p.Cluster(c.Name)
	var all []diff.Object
	for _, res := range r.Of(c.Name) {
		var set *inventory.Set
		if o.PlanFile != "" {
			// Read before the objects: an apply after this makes the
			// plan stale.
			if set, err = inventory.Load(ctx, client, res.App); err != nil {
				return diff.Summarize(all), fmt.Errorf("app %s: %w", res.App, err)
			}
		}
		// An external diff program is given every object, as kubectl diff
		// gives it: nothing is skipped.
		diffs, err := diff.Run(ctx, client, res.Objects, diff.Options{App: res.App, FieldManager: apply.FieldManager, Force: o.ForceConflicts, ShowSecrets: o.ShowSecrets, Concurrency: o.Concurrency, Context: 3, Cluster: c.Name, Ignore: r.Fleet.IgnoreRules(res.App), SkipUnchanged: external == nil, Version: version.Get(), Others: rollout.OthersOf(r.Of(c.Name), res.App), Fleet: r.Fleet.Metadata.Name})
		if err != nil {
			return diff.Summarize(all), fmt.Errorf("app %s: %w", res.App, err)
		}
		o.printDiffs(p, w, c.Name, res.App, diffs)
		if o.PlanFile != "" {
			objs, err := plan.Objects(diffs)
			if err != nil {
				return diff.Summarize(all), fmt.Errorf("app %s: %w", res.App, err)
			}
			src, _ := o.sources.Do(res.Source.Path, func() (revision.Source, error) {
				return revision.SourceOf(ctx, res.Source.Path, r.Fleet.Path), nil
			})
			key, err := digest.KeyOf(ctx, client)
			if err != nil {
				return diff.Summarize(all), err
			}
			run.mu.Lock()
			run.plans[c.Name] = append(run.plans[c.Name], plan.App{App: res.App, Digest: digest.Render(res.Objects, key), Source: src, Objects: objs, Set: plan.SetOf(set)})
			run.mu.Unlock()
		}
		if o.collected != nil {
			s := diff.Summarize(diffs)
			a := report.App{Name: res.App, State: "in sync"}
			if s.Differs() {
				a.State = fmt.Sprintf("%d to create, %d to change, %d to prune", s.Create, s.Change, s.Prune)
			}
			o.collected.App(c.Name, a)
			if !o.ShowSecrets {
				o.collected.Diffs(c.Name, diffs)
			}
		}
		if external != nil {
			for _, d := range diffs {
				if d.Err == nil {
					if err := external.Add(c.Name, d); err != nil {
						return diff.Summarize(all), err
					}
				}
			}
		}
		all = append(all, diffs...)
	}
	s := diff.Summarize(all)
	if s.Errors > 0 {
		return s, fmt.Errorf("%s failed", output.Plural(s.Errors, "object"))
	}
	return s, nil
}

// printDiffs prints one app's diffs on a cluster: JSON events, or the
// unified diffs on the cluster's prefixed writer.
func (o *DiffOptions) printDiffs(p *printer, w io.Writer, cluster, app string, diffs []diff.Object) {
	style := o.diffStyle(o.external)
	for _, d := range diffs {
		if p.JSON {
			p.EventOf(cluster, diff.EventOf(cluster, app, d))
			continue
		}
		diff.Print(w, d, style)
	}
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

// diffLine is what diff's summary says of a cluster.
func diffLine(oc runner.Outcome, s diff.Summary) string {
	line := fmt.Sprintf("%d to create, %d to change, %d to prune, %d unchanged", s.Create, s.Change, s.Prune, s.Unchanged)
	if s.Conflicts > 0 {
		line += fmt.Sprintf(" (apply needs --force-conflicts for %d)", s.Conflicts)
	}
	switch {
	case oc.State == runner.NotStarted:
		line = "not diffed (interrupted)"
	case oc.State == runner.Skipped:
		line = "skipped: " + oc.Err.Error()
	case oc.Err != nil && s.Create+s.Change+s.Prune+s.Unchanged > 0:
		line = fmt.Sprintf("error: %v (of what it diffed: %s)", oc.Err, line)
	case oc.Err != nil:
		line = "error: " + oc.Err.Error()
	}
	return line
}
