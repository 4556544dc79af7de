package pause

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// A delivered cluster's pauses live in its registry, one record per
// cluster: set, read and lifted as on a cluster, another cluster's
// apart; an artifact under the pauses' tag that kubectl fleet did not
// write is an error, never "no pause" (failing closed).
func TestPublishedPauses(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	d := &fleet.Delivery{OCI: "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/fleets/shop", Insecure: true}
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

	reg, err := publish.For(d)
	if err != nil {
		t.Fatal(err)
	}
	img, err := publish.Pack([]*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}}}, publish.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	dg, err := reg.Push(ctx, Repository, img)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Tag(ctx, Repository, Tag("edge-1"), dg); err != nil {
		t.Fatal(err)
	}
	if ps, err := ReadPublished(ctx, d, "edge-1"); err == nil {
		t.Fatalf("a foreign artifact under the pauses' tag read as %v", ps)
	}
}
