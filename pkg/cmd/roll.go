package cmd

import (
	"context"
	"slices"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/notify"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/report"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sinks"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/trace"
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
	OnChange func(cluster, app, action string)
	// Record, when set, is told the run's events, its start and its end
	// (the fleet file's notify: sinks); Trace records them as a trace.
	Record *notify.Recorder
	Trace  *trace.Release
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
		emit := to.Emit
		if rec, tr := run.Record, run.Trace; rec != nil || tr != nil {
			rec.Started()
			emit = func(ev rollout.Event) { tr.Observe(ev); rec.Observe(ev); to.Emit(ev) }
		}
		outcomes = run.Engine.Run(ctx, r, o, emit)
		run.Trace.End(outcomes)
		run.Record.Finished(outcomes, nil)
	}
	pr.Finish()
	// A delete's line is "done: 2 deleted", not "deleted: 2 deleted".
	done := map[string]string{"apply": "applied", "delete": "done", "roll back": "rolled back"}[run.Verb]
	sum := summary.Rollout{Outcomes: outcomes, Tally: &tally, Done: done, Nothing: "nothing to " + run.Verb, DryRun: o.DryRun, Group: func(c string) string { return r.Fleet.Cluster(c).Group }, RolledBack: rollout.RolledBack}
	err := sum.Finish(ctx, p, run.Verb)
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
