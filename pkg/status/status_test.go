package status_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/status"
)

func configMap(name, value string) *unstructured.Unstructured {
	o := kubetest.Object("v1", "ConfigMap", "web", name)
	o.Object["data"] = map[string]any{"k": value}
	return o
}

// deployment is rendered with 2 replicas; live, it has the status given.
func deployment(name string, liveStatus map[string]any) *unstructured.Unstructured {
	o := kubetest.Object("apps/v1", "Deployment", "web", name)
	o.Object["spec"] = map[string]any{"replicas": int64(2)}
	if liveStatus != nil {
		o.SetGeneration(1)
		o.Object["status"] = liveStatus
	}
	return o
}

func rollout(updated, available int64) map[string]any {
	cond := "False"
	if available == 2 {
		cond = "True"
	}
	return map[string]any{
		"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": updated, "readyReplicas": available, "availableReplicas": available,
		"conditions": []any{map[string]any{"type": "Available", "status": cond}},
	}
}

// TestRun: health by kstatus rules, drift (a hand edit of a field the
// render sets), NotFound and orphans, from the cluster as it is.
func TestRun(t *testing.T) {
	c := kubetest.New(t)
	set := &inventory.Set{App: "web", ID: inventory.ID("web")}
	ns := kubetest.Object("v1", "Namespace", "", "web")
	kept := configMap("kept", "1") // no longer rendered, but never pruned
	kept.SetAnnotations(map[string]string{object.PruneAnnotation: "disabled"})
	live := []*unstructured.Unstructured{
		ns, configMap("current", "1"), configMap("edited", "1"), configMap("orphan", "1"), kept,
		deployment("ready", rollout(2, 2)), deployment("rolling", rollout(1, 1)),
	}
	for _, o := range live {
		set.Label(o)
	}
	c.Put(live...)
	lastApplied := time.Date(2026, 11, 21, 1, 57, 8, 0, time.UTC)
	if err := set.WriteParent(context.Background(), c.Client, inventory.ContentsOf(live), lastApplied, "kubectl-fleet", "test"); err != nil {
		t.Fatal(err)
	}
	edited := c.Live(configMap("edited", ""))
	edited.Object["data"] = map[string]any{"k": "by hand"}
	c.Put(edited)

	render := []*unstructured.Unstructured{
		kubetest.Object("v1", "Namespace", "", "web"), configMap("current", "1"), configMap("edited", "1"), configMap("missing", "1"),
		deployment("ready", nil), deployment("rolling", nil),
	}
	app, err := status.Run(context.Background(), c.Client, "web", render, nil, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []status.Object{
		{Ref: "namespace/web", Health: status.Current},
		{Ref: "configmap/current", Namespace: "web", Health: status.Current},
		{Ref: "configmap/edited", Namespace: "web", Health: status.Current, Drifted: true},
		{Ref: "configmap/missing", Namespace: "web", Health: status.NotFound},
		{Ref: "deployment.apps/ready", Namespace: "web", Health: status.Current},
		{Ref: "deployment.apps/rolling", Namespace: "web", Health: status.InProgress},
		{Ref: "configmap/orphan", Namespace: "web", Health: status.Current, Orphaned: true},
	}
	if d := cmp.Diff(want, app.Objects, cmpopts.IgnoreFields(status.Object{}, "Message")); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
	if app.LastApplied != "2026-11-21T01:57:08Z" {
		t.Errorf("last applied %q", app.LastApplied)
	}
	if state, n := app.Summary(); state != status.NotFound || n != 1 || app.OK() {
		t.Errorf("summary %s %d, ok %v", state, n, app.OK())
	}

	// A field an ignore rule names is not drift; members no longer
	// rendered are orphans, and count as drifted (but not the kept one).
	ignore := []object.IgnoreRule{{Kind: "ConfigMap", Name: "edited", JSONPointers: []string{"/data/k"}}}
	app, err = status.Run(context.Background(), c.Client, "web", render[:3], ignore, 4)
	if err != nil {
		t.Fatal(err)
	}
	want = []status.Object{
		{Ref: "namespace/web", Health: status.Current},
		{Ref: "configmap/current", Namespace: "web", Health: status.Current},
		{Ref: "configmap/edited", Namespace: "web", Health: status.Current},
		{Ref: "configmap/orphan", Namespace: "web", Health: status.Current, Orphaned: true},
		{Ref: "deployment.apps/ready", Namespace: "web", Health: status.Current, Orphaned: true},
		{Ref: "deployment.apps/rolling", Namespace: "web", Health: status.InProgress, Orphaned: true},
	}
	if d := cmp.Diff(want, app.Objects, cmpopts.IgnoreFields(status.Object{}, "Message")); d != "" {
		t.Errorf("with the ignore rule, objects (-want +got):\n%s", d)
	}
	if state, n := app.Summary(); state != "Drifted" || n != 3 {
		t.Errorf("with orphans: summary %s %d, want Drifted 3 (the orphans)", state, n)
	}
}

// A cell says both the worst state and the drift it would hide: a cluster
// with hand-edited objects differs from the untouched ones even while
// something is rolling out.
func TestCell(t *testing.T) {
	obj := func(health string, drifted bool) status.Object {
		return status.Object{Ref: "x", Health: health, Drifted: drifted}
	}
	for _, tt := range []struct {
		objs []status.Object
		want string
	}{
		{[]status.Object{obj(status.Current, false), obj(status.Current, false)}, "Current 2/2"},
		{[]status.Object{obj(status.Current, true), obj(status.Current, false)}, "Drifted 1/2"},
		{[]status.Object{obj(status.InProgress, false), obj(status.Current, true), obj(status.InProgress, true)}, "InProgress 2/3, 2 drifted"},
		{[]status.Object{obj(status.Failed, false), {Ref: "y", Health: status.Current, Orphaned: true}}, "Failed 1/2, 1 drifted"},
	} {
		if got := (status.App{Objects: tt.objs}).Cell(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.objs, got, tt.want)
		}
	}
}
