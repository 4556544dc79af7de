package rendered

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// Set is a run's render: the fleet, the selected clusters and every
// rendered (cluster, app) pair, in cluster then app order.
type Set struct {
	Fleet    *fleet.Fleet
	Clusters []*fleet.Cluster
	Results  []render.Result
	// Tests are the apps' rendered tests, when asked for (Config.Tests).
	Tests []render.Result
}

// Render plans (NewPlan), starts c.Warm, and renders every target, and
// with c.Tests every app's tests. Any render error fails the whole render,
// every error reported (render.Failed), before anything touches a cluster.
func Render(ctx context.Context, c Config) (*Set, error) {
	pl, err := NewPlan(ctx, c)
	if err != nil {
		return nil, err
	}
	if c.Warm != nil {
		c.Warm(ctx, pl.Fleet, pl.Clusters)
	}
	results := c.Engine.Render(ctx, pl.Targets(false))
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
	return &Set{Fleet: pl.Fleet, Clusters: pl.Clusters, Results: results, Tests: tests}, nil
}

// TestsOf returns the rendered tests of an app on a cluster, or nil.
func (s *Set) TestsOf(cluster, app string) []*unstructured.Unstructured {
	for _, t := range s.Tests {
		if t.Cluster.Name == cluster && t.App == app {
			return t.Objects
		}
	}
	return nil
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
	return sub
}

// Of returns the results of one cluster.
func (s *Set) Of(cluster string) []render.Result {
	var out []render.Result
	for _, res := range s.Results {
		if res.Cluster.Name == cluster {
			out = append(out, res)
		}
	}
	return out
}
