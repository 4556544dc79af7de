package rollout

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
)

// A delivered cluster's app whose dependency is outside the run starts
// only once the dependency was published to that cluster: the same
// rule as on a cluster written to, asked of the registry.
func TestPublishedDependencyOutsideTheRun(t *testing.T) {
	d, reg := registrytest.Delivery(t)
	p := &registryTarget{e: &Engine{r: &rendered.Set{Fleet: &fleet.Fleet{}}}, run: &clusterRun{cluster: &fleet.Cluster{Name: "edge-1"}}, d: d}
	ctx := context.Background()

	err := p.dependencyApplied(ctx, "db")
	if err == nil || !strings.Contains(err.Error(), "dependency db was never published to this cluster") {
		t.Fatalf("a dependency never published: got %v", err)
	}

	dg := registrytest.Pushed(t, reg, "db", &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "db", "namespace": "web"}}})
	if err := reg.Tag(ctx, "db", "edge-2", dg); err != nil {
		t.Fatal(err)
	}
	if err := p.dependencyApplied(ctx, "db"); err == nil {
		t.Fatal("db was published to edge-2 only, yet it counts on edge-1")
	}
	if err := reg.Tag(ctx, "db", "edge-1", dg); err != nil {
		t.Fatal(err)
	}
	if err := p.dependencyApplied(ctx, "db"); err != nil {
		t.Fatalf("db is published to edge-1, and no context reads it: %v", err)
	}
}
