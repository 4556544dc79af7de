package rendered

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// Set is a run's render: the fleet, the selected clusters and every
// rendered (cluster, app) pair, in cluster then app order. Of and TestsOf
// index Results and Tests on their first call: the fields are set before,
// and not changed after.
type Set struct {
	Fleet    *fleet.Fleet
	Clusters []*fleet.Cluster
	Results  []render.Result
	// Tests are the apps' rendered tests, when asked for (Config.Tests).
	Tests []render.Result
	// Mask holds the values the render decrypted: whoever prints the
	// set's objects, or diffs of them, masks them.
	Mask *mask.Set

	once sync.Once
	of   map[string][]render.Result
	// shed are the clusters whose objects were let go before their work,
	// to be made again (Shed, Rerender); mu guards it.
	mu   sync.Mutex
	shed map[string]bool
	// gathered are the clusters whose results Of copied (out of order),
	// not shared with Results.
	gathered map[string]bool
	tests    map[[2]string][]*unstructured.Unstructured
}

// Render makes the request (NewRequest), renders every target, and with
// c.Tests every app's tests, then starts c.Warm. Any render error fails
// the whole render, every error reported (render.Failed), before anything
// is written to a cluster or asked of it but what the render reads
// (attributesFrom, a chart's capabilities): no lock, no identity, until
// every render and decryption of the run succeeded.
func Render(ctx context.Context, c Config) (*Set, error) {
	pl, err := NewRequest(ctx, c)
	if err != nil {
		return nil, err
	}
	var shed map[string]bool
	if c.Shed != nil {
		shed = c.Shed(pl.Clusters)
	}
	results, shed := pl.renderShedding(ctx, c.Engine, shed, c.Shedding)
	var tests []render.Result
	if c.Tests {
		tests = c.Engine.Render(ctx, pl.Targets(true))
	}
	var errs []error
	for _, r := range slices.Concat(results, tests) {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	if len(errs) > 0 {
		return nil, render.Failed(errs)
	}
	if c.Warm != nil {
		c.Warm(ctx, pl)
	}
	return &Set{Fleet: pl.Fleet, Clusters: pl.Clusters, Results: results, Tests: tests, Mask: c.Engine.Secrets.Sensitive(), shed: shed}, nil
}

// shedChunk is how many clusters renderShedding renders at once.
const shedChunk = 64

// renderShedding is Render (the method), that lets go of the objects of
// the clusters of shed (Config.Shed) as soon as they rendered, each
// chunk of clusters at a time, when every result of the cluster can be
// made again (Set.Shed): the render of a 1,000-cluster fleet applied ten
// at a time then never holds every cluster's objects. It returns the
// clusters it shed.
func (p *Request) renderShedding(ctx context.Context, e *render.Engine, shed map[string]bool, shedding func([]render.Result)) ([]render.Result, map[string]bool) {
	if len(shed) == 0 {
		return p.Render(ctx, e), nil
	}
	targets := p.Targets(false)
	results := make([]render.Result, 0, len(targets))
	done := map[string]bool{}
	start, end, clusters := 0, 0, 0
	flush := func() {
		chunk := e.Render(ctx, targets[start:end])
		for cluster := range runs(chunk, resultCluster) {
			createNamespacesOf(cluster)
			if name := cluster[0].Cluster.Name; shed[name] && canAgain(cluster) {
				if shedding != nil {
					shedding(cluster)
				}
				for i := range cluster {
					cluster[i].Objects = nil
				}
				done[name] = true
			}
		}
		results = append(results, chunk...)
		start, clusters = end, 0
	}
	for cluster := range runs(targets, targetCluster) {
		end += len(cluster)
		if clusters++; clusters == shedChunk {
			flush()
		}
	}
	if start < end {
		flush()
	}
	return results, done
}

// canAgain reports whether every result of a cluster rendered and can be
// made again from memory: from the build its source shares with the
// fleet, or packed (render.Result.Pack) when nothing else makes it again.
func canAgain(results []render.Result) bool {
	for i := range results {
		if results[i].Pack() != nil { // a failed render's error too
			return false
		}
	}
	return true
}

// Render renders every target of the request as apply sends it: with
// the Namespaces apps create (createNamespaces). A result's error is
// its own; Render (the function) fails on any.
func (p *Request) Render(ctx context.Context, e *render.Engine) []render.Result {
	results := e.Render(ctx, p.Targets(false))
	createNamespaces(results)
	return results
}

// runs yields each run of consecutive items of the same cluster, capped
// at its end (an append to one copies).
func runs[T any](items []T, cluster func(T) string) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		for i := 0; i < len(items); {
			j := i + 1
			for j < len(items) && cluster(items[j]) == cluster(items[i]) {
				j++
			}
			if !yield(items[i:j:j]) {
				return
			}
			i = j
		}
	}
}

func resultCluster(r render.Result) string { return r.Cluster.Name }
func targetCluster(t render.Target) string { return t.Cluster.Name }

// createNamespaces puts the Namespace an app asks to be created first in
// its render, by the rule of render.NamespacesToCreate on each cluster.
// It is then the app's like any object it renders: applied before the
// others, diffed, recorded, pruned under the Namespace guards.
func createNamespaces(results []render.Result) {
	for cluster := range runs(results, resultCluster) {
		createNamespacesOf(cluster)
	}
}

// createNamespacesOf is createNamespaces for the results of one cluster.
func createNamespacesOf(cluster []render.Result) {
	create, rendered := make([]string, len(cluster)), make([][]string, len(cluster))
	for i, r := range cluster {
		create[i], rendered[i] = r.CreateNamespace, render.NamespacesIn(r.Objects)
	}
	for i, ns := range render.NamespacesToCreate(create, rendered) {
		if ns != "" {
			cluster[i].Objects = append([]*unstructured.Unstructured{render.Namespace(ns)}, cluster[i].Objects...)
		}
	}
}

// TestsOf returns the rendered tests of an app on a cluster, or nil.
func (s *Set) TestsOf(cluster, app string) []*unstructured.Unstructured {
	s.once.Do(s.index)
	return s.tests[[2]string{cluster, app}]
}

// Only is s for the named clusters alone.
func (s *Set) Only(names map[string]bool) *Set {
	sub := &Set{Fleet: s.Fleet}
	for _, c := range s.Clusters {
		if names[c.Name] {
			sub.Clusters = append(sub.Clusters, c)
		}
	}
	for _, res := range s.Results {
		if names[res.Cluster.Name] {
			sub.Results = append(sub.Results, res)
		}
	}
	for _, t := range s.Tests {
		if names[t.Cluster.Name] {
			sub.Tests = append(sub.Tests, t)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.shed {
		if names[name] {
			if sub.shed == nil {
				sub.shed = map[string]bool{}
			}
			sub.shed[name] = true // made again when read, as in s
		}
	}
	return sub
}

// Of returns the results of one cluster, in app order. They are Results'
// own: not to be changed. A cluster's render that was shed is made again
// for the reader, and not kept (Rerender keeps it); if that fails, each
// result says why, without objects.
func (s *Set) Of(cluster string) []render.Result {
	s.once.Do(s.index)
	if s.isShed(cluster) {
		return again(s.of[cluster])
	}
	return s.of[cluster]
}

// Kept is a cluster's results as the set holds them: without their
// objects when they were let go (Shed) and not made again, and never
// made again for the call. For what needs a result's app, path or
// errors, not its objects.
func (s *Set) Kept(cluster string) []render.Result {
	s.once.Do(s.index)
	return s.of[cluster]
}

// Shed lets go of a cluster's rendered objects before its work starts,
// when every result of it can be made again from memory
// (render.Result.Again: a build the fleet shares, no file read again, or
// the objects packed, render.Result.Pack), and reports whether it did. A
// fleet applied ten clusters at a time then holds the renders of the
// clusters in flight, not every cluster's
// from the render to its apply (at 1,000 clusters, most of the run's
// peak). The cluster's work starts with Rerender. Not safe while the
// cluster's results are read.
func (s *Set) Shed(cluster string) bool {
	s.once.Do(s.index)
	results := s.of[cluster]
	if len(results) == 0 || s.gathered[cluster] || !canAgain(results) {
		return false
	}
	for i := range results {
		results[i].Objects = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shed == nil {
		s.shed = map[string]bool{}
	}
	s.shed[cluster] = true
	return true
}

// ShedAll sheds each of names (Shed): those a run works on later.
func (s *Set) ShedAll(names map[string]bool) {
	for name := range names {
		s.Shed(name)
	}
}

// Rerender makes a shed cluster's render again and keeps it, for the
// cluster's work; it does nothing for a cluster not shed. Its error is
// the cluster's: nothing may be written there without its render. Safe
// while other clusters' results are read; the cluster's own must not be.
func (s *Set) Rerender(cluster string) error {
	if !s.isShed(cluster) {
		return nil
	}
	made := again(s.of[cluster])
	for _, r := range made {
		if r.Err != nil {
			return r.Err
		}
	}
	copy(s.of[cluster], made)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.shed, cluster)
	return nil
}

// isShed reports whether cluster's render was shed and not restored.
func (s *Set) isShed(cluster string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shed[cluster]
}

// again is a copy of one cluster's results with their objects made
// again (render.Result.Again), and the Namespaces its apps create.
func again(results []render.Result) []render.Result {
	out := slices.Clone(results)
	for i := range out {
		objs, err := out[i].Again()
		if err != nil {
			err = &render.TargetError{Cluster: out[i].Cluster.Name, App: out[i].App, Err: fmt.Errorf("making the render again: %w", err)}
		}
		out[i].Objects, out[i].Err = objs, err
	}
	createNamespacesOf(out)
	return out
}

// Forget lets go of a cluster's rendered objects, once nothing reads them
// any more (a rollout's cluster whose work is over): its results keep
// their app, path and chart, and no objects, nor what makes them again.
// A cluster shed and not made again keeps what makes it again. A fleet
// applied ten clusters at a time held every cluster's render to the end
// of the run (most of a 1,000-cluster run's live heap). It costs the
// cluster's results, not the fleet's. Safe while other clusters' results are read;
// the cluster's own must not be.
func (s *Set) Forget(cluster string) {
	s.once.Do(s.index)
	if s.isShed(cluster) {
		return // holds no objects; whoever reads it makes them again
	}
	for i := range s.of[cluster] { // Results' own, unless gathered
		s.of[cluster][i].Forget()
	}
	if !s.gathered[cluster] {
		return
	}
	for i := range s.Results {
		if s.Results[i].Cluster.Name == cluster {
			s.Results[i].Forget()
		}
	}
}

// index indexes Results by cluster and Tests by cluster and app, once:
// commands ask for every cluster's, several times. A cluster's results
// are a run of Results (cluster then app order), shared, not copied.
func (s *Set) index() {
	s.of = make(map[string][]render.Result, len(s.Clusters))
	s.gathered = map[string]bool{}
	for run := range runs(s.Results, resultCluster) {
		name := run[0].Cluster.Name
		if prev, ok := s.of[name]; ok {
			// Out of order (not Render's): the runs are gathered in a
			// copy (a run's capacity ends with it, so append copies).
			run = append(prev, run...)
			s.gathered[name] = true
		}
		s.of[name] = run
	}
	s.tests = make(map[[2]string][]*unstructured.Unstructured, len(s.Tests))
	for _, t := range s.Tests {
		k := [2]string{t.Cluster.Name, t.App}
		if _, ok := s.tests[k]; !ok {
			s.tests[k] = t.Objects
		}
	}
}

// AppNames are the apps rendered for each cluster, by cluster name (what
// plan.Plan.Agree checks a plan against).
func (s *Set) AppNames() map[string][]string {
	apps := map[string][]string{}
	for _, c := range s.Clusters {
		apps[c.Name] = s.Apps(c.Name)
	}
	return apps
}

// Apps are the apps rendered for a cluster, in order; a render let go
// (Shed) is not made again for them.
func (s *Set) Apps(cluster string) []string {
	s.once.Do(s.index)
	apps := []string{}
	for _, res := range s.of[cluster] {
		apps = append(apps, res.App)
	}
	return apps
}
