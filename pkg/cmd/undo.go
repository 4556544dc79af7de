package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/notify"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollback"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// undo rolls back what a failed run changed when the group that failed
// asks it (onFailure: rollback: rollout.Engine.Undo): each app the run
// changed, on each cluster of that group and the groups before it,
// back to its last verified revision, newest wave first, through the
// engine (tags moved back for delivered clusters), each recorded as
// "rollback (automatic) to N: why". It returns the command's error:
// runErr when nothing is undone; exit 6 when everything was; else exit
// 1, saying which clusters are where.
func (o *ApplyOptions) undo(ctx context.Context, e *rollout.Engine, set *rendered.Set, outcomes []runner.Outcome, runErr error, rec *notify.Recorder) error {
	u := e.Undo(outcomes)
	if u == nil || ctx.Err() != nil {
		return runErr
	}
	o.say(u)
	rec.RolledBack(u.Event(), "")
	opts := o.options(false, o.Parallel)
	opts.NewestFirst = true
	var all []string
	for _, apps := range u.Apps {
		all = append(all, apps...)
	}
	slices.Sort(all)
	f := set.Fleet
	chosen, results := rollback.Read(ctx, connector{o.GlobalOptions}, registry.Of(f), f, u.Clusters, slices.Compact(all), rollback.PreviousVerified, o.Parallel)
	results, missing := chosen.Only(u.Apps, u.Why, results)
	opts.Rollback = chosen
	chosen.Mask(o.mask, results)
	r := &rendered.Set{Fleet: f, Clusters: u.Clusters, Results: results, Mask: o.mask}
	back, _, err := runRollout(ctx, o.GlobalOptions, &o.ReportOptions, rolloutRun{Engine: o.newEngine(o.GlobalOptions), Set: r, Options: opts, Verb: "roll back", JSON: o.Output == "json"})
	outcome := "failed"
	if err == nil && len(missing) == 0 && ctx.Err() == nil {
		outcome = "succeeded"
	}
	rec.RolledBack(u.Event(), outcome)
	switch {
	case ctx.Err() != nil:
		return err // interrupted: said, exit 130
	case err == nil && len(missing) == 0:
		return &exit.Error{Code: exit.RolledBack, Err: fmt.Errorf("%s: rolled back automatically (onFailure: rollback) on %s, each to its last verified revision", u.Why, output.Plural(len(u.Clusters), "cluster"))}
	}
	return &exit.Error{Code: exit.Failed, Err: fmt.Errorf("%s, and the automatic rollback did not finish: everything is held; %s", u.Why, where(back, missing))}
}

// say tells, before the rollback starts, what it undoes and why.
func (o *ApplyOptions) say(u *rollout.Undo) {
	ev := u.Event()
	if o.Output == "json" {
		b, _ := json.Marshal(ev)
		fmt.Fprintln(o.Out, string(b))
		return
	}
	fmt.Fprintf(o.Out, "\n%s\n", ev.Text())
}

// where says which clusters an automatic rollback that did not finish
// left where: rolled back, not rolled back (why), or not started.
func where(outcomes []runner.Outcome, missing map[string][]rollback.Skip) string {
	var parts []string
	for _, oc := range outcomes {
		switch {
		case oc.State == runner.Succeeded && len(missing[oc.Cluster]) == 0:
			parts = append(parts, oc.Cluster+" rolled back")
		case oc.State == runner.Succeeded:
		case oc.Err != nil:
			parts = append(parts, oc.Cluster+" still on the failed release ("+string(oc.State)+": "+oc.Err.Error()+")")
		default:
			parts = append(parts, oc.Cluster+" still on the failed release ("+string(oc.State)+")")
		}
	}
	for _, cluster := range slices.Sorted(maps.Keys(missing)) {
		for _, s := range missing[cluster] {
			parts = append(parts, fmt.Sprintf("%s: %s not rolled back (%s)", cluster, s.App, s.Reason))
		}
	}
	return strings.Join(parts, "; ")
}
