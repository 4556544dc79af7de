package reconcile

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

func reconcileCM(name, value string) *unstructured.Unstructured {
	o := kubetest.Object("v1", "ConfigMap", "web", name)
	o.Object["data"] = map[string]any{"k": value}
	return o
}

func applyRecorded(t *testing.T, c *kubetest.Cluster, app string, objs []*unstructured.Unstructured, force bool) map[string]change.Action {
	t.Helper()
	var mu sync.Mutex
	got := map[string]change.Action{}
	err := apply.Run(context.Background(), c.Client, apply.Config{App: app, Version: "test", Objects: objs, Concurrency: 4, Force: force,
		Report: func(ch apply.Change) { mu.Lock(); got[ch.Ref] = ch.Action; mu.Unlock() },
		Record: &apply.Record{}})
	if err != nil {
		t.Fatalf("apply %s: %v", app, err)
	}
	return got
}

func results(app string, objs ...*unstructured.Unstructured) []render.Result {
	return []render.Result{{Target: render.Target{App: app}, Objects: objs}}
}

// TestReconcileCheck: on an in-memory cluster, a render that is the
// current revision with nothing edited is unchanged; a hand edit or a
// deleted object is drift (applied only with --correct-drift, and then
// really re-sent); a new render or an app never applied is a change.
func TestReconcileCheck(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	c.Put(kubetest.Object("v1", "Namespace", "", "web"))
	objs := []*unstructured.Unstructured{reconcileCM("a", "1"), reconcileCM("b", "1")}
	applyRecorded(t, c, "web", objs, false)
	st := KubeState{Client: c.Client, Ignore: func(string) []object.IgnoreRule { return nil }, Concurrency: 4}

	// Applied, its gates not run: unverified, so applied again.
	got := Check(ctx, "c1", st, results("web", objs...))
	if a := got.Apps[0]; a.Err != nil || a.Changed() || !a.Unverified() || a.Revision != 1 {
		t.Fatalf("after apply: %+v", a)
	}
	if d, do := got.Decide(false, true); d != DecUnverified || !do {
		t.Errorf("unverified: decide = %s, %v", d, do)
	}
	if err := revision.Verify(ctx, c.Client, "web", 1, revision.Verification{State: revision.Verified}); err != nil {
		t.Fatal(err)
	}
	got = Check(ctx, "c1", st, results("web", objs...))
	if a := got.Apps[0]; a.Err != nil || a.Changed() || a.Unverified() || len(a.Drifted) > 0 || a.Revision != 1 {
		t.Fatalf("after apply and its gates: %+v", a)
	}
	for _, correct := range []bool{false, true} {
		if d, do := got.Decide(correct, true); d != DecUnchanged || do {
			t.Errorf("unchanged, correctDrift=%v: decide = %s, %v", correct, d, do)
		}
	}

	// A hand edit of a: drift, applied only when asked.
	edited := c.Live(reconcileCM("a", ""))
	edited.Object["data"] = map[string]any{"k": "by hand"}
	c.Put(edited)
	got = Check(ctx, "c1", st, results("web", objs...))
	if diff := cmp.Diff([]string{"configmap/a -n web"}, got.Apps[0].Drifted); diff != "" || got.Apps[0].Changed() {
		t.Fatalf("after an edit: drifted (-want +got):\n%s", diff)
	}
	if d, do := got.Decide(false, true); d != DecDrifted || do {
		t.Errorf("drifted, not correcting: decide = %s, %v", d, do)
	}
	if d, do := got.Decide(true, true); d != DecDrifted || !do {
		t.Errorf("drifted, correcting: decide = %s, %v", d, do)
	}
	// Correcting re-sends the edited object, though its render did not
	// change: its live version moved since the record.
	if got := applyRecorded(t, c, "web", objs, true); got["configmap/a"] != change.Configured || got["configmap/b"] != change.Unchanged {
		t.Errorf("correcting apply: %v", got)
	}
	if v := c.Live(reconcileCM("a", "")).Object["data"].(map[string]any)["k"]; v != "1" {
		t.Errorf("after correcting, a is %v", v)
	}
	if got := Check(ctx, "c1", st, results("web", objs...)); len(got.Apps[0].Drifted) > 0 {
		t.Errorf("drift after correcting: %v", got.Apps[0].Drifted)
	}

	// A deleted object is drift too.
	if err := c.Client.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("web").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got = Check(ctx, "c1", st, results("web", objs...))
	if diff := cmp.Diff([]string{"configmap/b -n web (missing)"}, got.Apps[0].Drifted); diff != "" {
		t.Errorf("after a delete: drifted (-want +got):\n%s", diff)
	}

	// A new render is a change; drift is not looked for then.
	changed := []*unstructured.Unstructured{reconcileCM("a", "2"), reconcileCM("b", "1")}
	got = Check(ctx, "c1", st, results("web", changed...))
	if a := got.Apps[0]; !a.Changed() || a.Drifted != nil {
		t.Errorf("new render: %+v", a)
	}
	if d, do := got.Decide(false, true); d != DecChanged || !do {
		t.Errorf("changed: decide = %s, %v", d, do)
	}
	// An app never applied is a change.
	got = Check(ctx, "c1", st, results("db", reconcileCM("db", "1")))
	if a := got.Apps[0]; !a.Changed() || a.Exists {
		t.Errorf("never applied: %+v", a)
	}
}

// fakeState answers check from memory, and counts drift checks.
type fakeState struct {
	sets    map[string]*inventory.Set
	drift   map[string][]string
	err     error
	checked []string
	// verified are the current revisions' verifications (default:
	// verified).
	verified map[string]revision.Verification
}

func (f *fakeState) Set(_ context.Context, app string) (*inventory.Set, error) {
	if f.err != nil {
		return nil, f.err
	}
	if s, ok := f.sets[app]; ok {
		return s, nil
	}
	return &inventory.Set{App: app}, nil
}

func (f *fakeState) Verification(_ context.Context, app string, _ int) (revision.Verification, error) {
	if v, ok := f.verified[app]; ok {
		return v, nil
	}
	return revision.Verification{State: revision.Verified}, nil
}

func (f *fakeState) Key(context.Context) (digest.Key, error) { return nil, nil }

func (f *fakeState) Drifted(_ context.Context, _ *inventory.Set, app string, _ []*unstructured.Unstructured) ([]string, error) {
	f.checked = append(f.checked, app)
	return f.drift[app], nil
}

// TestReconcileDecide: a cluster is applied when one app changed, or when
// it could not be checked; drift only with --correct-drift; drift is
// looked for only in apps whose render did not change.
func TestReconcileDecide(t *testing.T) {
	cm := reconcileCM("a", "1")
	current := func(app string) *inventory.Set {
		return &inventory.Set{App: app, Exists: true, Revision: 3, Digest: digest.Render([]*unstructured.Unstructured{cm}, nil)}
	}
	for _, tt := range []struct {
		name        string
		state       *fakeState
		want        string
		applyIt     bool
		applyIfAsk  bool
		wantChecked []string
	}{
		{"unchanged", &fakeState{sets: map[string]*inventory.Set{"web": current("web"), "db": current("db")}}, DecUnchanged, false, false, []string{"web", "db"}},
		{"one app changed", &fakeState{sets: map[string]*inventory.Set{"web": current("web")}}, DecChanged, true, true, []string{"web"}},
		{"drifted", &fakeState{sets: map[string]*inventory.Set{"web": current("web"), "db": current("db")}, drift: map[string][]string{"db": {"configmap/a -n web"}}}, DecDrifted, false, true, []string{"web", "db"}},
		{"changed and drifted", &fakeState{sets: map[string]*inventory.Set{"web": current("web")}, drift: map[string][]string{"web": {"configmap/a -n web"}}}, DecChanged, true, true, []string{"web"}},
		{"no revision recorded", &fakeState{sets: map[string]*inventory.Set{"web": {App: "web", Exists: true}, "db": current("db")}}, DecChanged, true, true, []string{"db"}},
		{"cannot read", &fakeState{err: fmt.Errorf("forbidden")}, DecError, true, true, nil},
		{"a check failed", &fakeState{sets: map[string]*inventory.Set{"web": current("web"), "db": current("db")}, verified: map[string]revision.Verification{"db": {State: revision.Failed, Reason: "check smoke failed"}}}, DecUnverified, true, true, []string{"web", "db"}},
		{"never verified", &fakeState{sets: map[string]*inventory.Set{"web": current("web"), "db": current("db")}, verified: map[string]revision.Verification{"web": {State: revision.Unverified}}}, DecUnverified, true, true, []string{"web", "db"}},
		{"changed beats unverified", &fakeState{sets: map[string]*inventory.Set{"web": current("web")}, verified: map[string]revision.Verification{"web": {State: revision.Failed}}}, DecChanged, true, true, []string{"web"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs := append(results("web", cm), results("db", cm)...)
			got := Check(context.Background(), "c1", tt.state, rs)
			if d, do := got.Decide(false, true); d != tt.want || do != tt.applyIt {
				t.Errorf("decide(false, true) = %s, %v; want %s, %v", d, do, tt.want, tt.applyIt)
			}
			if _, do := got.Decide(true, true); do != tt.applyIfAsk {
				t.Errorf("decide(true, true) applies = %v, want %v", do, tt.applyIfAsk)
			}
			if diff := cmp.Diff(tt.wantChecked, tt.state.checked); diff != "" {
				t.Errorf("drift checked for (-want +got):\n%s", diff)
			}
		})
	}
	if d, do := (ClusterCheck{Cluster: "c1", Err: fmt.Errorf("unreachable")}).Decide(false, true); d != DecError || !do {
		t.Errorf("unreachable: %s, %v", d, do)
	}
}

// A reconcile pass reads a delivered cluster's state from its registry:
// the current revision, unchanged while the render is its render and the
// tag points at its artifact; a tag moved by someone else is no release
// (published again). An unobserved cluster's unverified revision is not
// applied again for its gates, which cannot pass there.
func TestPublishedState(t *testing.T) {
	d, reg := registrytest.Delivery(t)
	ctx := context.Background()
	objs := []*unstructured.Unstructured{reconcileCM("a", "1")}
	dg := registrytest.Pushed(t, reg, "web", objs...)
	var h publish.History
	h.Add(revision.Revision{App: "web", Number: 1, Digest: digest.Render(objs, nil), Artifact: dg.String(),
		Verification: revision.Verification{State: revision.Unverified, Reason: rollout.NotObserved}}, 0)
	if err := reg.SaveHistory(ctx, "web", "edge-1", h); err != nil {
		t.Fatal(err)
	}
	if err := reg.Tag(ctx, "web", "edge-1", dg); err != nil {
		t.Fatal(err)
	}
	st, err := registry.Of(&fleet.Fleet{}).State(&fleet.Cluster{Name: "edge-1", Delivery: d})
	if err != nil {
		t.Fatal(err)
	}
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
	if err := reg.Tag(ctx, "web", "edge-1", registrytest.Pushed(t, reg, "web", reconcileCM("by-hand", "x"))); err != nil {
		t.Fatal(err)
	}
	if got := Check(ctx, "edge-1", st, results("web", objs...)); !got.Apps[0].Changed() || got.Apps[0].Revision != 0 {
		t.Errorf("a tag moved by hand is no release: %+v", got.Apps[0])
	}
}
