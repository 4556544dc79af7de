package cmd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/report"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sinks"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// rolloutRun is one run of the rollout engine as a command makes it:
// apply, rollback, a reconcile pass.
type rolloutRun struct {
	Engine  *rollout.Engine
	Set     *rendered.Set
	Options rollout.Options
	// Verb is "apply" or "roll back", JSON -o json.
	Verb string
	JSON bool
	// Delete makes the run a delete of Apps (rollout.Engine.Delete).
	Delete bool
	Apps   []rendered.App
	// OnChange, when set, is told every object's change (reconcile's
	// metrics).
	OnChange func(cluster, app string, action apply.Action)
}

// runRollout runs the engine with the command's sinks around it: the
// printer (text or JSON), the live progress, the summary's tally and the
// report. It prints the summary and returns the outcomes, the tally and
// the command's error.
func runRollout(ctx context.Context, g *GlobalOptions, rep *ReportOptions, run rolloutRun) ([]runner.Outcome, *summary.Tally, error) {
	r, o := run.Set, run.Options
	p := g.newPrinter(r.Clusters, run.JSON)
	pr := g.newProgress(r.Clusters, p.JSON)
	var tally summary.Tally
	p.Out = output.NewSyncWriter(pr.Writer(g.Out))
	p.Notes = rolloutNotes(r.Fleet, o)
	to := sinks.Set{Printer: p, Tally: &tally, Progress: pr, Report: rep.collected, OnChange: run.OnChange, Diffs: g.diffStyle(false)}
	var outcomes []runner.Outcome
	if run.Delete {
		outcomes = run.Engine.Delete(ctx, r.Fleet, r.Clusters, run.Apps, o, to.Emit)
	} else {
		outcomes = run.Engine.Run(ctx, r, o, to.Emit)
	}
	pr.Finish()
	_, byName := fleet.Index(r.Clusters)
	err := finishRollout(ctx, p, outcomes, &tally, byName, o.DryRun, run.Verb)
	return outcomes, &tally, rep.finish(g, func() report.Report {
		return report.OfRollout(strings.ReplaceAll(run.Verb, " ", ""), r.Fleet, outcomes, &tally, rep.collected, o.DryRun)
	}, err)
}

// rolloutNotes are what a rollout's summary notes of its options: gates
// or tests skipped.
func rolloutNotes(f *fleet.Fleet, o rollout.Options) []string {
	switch {
	case o.SkipGates && o.Verifies():
		return []string{"Gates were skipped (--skip-gates): no test, check or soak ran, the earlier groups' verification was not required, and the revisions are unverified."}
	case o.SkipTests && slices.ContainsFunc(f.Apps, func(a fleet.App) bool { return a.Tests != "" }):
		return []string{"Tests were skipped (--skip-tests)."}
	}
	return nil
}

// promoted are the renders the promotion rule of a rollout of r holds
// its waves to (rollout.Options.Promote): r's, and those of the earlier
// groups' clusters that are not selected, rendered too (a render error
// stops the command before anything is written). Dry runs, rollbacks
// and --skip-gates have none.
func (s *SourceOptions) promoted(ctx context.Context, g *GlobalOptions, r *rendered.Set, o rollout.Options) ([]render.Result, error) {
	if !o.Gated() {
		return nil, nil
	}
	var names []string
	for _, c := range rollout.Upstream(r.Fleet, rollout.Waves(r.Fleet, r.Clusters), r.Clusters) {
		if _, err := s.Resolve(r.Fleet, []*fleet.Cluster{c}, g.namespace()); err == nil {
			names = append(names, c.Name) // an app of the run goes there
		}
	}
	if len(names) == 0 {
		return r.Results, nil
	}
	src := *s
	src.withTests, src.warm = false, nil
	if src.Manifests == "-" {
		return nil, fmt.Errorf("the earlier groups' clusters (%s) must have verified what -f - renders, and standard input is read once: select them too, or pass --skip-gates", strings.Join(names, ", "))
	}
	up, err := g.render(ctx, fleet.Selection{Clusters: names}, &src, true)
	if err != nil {
		return nil, fmt.Errorf("checking what the earlier groups verified (--skip-gates does not): %w", err)
	}
	return slices.Concat(r.Results, up.Results), nil
}
