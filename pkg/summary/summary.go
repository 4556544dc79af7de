package summary

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Rollout is the end of a write rollout (apply, delete, rollback): each
// cluster's outcome and what the tally counted for it.
type Rollout struct {
	Outcomes []runner.Outcome
	Tally    *Tally
	// Done is what a cluster the rollout went through is: "applied";
	// Nothing what it is when nothing was there to do: "nothing to
	// delete".
	Done    string
	Nothing string
	DryRun  bool
	// Group is a cluster's group.
	Group func(cluster string) string
	// RolledBack is what --atomic did for a cluster that failed with
	// err ("rolled back to r2", "rollback failed: …"), or "".
	RolledBack func(err error) string
}

// Result is the JSON form of one cluster's outcome.
type Result struct {
	Type    string `json:"type"`
	Cluster string `json:"cluster"`
	Group   string `json:"group"`
	// Batch is the cluster's batch of its group (groups[].batches), if
	// it has them.
	Batch string `json:"batch,omitempty"`
	State string `json:"state"`
	// Gates are the gates the cluster passed or failed: "tests of web
	// passed", "check smoke failed", "soak passed".
	Gates []string `json:"gates,omitempty"`
	// Revisions are the apps' current revisions after the run.
	Revisions map[string]int `json:"revisions,omitempty"`
	// Published are the artifacts a delivered cluster's tags point at
	// after the run, by app.
	Published map[string]string `json:"published,omitempty"`
	// Rollback says what --atomic did for a failed cluster: "rolled back
	// to r2", "rollback failed: …".
	Rollback string `json:"rollback,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Failed is how many clusters failed or were not started.
func (r *Rollout) Failed() int {
	failed := 0
	for _, oc := range r.Outcomes {
		if oc.State == runner.Failed || oc.State == runner.NotStarted {
			failed++
		}
	}
	return failed
}

// Results are the clusters' outcomes in their JSON form, for -o json.
func (r *Rollout) Results() []Result {
	out := make([]Result, 0, len(r.Outcomes))
	for _, oc := range r.Outcomes {
		res := Result{Type: "cluster", Cluster: oc.Cluster, Group: r.Group(oc.Cluster), Batch: oc.Batch, State: strings.ReplaceAll(string(oc.State), " ", ""), Gates: r.Tally.Gates(oc.Cluster), Revisions: r.Tally.Revisions(oc.Cluster), Published: r.Tally.Published(oc.Cluster), Rollback: r.rolledBack(oc.Err)}
		if oc.Err != nil {
			res.Error = oc.Err.Error()
		}
		out = append(out, res)
	}
	return out
}

// Print writes "Summary:", the notes, and a line per cluster on w (Lines).
func (r *Rollout) Print(w io.Writer, prefix *output.Prefixer, many int, notes []string) {
	lines := make([]Line, 0, len(r.Outcomes))
	for _, oc := range r.Outcomes {
		lines = append(lines, Line{Cluster: oc.Cluster, Text: r.line(oc)})
	}
	fmt.Fprintln(w, "Summary:")
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	Lines(w, prefix, many, " ", lines)
}

// rolledBack is RolledBack's note on err, if any.
func (r *Rollout) rolledBack(err error) string {
	if err == nil || r.RolledBack == nil {
		return ""
	}
	return r.RolledBack(err)
}

// line is what the summary says of a cluster: its state, its objects'
// changes, its gates and its error.
func (r *Rollout) line(oc runner.Outcome) string {
	state := r.Done
	if r.DryRun {
		state += " (server dry run)"
	}
	switch oc.State {
	case runner.Failed:
		state = "failed"
		if note := r.rolledBack(oc.Err); note != "" {
			state += ", " + note
		}
	case runner.NotStarted:
		state = "not started"
	case runner.Skipped:
		state = "skipped"
	}
	c := r.Tally.Actions(oc.Cluster)
	published := r.Tally.Published(oc.Cluster)
	switch {
	case len(published) > 0 && oc.State == runner.Succeeded:
		state = "published " + PublishedList(published)
		if r.DryRun {
			state = "would publish " + PublishedList(published)
		}
	case len(c) == 0 && oc.State == runner.Succeeded && r.Nothing != "":
		state = r.Nothing
	}
	line := state
	if len(c) > 0 {
		line += ": " + actionCounts(c)
	}
	if g := r.Tally.Gates(oc.Cluster); len(g) > 0 {
		line += "; " + strings.Join(g, ", ")
	}
	var (
		blocked  *rollout.BlockedError
		awaiting *rollout.AwaitingApproval
	)
	switch {
	case errors.As(oc.Err, &blocked):
		line += ": the earlier groups have not verified this release (above)"
	case errors.As(oc.Err, &awaiting):
		line += ": awaiting approval: " + awaiting.Of(oc.Cluster)
	case oc.Err != nil:
		line += ": " + strings.ReplaceAll(oc.Err.Error(), "\n", "; ")
	}
	return line
}

// PublishedList is "web sha256:0123456789ab, db sha256:…", by app: the
// artifacts a delivered cluster's tags point at, as the summary and the
// report say them.
func PublishedList(published map[string]string) string {
	var parts []string
	for _, app := range slices.Sorted(maps.Keys(published)) {
		parts = append(parts, app+" "+publish.Short(published[app]))
	}
	return strings.Join(parts, ", ")
}

// actionCounts is "2 created, 38 unchanged", in the order of the actions.
func actionCounts(c map[string]int) string {
	order := []string{string(change.Created), string(change.Configured), string(change.Adopted), string(change.Replaced), string(change.Unchanged), string(change.AfterCRD), string(change.Pruned), string(change.Deleted), string(change.Kept), string(change.Skipped), string(change.Failed), string(apply.Healthy), string(apply.Unhealthy)}
	var parts []string
	for _, a := range order {
		if n := c[a]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, a))
		}
	}
	return strings.Join(parts, ", ")
}

// Line is what a summary says of one cluster.
type Line struct {
	Cluster, Text string
}

// Lines writes lines on w, each after its cluster's prefix; with more
// than many, a line's text shared by several clusters is written once,
// where the first of them would be, as "N clusters" sep text: "36
// clusters applied: 40 unchanged".
func Lines(w io.Writer, prefix *output.Prefixer, many int, sep string, lines []Line) {
	grouped := len(lines) > many
	shared := map[string]int{}
	for _, l := range lines {
		shared[l.Text]++
	}
	said := map[string]bool{}
	for _, l := range lines {
		switch n := shared[l.Text]; {
		case !grouped || n == 1:
			fmt.Fprintf(w, "%s%s\n", prefix.Prefix(l.Cluster), l.Text)
		case !said[l.Text]:
			said[l.Text] = true
			fmt.Fprintf(w, "%d clusters%s%s\n", n, sep, l.Text)
		}
	}
}
