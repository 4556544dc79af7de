package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/status"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// OfRollout is the report of apply, rollback or delete (command): each
// cluster's outcome and counts (tally), and, from the collector, its
// apps and its diff with --diff.
func OfRollout(command string, f *fleet.Fleet, outcomes []runner.Outcome, tally *summary.Tally, rc *Collector, dryRun bool) Report {
	rep := Report{Command: command}
	if dryRun {
		rep.Command += " (server dry run)"
	}
	for _, oc := range outcomes {
		n := tally.Actions(oc.Cluster)
		c := Cluster{Name: oc.Cluster, Group: groupOf(f, oc.Cluster), State: string(oc.State), Error: errString(oc.Err),
			Counts: &Counts{Create: n[string(change.Created)], Change: n[string(change.Configured)] + n[string(change.Replaced)] + n[string(change.Adopted)], Prune: n[string(change.Pruned)], Unchanged: n[string(change.Unchanged)]}}
		switch oc.State {
		case runner.Failed, runner.NotStarted:
			c.Failed = true
			if note := rollout.RolledBack(oc.Err); note != "" {
				c.State += ", " + note
			}
		case runner.Skipped:
			c.Skipped = true
		}
		c.Measurements = rc.MeasurementsOf(oc.Cluster)
		if published := tally.Published(oc.Cluster); len(published) > 0 {
			// A delivered cluster: what its tags point at, and what its
			// Flux was seen to apply.
			c.State += "; published " + summary.PublishedList(published)
			for _, g := range tally.Gates(oc.Cluster) {
				c.State += "; " + g
			}
		}
		if sources := tally.Sources(oc.Cluster); len(sources) > 0 {
			// What was rendered, pinned: the artifacts read from registries.
			for _, app := range slices.Sorted(maps.Keys(sources)) {
				repo, d, _ := strings.Cut(sources[app], "@")
				c.State += "; " + app + " from " + repo + "@" + revision.ShortDigest(d)
			}
		}
		c.Apps, c.Diff = rc.Of(oc.Cluster)
		rep.Clusters = append(rep.Clusters, c)
	}
	return rep
}

// OfStatus is status's report: each cluster's apps and their state.
func OfStatus(f *fleet.Fleet, outcomes []runner.Outcome, results map[string][]status.App) Report {
	rep := Report{Command: "status"}
	for _, oc := range outcomes {
		c := Cluster{Name: oc.Cluster, Group: groupOf(f, oc.Cluster), State: "ok", Error: errString(oc.Err)}
		switch {
		case oc.State == runner.Skipped:
			c.State, c.Skipped = "skipped", true
		case oc.Err != nil:
			c.State, c.Failed = "error", true
		}
		for _, a := range results[oc.Cluster] {
			ra := App{Name: a.App, State: a.CellWithRevision(), Failed: !a.OK()}
			if ra.Failed && !c.Failed && !c.Skipped {
				c.State, c.Failed = "not ok", true
			}
			c.Apps = append(c.Apps, ra)
		}
		rep.Clusters = append(rep.Clusters, c)
	}
	return rep
}

// OfDiff is diff's report: each cluster's counts (summaries), and,
// from the collector, its apps and its diff (left out with
// showSecrets).
func OfDiff(f *fleet.Fleet, outcomes []runner.Outcome, summaries map[string]diff.Summary, rc *Collector, showSecrets bool) Report {
	rep := Report{Command: "diff"}
	for _, oc := range outcomes {
		s := summaries[oc.Cluster]
		c := Cluster{Name: oc.Cluster, Group: groupOf(f, oc.Cluster), Counts: &Counts{Create: s.Create, Change: s.Change, Prune: s.Prune, Unchanged: s.Unchanged}, Error: errString(oc.Err)}
		switch {
		case oc.State == runner.Skipped:
			c.State, c.Skipped = "skipped", true
		case oc.State == runner.NotStarted:
			c.State, c.Skipped = "not diffed (interrupted)", true
		case oc.Err != nil:
			c.State, c.Failed = "error", true
		case s.Differs():
			c.State = "differs"
		default:
			c.State = "in sync"
		}
		c.Apps, c.Diff = rc.Of(oc.Cluster)
		if showSecrets && s.Differs() {
			c.Diff = "(diffs are left out of reports with --show-secrets)"
		}
		rep.Clusters = append(rep.Clusters, c)
	}
	return rep
}

func groupOf(f *fleet.Fleet, cluster string) string {
	if c := f.Cluster(cluster); c != nil {
		return c.Group
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// DiffApp is an app's line in diff's report: "in sync", or its counts.
func DiffApp(app string, diffs []diff.Object) App {
	a := App{Name: app, State: "in sync"}
	if s := diff.Summarize(diffs); s.Differs() {
		a.State = fmt.Sprintf("%d to create, %d to change, %d to prune", s.Create, s.Change, s.Prune)
	}
	return a
}
