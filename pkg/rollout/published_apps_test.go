package rollout

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// A delivered cluster's app whose dependency is outside the run starts
// only once the dependency was published to that cluster: the same
// rule as on a cluster written to, asked of the registry.
func TestPublishedDependencyOutsideTheRun(t *testing.T) {
	d, reg := testRegistry(t)
	p := &publishedApps{cluster: &fleet.Cluster{Name: "edge-1"}, d: d}
	ctx := context.Background()

	err := p.DependencyApplied(ctx, "db")
	if err == nil || !strings.Contains(err.Error(), "dependency db was never published to this cluster") {
		t.Fatalf("a dependency never published: got %v", err)
	}

	dg := pushed(t, reg, "db", reconcileCM("db", "1"))
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

// testRegistry is a delivery to a registry on loopback, and its Registry.
func testRegistry(t *testing.T) (*fleet.Delivery, publish.Registry) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	d := &fleet.Delivery{OCI: "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/fleets/prod", Insecure: true}
	reg, err := publish.For(d)
	if err != nil {
		t.Fatal(err)
	}
	return d, reg
}

// pushed is the digest of objs packed and pushed to app's repository.
func pushed(t *testing.T, reg publish.Registry, app string, objs ...*unstructured.Unstructured) v1.Hash {
	t.Helper()
	img, err := publish.Pack(objs, publish.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	dg, err := reg.Push(context.Background(), app, img)
	if err != nil {
		t.Fatal(err)
	}
	return dg
}

// A reconcile pass reads a delivered cluster's state from its registry:
// the current revision, unchanged while the render is its render and the
// tag points at its artifact; a tag moved by someone else is no release
// (published again). An unobserved cluster's unverified revision is not
// applied again for its gates, which cannot pass there.
func TestPublishedState(t *testing.T) {
	_, reg := testRegistry(t)
	ctx := context.Background()
	objs := []*unstructured.Unstructured{reconcileCM("a", "1")}
	dg := pushed(t, reg, "web", objs...)
	var h publish.History
	h.Add(revision.Revision{App: "web", Number: 1, Digest: digest.Render(objs, nil), Artifact: dg.String(),
		Verification: revision.Verification{State: revision.Unverified, Reason: NotObserved}}, 0)
	if err := reg.SaveHistory(ctx, "web", "edge-1", h); err != nil {
		t.Fatal(err)
	}
	if err := reg.Tag(ctx, "web", "edge-1", dg); err != nil {
		t.Fatal(err)
	}
	st := &PublishedState{Registry: reg, Cluster: "edge-1"}
	got := Check(ctx, "edge-1", st, results("web", objs...))
	if a := got.Apps[0]; a.Err != nil || a.Changed() || !a.Unverified() || a.Revision != 1 {
		t.Fatalf("published, tagged: %+v", a)
	}
	if d, do := got.Decide(false, true); d != DecUnverified || !do {
		t.Errorf("observed and unverified: decide = %s, %v", d, do)
	}
	got.Apps[0].Unobserved = true
	if d, do := got.Decide(false, true); d != DecUnchanged || do {
		t.Errorf("unobserved and unverified: decide = %s, %v", d, do)
	}
	if got := Check(ctx, "edge-1", st, results("web", reconcileCM("a", "2"))); !got.Apps[0].Changed() {
		t.Errorf("a new render is a change: %+v", got.Apps[0])
	}
	if err := reg.Tag(ctx, "web", "edge-1", pushed(t, reg, "web", reconcileCM("by-hand", "x"))); err != nil {
		t.Fatal(err)
	}
	if got := Check(ctx, "edge-1", st, results("web", objs...)); !got.Apps[0].Changed() || got.Apps[0].Revision != 0 {
		t.Errorf("a tag moved by hand is no release: %+v", got.Apps[0])
	}
}
