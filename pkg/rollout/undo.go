package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Undo is what a run's automatic rollback undoes (onFailure: rollback):
// the clusters the run changed in the group that failed past its
// maxFailures and in the groups before it, newest wave first, each with
// the apps the run recorded a new revision of.
type Undo struct {
	// Why is the failure: "production/canary failed (1 of 1 clusters;
	// maxFailures 0)".
	Why string
	// Clusters are in the order they are rolled back: the newest wave
	// first.
	Clusters []*fleet.Cluster
	// Apps are the apps to roll back on each cluster, by cluster.
	Apps map[string][]string
}

// Event is what an automatic rollback says before it starts: why, and
// the clusters it rolls back, newest first.
func (u *Undo) Event() UndoEvent {
	names := make([]string, len(u.Clusters))
	for i, c := range u.Clusters {
		names[i] = c.Name
	}
	return UndoEvent{Type: typeRollback, Automatic: true, Why: u.Why, Clusters: names}
}

// UndoEvent is an automatic rollback about to start.
type UndoEvent struct {
	Type      string   `json:"type"`
	Automatic bool     `json:"automatic"`
	Why       string   `json:"why"`
	Clusters  []string `json:"clusters"`
}

// Text is "Rolling back automatically (onFailure: rollback): …; newest
// first: canary-eu, stg-eu".
func (e UndoEvent) Text() string {
	return fmt.Sprintf("Rolling back automatically (onFailure: rollback): %s; newest first: %s", e.Why, strings.Join(e.Clusters, ", "))
}

// Undo returns what the run that returned outcomes rolls back
// automatically: nil when no wave failed past its budget (failedWave), when its
// group holds on failure (onFailure: hold, the default), or when the
// run changed nothing (a dry run, a rollback itself).
func (e *Engine) Undo(outcomes []runner.Outcome) *Undo {
	if e.r == nil || !e.gated() {
		return nil
	}
	f := e.r.Fleet
	failed, n := e.failedWave(outcomes)
	if failed < 0 {
		return nil
	}
	w := e.waves[failed]
	g := f.Group(w.Group)
	if !f.RollsBack(g) {
		return nil
	}
	scope := append(f.Upstream(w.Group), w.Group)
	u := &Undo{Why: fmt.Sprintf("%s failed (%d of %d clusters; maxFailures %s)", w.Name, n, len(w.Clusters), g.MaxFailures), Apps: map[string][]string{}}
	for i := failed; i >= 0; i-- {
		if !slices.Contains(scope, e.waves[i].Group) {
			continue
		}
		for _, name := range e.waves[i].Clusters {
			if apps := e.changed(name); len(apps) > 0 {
				u.Clusters = append(u.Clusters, e.clusters[name])
				u.Apps[name] = apps
			}
		}
	}
	if len(u.Clusters) == 0 {
		return nil
	}
	return u
}

// changed are the apps the run recorded a new revision of on cluster
// name, in name order.
func (e *Engine) changed(name string) []string {
	e.mu.Lock()
	run, ok := e.runs[name]
	e.mu.Unlock()
	if !ok {
		return nil
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	var out []string
	for app, rev := range run.revisions {
		if rev.New {
			out = append(out, app)
		}
	}
	slices.Sort(out)
	return out
}

// failedWave is the index of the run's first wave more of whose
// clusters failed than its budget tolerates, and how many did; -1 for
// none. A wave's budget is its group's maxFailures, a percentage taken of
// the wave's clusters, as the promotion rule takes it of a batch's: a
// canary of one fails its batch under maxFailures: 50%.
func (e *Engine) failedWave(outcomes []runner.Outcome) (int, int) {
	failed := map[string]int{}
	for _, oc := range outcomes {
		if oc.State == runner.Failed {
			failed[oc.Wave]++
		}
	}
	for i, w := range e.waves {
		if n := failed[w.Name]; n > e.r.Fleet.Group(w.Group).MaxFailures.Down(len(w.Clusters)) {
			return i, n
		}
	}
	return -1, 0
}

// newestFirst are ws in reverse order, each needing every wave before it
// in that order (no Needs).
func newestFirst(ws []runner.Wave) []runner.Wave {
	out := slices.Clone(ws)
	slices.Reverse(out)
	for i := range out {
		out[i].Needs = nil
	}
	return out
}

// undone skips a cluster whose current revision an automatic rollback
// made, when the run would apply again the render it took away
// (Release.Undid): it would fail again where it failed and roll back
// again, in every reconcile pass. --retry-rolled-back applies it (not
// --skip-gates, which skips what judges a release, not what undid one); a
// changed render goes. Only a fleet that rolls back automatically reads
// it (its apps' current revisions, as the promotion rule reads them).
func (e *Engine) undone(ctx context.Context, t target, results []render.Result) error {
	if !e.verifies() || e.o.RetryRolledBack || !e.r.Fleet.RollsBackAnywhere() {
		return nil
	}
	var held []string
	for _, res := range results {
		rel, err := t.current(ctx, res.App)
		if err != nil {
			return err
		}
		if rel.Undid != "" && rel.Undid == objects(res.Objects).Digest(rel.Key) {
			held = append(held, fmt.Sprintf("app %s: revision %d rolled this release back automatically", res.App, rel.Revision))
		}
	}
	if len(held) == 0 {
		return nil
	}
	return &runner.SkipError{Reason: strings.Join(held, "; ") + " (apply --retry-rolled-back applies it again)"}
}
