package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollback"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/version"
)

// RollbackOptions are the options of "kubectl fleet rollback".
type RollbackOptions struct {
	ApplyOptions
	// Apps are --app: the apps to roll back; none: every app with
	// revisions on each cluster.
	Apps []string
	// ToRevision is --to-revision; 0: the latest earlier revision of
	// another render (previous).
	ToRevision int
}

// NewCmdRollback returns the rollback command.
func NewCmdRollback(g *GlobalOptions) *cobra.Command {
	o := &RollbackOptions{ApplyOptions: ApplyOptions{GlobalOptions: g}}
	cmd := &cobra.Command{
		Use:   "rollback",
		Short: "Re-apply an earlier revision of apps on the selected clusters",
		Long: `Bring apps back to a revision kept in each cluster (see "kubectl fleet
history"): the previous one, or --to-revision N. The revision's stored
objects are re-applied and what it did not have is pruned, through the same
rollout as apply: groups in order with their maxParallel and maxFailures,
identity pins verified, protected groups confirmed, --dry-run=server,
--diff, --wait, -o json. Nothing is rendered, and the groups' checks, soaks
and the apps' tests do not run.

A rollback is itself a new revision ("rollback to 3"). A cluster that does
not have the revision asked for is reported and skipped, not guessed; it
does not count against its group's maxFailures.

Without --app, every app with revisions on a cluster is rolled back.
--to-revision needs exactly one --app: revision numbers are per app.

Exit codes:
  0    every selected cluster rolled back
  1    a cluster failed, was skipped or not started, or an error
  130  interrupted (Ctrl-C)`,
		Example: `  kubectl fleet rollback --app web --group staging
  kubectl fleet rollback --app web --to-revision 3 --wait
  kubectl fleet rollback --app web --dry-run=server --diff`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseSet(cmd, "does not apply to rollback, which re-applies the objects as they were stored", "namespace"); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.WriteOptions.addFlags(cmd, "rollback", "do not ask before writing to protected groups", "clusters rolled back at once at most (a group's maxParallel may lower it)")
	g.addSkipUnreachableFlag(cmd)
	cmd.Flags().StringSliceVar(&o.Apps, "app", nil, "the app to roll back (repeatable); default: every app with revisions on the cluster")
	cmd.Flags().IntVar(&o.ToRevision, "to-revision", 0, "the revision to go back to (default: the latest before the current with another render)")
	o.addRolloutFlags(cmd)
	return cmd
}

// Validate checks the flags.
func (o *RollbackOptions) Validate() error {
	for _, a := range o.Apps {
		if err := validateAppName(a); err != nil {
			return fmt.Errorf("--app: %w", err)
		}
	}
	switch {
	case o.ToRevision < 0:
		return fmt.Errorf("--to-revision must be 1 or more")
	case o.ToRevision > 0 && len(o.Apps) != 1:
		return fmt.Errorf("--to-revision %d needs exactly one --app: revision numbers are per app", o.ToRevision)
	}
	return o.ApplyOptions.Validate()
}

// Run rolls back.
func (o *RollbackOptions) Run(ctx context.Context) error {
	f, clusters, err := o.selected(o.Selection)
	if err != nil {
		return err
	}
	if err := checkContexts(ctx, o.GlobalOptions, f, clusters); err != nil {
		return err
	}
	plan, results := o.plan(ctx, f, clusters)
	o.rollback = plan
	return o.rollout(ctx, &rendered.Set{Fleet: f, Clusters: clusters, Results: results}, "roll back")
}

// rollbackPlan is what a rollback found in each cluster before writing
// anything: the revisions to re-apply (as the run's results), the apps
// skipped and why, the clusters whose revisions could not be read. A nil
// plan is an apply's: nothing skipped, nothing failed.
type rollbackPlan struct {
	mu      sync.Mutex
	errs    map[string]error
	skips   map[string][]rollback.Skip
	records map[string]revision.Revision // by cluster/app
}

// failed is why a cluster's revisions could not be read, if they could not.
func (pl *rollbackPlan) failed(cluster string) error {
	if pl == nil {
		return nil
	}
	return pl.errs[cluster]
}

// SkipEvent is the JSON form of an app a rollback skipped on a cluster.
type SkipEvent struct {
	Type    string `json:"type"`
	Cluster string `json:"cluster"`
	App     string `json:"app"`
	Reason  string `json:"reason"`
}

// skipped prints the apps skipped on a cluster and returns the skip, or
// nil when none was.
func (pl *rollbackPlan) skipped(cluster string, p *printer, w io.Writer) error {
	if pl == nil || len(pl.skips[cluster]) == 0 {
		return nil
	}
	var reasons []string
	for _, s := range pl.skips[cluster] {
		reasons = append(reasons, s.Reason)
		switch {
		case p.json:
			p.event(SkipEvent{Type: "skip", Cluster: cluster, App: s.App, Reason: s.Reason})
		case s.App == "":
			fmt.Fprintf(w, "skipped: %s\n", s.Reason)
		default:
			fmt.Fprintf(w, "%s: skipped: %s\n", s.App, s.Reason)
		}
	}
	return &runner.SkipError{Reason: strings.Join(reasons, "; ")}
}

// recordOf is how a rollback records an app's new revision: its
// description and the source of the revision it brings back.
func (pl *rollbackPlan) recordOf(cluster, app string) (revision.Revision, bool) {
	if pl == nil {
		return revision.Revision{}, false
	}
	r, ok := pl.records[cluster+"/"+app]
	return r, ok
}

// plan reads, on every selected cluster at once, the revision each app
// goes back to. Nothing is written.
func (o *RollbackOptions) plan(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster) (*rollbackPlan, []render.Result) {
	plan := &rollbackPlan{errs: map[string]error{}, skips: map[string][]rollback.Skip{}, records: map[string]revision.Revision{}}
	perCluster := make([][]render.Result, len(clusters))
	var wg sync.WaitGroup
	sem := make(chan struct{}, o.Parallel)
	for i, c := range clusters {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := o.planCluster(ctx, f, c, plan)
			if err != nil {
				plan.mu.Lock()
				plan.errs[c.Name] = err
				plan.mu.Unlock()
			}
			perCluster[i] = res
		}()
	}
	wg.Wait()
	return plan, slices.Concat(perCluster...)
}

func (o *RollbackOptions) planCluster(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster, plan *rollbackPlan) ([]render.Result, error) {
	client, err := o.connect(ctx, f, c)
	if err != nil {
		return nil, err
	}
	targets, skips, err := rollback.Choose(ctx, client, f.Metadata.Name, o.Apps, o.ToRevision)
	var out []render.Result
	plan.mu.Lock()
	defer plan.mu.Unlock()
	plan.skips[c.Name] = append(plan.skips[c.Name], skips...)
	for _, t := range targets {
		out = append(out, render.Result{Target: render.Target{Cluster: render.ClusterOf(f, c), App: t.App}, Objects: t.Objects})
		plan.records[c.Name+"/"+t.App] = t.Record
	}
	return out, err
}

// atomicError is a cluster's failure under --atomic, with what the
// rollback did: "rolled back to r2", "rollback failed: …".
type atomicError struct {
	err  error
	note string
}

func (e *atomicError) Error() string { return e.err.Error() }
func (e *atomicError) Unwrap() error { return e.err }

// rolledBack is what --atomic did for a cluster that failed with err, or
// "".
func rolledBack(err error) string {
	var a *atomicError
	if errors.As(err, &a) {
		return a.note
	}
	return ""
}

// restore puts each app of before back the way it was before this apply,
// last applied first: its revision then re-applied with prune, or, for an
// app this apply installed, every object of it deleted. It says what it
// did, for the summary.
func (o *ApplyOptions) restore(ctx context.Context, client *kube.Client, cluster string, before []*inventory.Set, f *fleet.Fleet, p *printer, w io.Writer, tally *summary.Tally) string {
	var (
		done, failed []string
		target       string // with one app: what it went back to
	)
	for _, set := range slices.Backward(before) {
		app := set.App
		label := app + " (rollback)"
		printed := consumers{p: p}.objects(cluster, label, label, false) // not counted: the summary counts this apply's objects
		switch {
		case !set.Exists:
			if _, err := apply.Delete(ctx, client, f.Metadata.Name, app, false, printed); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", app, err))
			} else {
				done, target = append(done, app+" removed"), ": "+app+" removed"
			}
		case set.Revision == 0:
			failed = append(failed, fmt.Sprintf("%s: no revision was recorded before this apply", app))
		default:
			rev, objs, err := revision.Load(ctx, client, app, set.Revision)
			if err == nil {
				rec := rollout.Recorded(&apply.Record{Revision: revision.Revision{Description: fmt.Sprintf("rollback to %d", set.Revision), Source: rev.Source}, Limit: o.HistoryLimit}, cluster, app, label, consumers{p: p, tally: tally}.emit)
				rec.User = o.locks.User(client, cluster)
				err = apply.Run(ctx, client, apply.Config{
					App: app, Fleet: f.Metadata.Name, Version: version.Get(), Objects: objs, Force: o.ForceConflicts, Prune: true, AllowEmpty: true, Ignore: f.IgnoreRules(app), Namespace: rev.Namespace,
					Wait: o.Wait, Timeout: o.Timeout, Concurrency: o.Concurrency, Report: printed,
					Record: rec,
				})
				if n := tally.Revisions(cluster)[app]; err == nil && n > set.Revision {
					rec.Revision.Verification = rev.Verification
					o.writeVerdict(ctx, client, app, n, restored(rec.Revision))
				}
			}
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", app, err))
			} else {
				done, target = append(done, fmt.Sprintf("%s to r%d", app, set.Revision)), fmt.Sprintf(" to r%d", set.Revision)
			}
		}
	}
	switch {
	case len(failed) > 0:
		return "rollback failed: " + strings.Join(failed, "; ")
	case len(done) == 1:
		return "rolled back" + target
	}
	return "rolled back (" + strings.Join(done, ", ") + ")"
}
