package rollout

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// skipped says the apps a rollback skips on a cluster, and returns the
// skip, or nil when it skips none it was asked to roll back (an app with
// nothing to roll back there is said, and no failure).
func (e *Engine) skipped(cluster string) error {
	var reasons []string
	for _, s := range e.o.Rollback.Skipped(cluster) {
		e.emit(skipEvent{Type: typeSkip, Cluster: cluster, App: s.App, Reason: s.Reason, Nothing: s.Nothing})
		if !s.Nothing {
			reasons = append(reasons, s.Reason)
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return &runner.SkipError{Reason: strings.Join(reasons, "; ")}
}

// record says how an app's apply to a cluster is recorded in its
// history: the plugin version, the source's git commit, and what made it
// (an apply, or a rollback to an earlier revision).
func (e *Engine) record(ctx context.Context, cluster string, res render.Result) *apply.Record {
	rev, ok := e.o.Rollback.Record(cluster, res.App)
	if !ok {
		rev.Description, rev.Chart = "apply", res.Chart
		e.mu.Lock()
		if e.outside[e.clusters[cluster].Group] {
			rev.Description = "apply outside the deploy windows, --ignore-windows"
		}
		e.mu.Unlock()
		rev.Source = e.source(ctx, res)
		rev.Sensitive = e.r.Mask.In(objectMaps(res.Objects)...)
	}
	return &apply.Record{Revision: rev, Limit: e.o.HistoryLimit}
}

// inDependencyOrder orders items (apps, or their renders: name says
// which app each is) so that every app comes after the apps it depends
// on.
func inDependencyOrder[T any](f *fleet.Fleet, items []T, name func(T) string) []T {
	names := make([]string, len(items))
	byApp := make(map[string]T, len(items))
	for i, it := range items {
		names[i] = name(it)
		byApp[names[i]] = it
	}
	out := make([]T, 0, len(items))
	for _, n := range f.DependencyOrder(names) {
		out = append(out, byApp[n])
	}
	return out
}

// dependedOn is an app of the run that depends on app, or "" for none.
func dependedOn(f *fleet.Fleet, app string, results []render.Result) string {
	for _, r := range results {
		if a := f.App(r.App); a != nil && slices.Contains(a.DependsOn, app) {
			return a.Name
		}
	}
	return ""
}

// objectMaps are objs' contents.
func objectMaps(objs []*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.Object
	}
	return out
}
