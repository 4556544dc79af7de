package pause

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
)

// A delivered cluster's pauses live in its registry, one record per
// cluster: set, read and lifted as on a cluster, another cluster's
// apart; an artifact under the pauses' tag that kubectl fleet did not
// write is an error, never "no pause" (failing closed).
func TestPublishedPauses(t *testing.T) {
	d, reg := registrytest.Delivery(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	edge1, err := registryStore(d, "edge-1")
	if err != nil {
		t.Fatal(err)
	}
	if ps, err := ReadPublished(ctx, d, "edge-1"); err != nil || len(ps) != 0 {
		t.Fatalf("no record: got %v, %v", ps, err)
	}
	if err := set(ctx, edge1, []string{"web"}, Pause{By: "alice", At: at, Reason: "INC-1"}); err != nil {
		t.Fatal(err)
	}
	if err := set(ctx, edge1, nil, Pause{By: "bob", At: at, Reason: "freeze"}); err != nil {
		t.Fatal(err)
	}
	ps, err := ReadPublished(ctx, d, "edge-1")
	if err != nil || len(ps) != 2 || ps[0].App != "" || ps[1].App != "web" || ps[1].By != "alice" {
		t.Fatalf("edge-1's pauses: got %+v, %v", ps, err)
	}
	if ps, err := ReadPublished(ctx, d, "edge-2"); err != nil || len(ps) != 0 {
		t.Fatalf("edge-2 is not paused: got %v, %v", ps, err)
	}
	lifted, err := lift(ctx, edge1, []string{"web"})
	if err != nil || len(lifted) != 1 || lifted[0].Reason != "INC-1" {
		t.Fatalf("lift of web: got %+v, %v", lifted, err)
	}
	if ps, _ := ReadPublished(ctx, d, "edge-1"); Find(ps, "web") == nil || ps[0].Reason != "freeze" {
		t.Fatalf("the pause of every app still holds web: got %+v", ps)
	}

	dg := registrytest.Pushed(t, reg, Repository, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}})
	if err := reg.Tag(ctx, Repository, Tag("edge-1"), dg); err != nil {
		t.Fatal(err)
	}
	if ps, err := ReadPublished(ctx, d, "edge-1"); err == nil {
		t.Fatalf("a foreign artifact under the pauses' tag read as %v", ps)
	}
}
