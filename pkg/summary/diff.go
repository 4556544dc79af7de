package summary

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Diff is the end of a diff: each cluster's outcome and its counts.
type Diff struct {
	Outcomes  []runner.Outcome
	Summaries map[string]diff.Summary
}

// DiffResult is the JSON form of one cluster's counts.
type DiffResult struct {
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

// Failed is how many clusters could not be diffed (skipped ones aside).
func (d Diff) Failed() int {
	failed := 0
	for _, oc := range d.Outcomes {
		if oc.State != runner.Succeeded && oc.State != runner.Skipped {
			failed++
		}
	}
	return failed
}

// Differs reports whether any cluster differs.
func (d Diff) Differs() bool {
	for _, oc := range d.Outcomes {
		if d.Summaries[oc.Cluster].Differs() {
			return true
		}
	}
	return false
}

// Results are the clusters' counts in their JSON form, for -o json.
func (d Diff) Results() []DiffResult {
	out := make([]DiffResult, 0, len(d.Outcomes))
	for _, oc := range d.Outcomes {
		s := d.Summaries[oc.Cluster]
		res := DiffResult{Type: "summary", Cluster: oc.Cluster, Create: s.Create, Change: s.Change, Prune: s.Prune, Unchanged: s.Unchanged, Conflicts: s.Conflicts, Errors: s.Errors}
		if oc.Err != nil {
			res.Error = oc.Err.Error()
		}
		out = append(out, res)
	}
	return out
}

// Print writes a line per cluster on w (Lines): its counts, or why it
// was not diffed.
func (d Diff) Print(w io.Writer, prefix *output.Prefixer, many int) {
	lines := make([]Line, 0, len(d.Outcomes))
	for _, oc := range d.Outcomes {
		lines = append(lines, Line{Cluster: oc.Cluster, Text: diffLine(oc, d.Summaries[oc.Cluster])})
	}
	Lines(w, prefix, many, ": ", lines)
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

// Finish prints the summary on p (a line per cluster, or -o json's
// results) and says how the diff ended, as Exit does.
func (d Diff) Finish(ctx context.Context, p *output.Printer, gathered error, external func() error) error {
	p.Close()
	if p.JSON {
		for _, res := range d.Results() {
			p.Event(res)
		}
	} else {
		d.Print(p.Out, p.Prefix, p.Many)
	}
	return d.Exit(ctx, gathered, external)
}

// Exit says how a diff ended, as its exit (kubectl diff's convention):
// 2 when the diffs could not be gathered for the external diff program
// (gathered), when that program failed, or when a cluster could not be
// diffed; 130 when interrupted (ctx done); Skipped's for skipped
// clusters; 1 when a cluster differs; else nil. external, when not nil,
// runs the external diff program, and only when a cluster differs.
func (d Diff) Exit(ctx context.Context, gathered error, external func() error) error {
	if gathered != nil {
		return &exit.Error{Code: exit.DiffError, Err: gathered}
	}
	failed, differs := d.Failed(), d.Differs()
	if external != nil && differs {
		if err := external(); err != nil {
			return &exit.Error{Code: exit.DiffError, Err: err}
		}
	}
	switch {
	case ctx.Err() != nil:
		return &exit.Error{Code: exit.Interrupted}
	case failed > 0:
		return &exit.Error{Code: exit.DiffError, Err: fmt.Errorf("%d of %d clusters could not be diffed", failed, len(d.Outcomes))}
	}
	if err := Skipped(d.Outcomes, exit.DiffError); err != nil {
		return err
	}
	if differs {
		return &exit.Error{Code: exit.Failed}
	}
	return nil
}

// WithPlan is a diff's exit once writing its plan (--out) failed with
// perr: the plan's error, as exit 2, when the diff went well or only
// found differences (a plan was asked for and none was written);
// otherwise err, the diff's own, and perr is said on w. A nil perr
// leaves err as it is.
func WithPlan(err, perr error, w io.Writer) error {
	if perr == nil {
		return err
	}
	var ee *exit.Error
	if err == nil || errors.As(err, &ee) && ee.Code == exit.Failed {
		return &exit.Error{Code: exit.DiffError, Err: perr}
	}
	fmt.Fprintln(w, "error:", perr)
	return err
}
