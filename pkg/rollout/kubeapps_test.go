package rollout

import (
	"context"
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/lock"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// KubeApps on a cluster: every app locked, remembered for --atomic,
// applied where Namespace says and recorded, and all of it said as
// events (stages with the object count for the live display, objects,
// the revision).
func TestKubeApps(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	c.Put(kubetest.Object("v1", "Namespace", "", "default"), kubetest.Object("v1", "Namespace", "", "shop"))
	var (
		mu     sync.Mutex
		events []Event
	)
	var locks Locks
	ops := &kubeApps{
		Cluster: "c1", Client: c.Client, Locks: &locks,
		Results: []render.Result{
			{Target: render.Target{App: "web"}, Objects: []*unstructured.Unstructured{kubetest.Object("v1", "ConfigMap", "", "a"), kubetest.Object("v1", "ConfigMap", "", "b")}},
			{Target: render.Target{App: "db"}, Objects: []*unstructured.Unstructured{kubetest.Object("v1", "ConfigMap", "", "c")}},
		},
		Config:    applyConfig{Concurrency: 4},
		Emit:      func(ev Event) { mu.Lock(); events = append(events, ev); mu.Unlock() },
		Ignore:    func(string) []object.IgnoreRule { return nil },
		Namespace: func(app string) string { return map[string]string{"web": "shop"}[app] },
	}
	// The engine says the revisions the apps' applies record.
	e := &Engine{emit: ops.Emit, r: &rendered.Set{Fleet: &fleet.Fleet{Clusters: []fleet.Cluster{{Name: "c1"}}}}}
	e.begin(e.r, Options{}, ops.Emit)
	ops.Record = func(_ context.Context, res render.Result, label string) *apply.Record {
		return e.recorded(&apply.Record{}, "c1", res.App, label)
	}
	var gates gateSet
	ops.Gates = &gates
	// db's verdict is known when its revision is recorded (Final); web's
	// is written once its gates ran.
	run := appsRun{Cluster: "c1", Ops: ops, Gates: &gates, Write: true, Atomic: true, Apps: []App{{Name: "db", Final: true}, {Name: "web", DependsOn: []string{"db"}}}}
	if errs, failed := run.Run(ctx); len(errs) > 0 || len(failed) > 0 {
		t.Fatalf("errors %v, failed %v", errs, failed)
	}
	defer locks.Release(ctx, nil)
	for _, app := range []string{"web", "db"} {
		if info, err := lock.Get(ctx, c.Client, app); err != nil || info == nil {
			t.Errorf("app %s not locked: %v", app, err)
		}
	}
	if len(ops.Before) != 2 {
		t.Errorf("remembered %d sets, want 2 (--atomic)", len(ops.Before))
	}
	if c.Live(kubetest.Object("v1", "ConfigMap", "shop", "a")) == nil || c.Live(kubetest.Object("v1", "ConfigMap", "default", "c")) == nil {
		t.Error("web's objects not in its namespace (shop), or db's not in the context's")
	}
	verified := revision.Verification{State: revision.Verified, Gates: []string{applied}}
	if v, err := revision.VerificationOf(ctx, c.Client, "db", 1); err != nil || v.State != revision.Verified || !gates.Recorded("db", verified) {
		t.Errorf("db's revision: %+v, %v; want it recorded verified with the revision", v, err)
	}
	if v, err := revision.VerificationOf(ctx, c.Client, "web", 1); err != nil || v.State != revision.Unverified || gates.Recorded("web", verified) {
		t.Errorf("web's revision: %+v, %v; want it unverified until its gates ran", v, err)
	}
	var stages []StageEvent
	objects, revisions := 0, 0
	for _, ev := range events {
		switch ev := ev.(type) {
		case StageEvent:
			stages = append(stages, ev)
		case ObjectEvent:
			if ev.Label != ev.App || ev.Test {
				t.Errorf("object event %+v: want the app as its label (the cluster gets two), not a test", ev)
			}
			objects++
		case RevisionEvent:
			revisions++
		}
	}
	if !slices.Contains(stages, StageEvent{Cluster: "c1", Stage: "applying web", Objects: 2}) {
		t.Errorf("stages %+v: want web's with its 2 objects", stages)
	}
	if objects != 3 || revisions != 2 {
		t.Errorf("%d object events, %d revision events; want 3 and 2", objects, revisions)
	}
}
