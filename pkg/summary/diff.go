package summary

import (
	"fmt"
	"io"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
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
