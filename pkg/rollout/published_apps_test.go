package rollout

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// A delivered cluster's app whose dependency is outside the run starts
// only once the dependency was published to that cluster: the same
// rule as on a cluster written to, asked of the registry.
func TestPublishedDependencyOutsideTheRun(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	d := &fleet.Delivery{OCI: "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/fleets/prod", Insecure: true}
	p := &publishedApps{cluster: &fleet.Cluster{Name: "edge-1"}, d: d}
	ctx := context.Background()

	err := p.DependencyApplied(ctx, "db")
	if err == nil || !strings.Contains(err.Error(), "dependency db was never published to this cluster") {
		t.Fatalf("a dependency never published: got %v", err)
	}

	reg, err := publish.For(d)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "db", "namespace": "default"}}}
	img, err := publish.Pack([]*unstructured.Unstructured{obj}, publish.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	dg, err := reg.Push(ctx, "db", img)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Tag(ctx, "db", "edge-2", dg); err != nil {
		t.Fatal(err)
	}
	if err := p.DependencyApplied(ctx, "db"); err == nil {
		t.Fatal("db was published to edge-2 only, yet it counts on edge-1")
	}
	if err := reg.Tag(ctx, "db", "edge-1", dg); err != nil {
		t.Fatal(err)
	}
	if err := p.DependencyApplied(ctx, "db"); err != nil {
		t.Fatalf("db is published to edge-1, and no context reads it: %v", err)
	}
}
