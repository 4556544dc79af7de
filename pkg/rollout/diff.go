package rollout

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/version"
)

// DiffOptions are what a diff of the fleet does.
type DiffOptions struct {
	// ForceConflicts diffs as apply --force-conflicts applies;
	// ShowSecrets leaves Secret values unmasked.
	ForceConflicts, ShowSecrets bool
	// All diffs every object, none skipped as unchanged (an external
	// diff program is given every object, as kubectl diff gives it).
	All bool
	// Plan keeps, per cluster, what apply --plan checks (Diffs.Plans).
	Plan bool
	// Parallel clusters at once, Concurrency requests per cluster.
	Parallel, Concurrency int
}

// Diffs is what Diff found: each cluster's outcome, its counts and, with
// Plan, its apps' plans.
type Diffs struct {
	Outcomes  []runner.Outcome
	Summaries map[string]diff.Summary
	Plans     map[string][]plan.App
}

// Diff says what an apply of r would do, cluster by cluster (Parallel
// at once, in no wave order: nothing is written) and app by app, as the
// DiffEvent apply --diff says before its writes, from the same call
// (diffApp). Each cluster ends with an EndEvent; its render is let go
// then (rendered.Set.Forget), and made again when it starts if it was
// let go before (shed).
func (e *Engine) Diff(ctx context.Context, r *rendered.Set, o DiffOptions, sink Sink) Diffs {
	e.begin(r, Options{}, sink)
	out := Diffs{Summaries: map[string]diff.Summary{}, Plans: map[string][]plan.App{}}
	var mu sync.Mutex
	names := make([]string, len(r.Clusters))
	for i, c := range r.Clusters {
		names[i] = c.Name
	}
	r.ShedAll(Past(r.Clusters, o.Parallel))
	out.Outcomes = runner.Run(ctx, runner.Every(names), o.Parallel, func(ctx context.Context, name string) error {
		s, plans, err := e.diffCluster(ctx, e.clusters[name], o)
		err = e.Connector.Explain(ctx, name, err)
		e.Connector.Idle(name)
		r.Forget(name) // diffed: nothing reads its render again
		mu.Lock()
		out.Summaries[name], out.Plans[name] = s, plans
		mu.Unlock()
		e.emit(EndEvent{Cluster: name, Err: err})
		return err
	})
	return out
}

// diffCluster diffs the apps of one cluster, through its target.
func (e *Engine) diffCluster(ctx context.Context, c *fleet.Cluster, o DiffOptions) (diff.Summary, []plan.App, error) {
	if err := e.r.Rerender(c.Name); err != nil {
		return diff.Summary{}, nil, err
	}
	return e.runOf(c.Name).target.diff(ctx, o)
}

// diff says what an apply would change on a cluster written to, app by
// app (DiffEvents), asking its server; with o.Plan, what apply --plan
// checks of each app.
func (k *kubeTarget) diff(ctx context.Context, o DiffOptions) (diff.Summary, []plan.App, error) {
	e, c := k.e, k.run.cluster
	client, err := e.Connector.Connect(ctx, e.r.Fleet, c)
	if err != nil {
		return diff.Summary{}, nil, err
	}
	var (
		all   []diff.Object
		plans []plan.App
	)
	results := e.r.Of(c.Name)
	for _, res := range results {
		var set *inventory.Set
		if o.Plan {
			// Read before the objects: an apply after this makes the
			// plan stale.
			if set, err = inventory.Load(ctx, client, res.App); err != nil {
				return diff.Summarize(all), plans, fmt.Errorf("app %s: %w", res.App, err)
			}
		}
		diffs, err := e.diffApp(ctx, client, c.Name, res, results, o)
		if err != nil {
			return diff.Summarize(all), plans, fmt.Errorf("app %s: %w", res.App, err)
		}
		e.emit(DiffEvent{Cluster: c.Name, App: res.App, Diffs: diffs})
		if o.Plan {
			p, err := e.planOf(ctx, client, res, set, diffs)
			if err != nil {
				return diff.Summarize(all), plans, fmt.Errorf("app %s: %w", res.App, err)
			}
			plans = append(plans, p)
		}
		all = append(all, diffs...)
	}
	s := diff.Summarize(all)
	if s.Errors > 0 {
		return s, plans, fmt.Errorf("%s failed", output.Plural(s.Errors, "object"))
	}
	return s, plans, nil
}

// diffApp is what an apply of res would do on a cluster: the one diff of
// diff and apply --diff.
func (e *Engine) diffApp(ctx context.Context, client *kube.Client, cluster string, res render.Result, results []render.Result, o DiffOptions) ([]diff.Object, error) {
	f := e.r.Fleet
	return diff.Run(ctx, client, res.Objects, diff.Options{
		App: res.App, FieldManager: apply.FieldManager, Force: o.ForceConflicts, ShowSecrets: o.ShowSecrets, Mask: e.r.Mask, Concurrency: o.Concurrency, Context: 3, Cluster: cluster,
		Ignore: f.IgnoreRules(res.App), SkipUnchanged: !o.All, Version: version.Get(), Others: othersOf(results, res.App), Fleet: f.Metadata.Name,
	})
}

// planOf is what apply --plan checks of an app: its render's digest and
// source, the objects the diff saw, and its set as read before them.
func (e *Engine) planOf(ctx context.Context, client *kube.Client, res render.Result, set *inventory.Set, diffs []diff.Object) (plan.App, error) {
	objs, err := plan.Objects(diffs)
	if err != nil {
		return plan.App{}, err
	}
	key, err := digest.KeyOf(ctx, client)
	if err != nil {
		return plan.App{}, err
	}
	return plan.App{App: res.App, Digest: digest.Render(res.Objects, key), Source: e.source(ctx, res), Objects: objs, Set: plan.SetOf(set)}, nil
}

// source is the git state of res's source, read once per run.
func (e *Engine) source(ctx context.Context, res render.Result) revision.Source {
	if a := res.Source.Artifact; a != "" {
		return revision.Source{Artifact: a} // pinned by its digest
	}
	src, _ := e.sources.Do(res.Source.Path, func() (revision.Source, error) {
		return revision.SourceOf(ctx, res.Source.Path, e.r.Fleet.Path), nil
	})
	return src
}

// WritePlan writes Plan to file, for apply --plan (diff --out).
func (d Diffs) WritePlan(f *fleet.Fleet, file string, created time.Time) error {
	p, err := d.Plan(f, created)
	if err != nil {
		return err
	}
	if err := p.Write(file); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	return nil
}

// Plan is what the diff saw, as a plan for apply --plan (DiffOptions.Plan
// made the diff read it), when it saw every cluster whole.
func (d Diffs) Plan(f *fleet.Fleet, created time.Time) (*plan.Plan, error) {
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, Created: created.UTC().Truncate(time.Second), Fleet: f.Metadata.Name}
	for _, oc := range d.Outcomes {
		if oc.State != runner.Succeeded {
			return nil, fmt.Errorf("no plan written: cluster %s was not diffed whole (%s)", oc.Cluster, oc.State)
		}
		p.Clusters = append(p.Clusters, plan.Cluster{Name: oc.Cluster, Group: f.Cluster(oc.Cluster).Group, Apps: d.Plans[oc.Cluster]})
	}
	return p, nil
}
