package status_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
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
	cond, progress := "False", "ReplicaSetUpdated"
	if available == 2 {
		cond, progress = "True", "NewReplicaSetAvailable"
	}
	return map[string]any{
		"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": updated, "readyReplicas": available, "availableReplicas": available,
		// As the deployment controller says it of a rolling update done.
		"conditions": []any{map[string]any{"type": "Available", "status": cond}, map[string]any{"type": "Progressing", "status": "True", "reason": progress}},
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
	app, err := status.Run(context.Background(), c.Client, "web", render, status.Options{Concurrency: 4})
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
	app, err = status.Run(context.Background(), c.Client, "web", render[:3], status.Options{Ignore: ignore, Concurrency: 4})
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
	if state, n := app.Summary(); state != "OutOfSync" || n != 3 {
		t.Errorf("with orphans: summary %s %d, want OutOfSync 3 (the orphans)", state, n)
	}
}

// A cell says both the worst state and the drift it would hide: a cluster
// with hand-edited objects differs from the untouched ones even while
// something is rolling out. Its counts are objects ("1 of 2 InProgress"),
// not kubectl's READY; an object edited live ("drifted") is told from one
// whose render changed since the last apply ("out of sync"), and an app
// never applied is "not deployed".
func TestCell(t *testing.T) {
	obj := func(health string, drifted bool) status.Object {
		return status.Object{Ref: "x", Health: health, Drifted: drifted}
	}
	moved := status.Object{Ref: "m", Health: status.Current, Drifted: true, RenderChanged: true}
	orphan := status.Object{Ref: "y", Health: status.Current, Orphaned: true}
	for _, tt := range []struct {
		app  status.App
		want string
	}{
		{status.App{Objects: []status.Object{obj(status.Current, false), obj(status.Current, false)}}, "2 of 2 Current"},
		{status.App{Objects: []status.Object{obj(status.Current, true), obj(status.Current, false)}}, "2 of 2 Current, 1 drifted"},
		{status.App{Objects: []status.Object{obj(status.InProgress, false), obj(status.Current, true), obj(status.InProgress, true)}}, "2 of 3 InProgress, 2 drifted"},
		{status.App{Objects: []status.Object{obj(status.Failed, false), orphan}}, "1 of 1 Failed, 1 out of sync"},
		{status.App{Objects: []status.Object{moved, obj(status.Current, true), orphan}}, "2 of 2 Current, 1 drifted, 2 out of sync"},
		{status.App{Objects: []status.Object{obj(status.NotFound, false)}, NotDeployed: true}, "not deployed"},
		{status.App{}, "no objects"},
	} {
		if got := tt.app.Cell(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.app, got, tt.want)
		}
	}
	for _, tt := range []struct {
		app   status.App
		state string
		n     int
	}{
		{status.App{Objects: []status.Object{obj(status.Current, true), moved}}, "Drifted", 1},
		{status.App{Objects: []status.Object{moved, orphan, obj(status.Current, false)}}, "OutOfSync", 2},
		{status.App{Objects: []status.Object{obj(status.NotFound, false)}, NotDeployed: true}, "NotDeployed", 1},
	} {
		if state, n := tt.app.Summary(); state != tt.state || n != tt.n || tt.app.OK() {
			t.Errorf("%+v: summary %s %d, ok %v; want %s %d, not ok", tt.app, state, n, tt.app.OK(), tt.state, tt.n)
		}
	}
}

// TestRunSkipsUnchanged: an object the last apply made, and nobody changed
// since (its resourceVersion has not moved), cannot have drifted: status
// sends it no dry run and no read of its own, and takes its health from
// the list of the app's members. Its health is still the live one (a
// Deployment rolling out or failed is not Current for being unchanged),
// and an object edited by hand or deleted since is still found out.
func TestRunSkipsUnchanged(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	render := []*unstructured.Unstructured{
		kubetest.Object("v1", "Namespace", "", "web"), configMap("a", "1"), configMap("b", "1"), configMap("c", "1"),
		deployment("ready", nil), deployment("rolling", nil), deployment("stuck", nil),
	}
	applyAll := func() {
		t.Helper()
		if err := apply.Run(ctx, c.Client, apply.Config{App: "web", Version: "test", Objects: render, Concurrency: 4, Report: func(apply.Change) {}}); err != nil {
			t.Fatal(err)
		}
	}
	applyAll()
	// The controller's word, and an apply after it (which records the
	// versions the status updates gave).
	failed := map[string]any{"conditions": []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}}}
	for name, st := range map[string]map[string]any{"ready": rollout(2, 2), "rolling": rollout(1, 1), "stuck": failed} {
		live := c.Live(deployment(name, nil))
		live.Object["status"] = st
		c.Put(live)
	}
	applyAll()

	// run runs status with version, and returns the app's objects it sent
	// a dry run or a read of their own (not the inventory's), and how many
	// requests it sent in all.
	run := func(version string) (status.App, []string, int) {
		t.Helper()
		sent := len(c.Requests())
		app, err := status.Run(ctx, c.Client, "web", render, status.Options{Concurrency: 4, Version: version})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range c.Requests()[sent:] {
			if r.Name != "" && r.Namespace != inventory.Namespace && (r.Verb == "patch" || r.Verb == "get") {
				if r.Verb == "patch" && !r.DryRun {
					t.Errorf("status wrote: %+v", r)
				}
				names = append(names, r.Name)
			}
		}
		slices.Sort(names)
		return app, slices.Compact(names), len(c.Requests()) - sent
	}
	want := []status.Object{
		{Ref: "namespace/web", Health: status.Current},
		{Ref: "configmap/a", Namespace: "web", Health: status.Current},
		{Ref: "configmap/b", Namespace: "web", Health: status.Current},
		{Ref: "configmap/c", Namespace: "web", Health: status.Current},
		{Ref: "deployment.apps/ready", Namespace: "web", Health: status.Current},
		{Ref: "deployment.apps/rolling", Namespace: "web", Health: status.InProgress},
		{Ref: "deployment.apps/stuck", Namespace: "web", Health: status.Failed},
	}
	check := func(step string, app status.App, want []status.Object) {
		t.Helper()
		if d := cmp.Diff(want, app.Objects, cmpopts.IgnoreFields(status.Object{}, "Message")); d != "" {
			t.Errorf("%s: objects (-want +got):\n%s", step, d)
		}
	}

	app, objects, dryRun := run("other")
	check("another plugin version", app, want)
	if len(objects) != len(render) {
		t.Errorf("another plugin version: dry runs of %v, want every object", objects)
	}
	app, objects, skipped := run("test")
	check("nothing changed", app, want)
	if len(objects) != 0 {
		t.Errorf("nothing changed: dry runs or reads of %v, want none", objects)
	}
	if skipped > dryRun-2*len(render) {
		t.Errorf("nothing changed: %d requests, against %d with a dry run and a read of each of the %d objects", skipped, dryRun, len(render))
	}
	t.Logf("requests: %d with a dry run of every object, %d skipping the unchanged", dryRun, skipped)

	edited := c.Live(configMap("a", ""))
	edited.Object["data"] = map[string]any{"k": "by hand"}
	c.Put(edited)
	c.Remove(configMap("b", ""))
	app, objects, _ = run("test")
	want[1].Drifted = true
	want[2].Health = status.NotFound
	check("an edit and a deletion behind our back", app, want)
	if !slices.Equal(objects, []string{"a", "b"}) {
		t.Errorf("an edit and a deletion behind our back: dry runs or reads of %v, want [a b]", objects)
	}
}

// TestRunRenderChangedOrEdited: an object that differs because the
// render changed since the last apply is told from one edited live since
// (by the digest the last apply recorded of each), and an app never
// applied is not deployed.
func TestRunRenderChangedOrEdited(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	render := []*unstructured.Unstructured{kubetest.Object("v1", "Namespace", "", "web"), configMap("a", "1"), configMap("b", "1")}
	app, err := status.Run(ctx, c.Client, "web", render, status.Options{Concurrency: 4, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !app.NotDeployed || app.Cell() != "not deployed" {
		t.Errorf("never applied: not deployed %v, cell %q", app.NotDeployed, app.Cell())
	}
	if err := apply.Run(ctx, c.Client, apply.Config{App: "web", Version: "test", Objects: render, Concurrency: 4, Report: func(apply.Change) {}}); err != nil {
		t.Fatal(err)
	}
	edited := c.Live(configMap("a", ""))
	edited.Object["data"] = map[string]any{"k": "by hand"}
	c.Put(edited)
	changed := []*unstructured.Unstructured{render[0], render[1], configMap("b", "2")}
	app, err = status.Run(ctx, c.Client, "web", changed, status.Options{Concurrency: 4, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	want := []status.Object{
		{Ref: "namespace/web", Health: status.Current},
		{Ref: "configmap/a", Namespace: "web", Health: status.Current, Drifted: true},
		{Ref: "configmap/b", Namespace: "web", Health: status.Current, Drifted: true, RenderChanged: true},
	}
	if d := cmp.Diff(want, app.Objects, cmpopts.IgnoreFields(status.Object{}, "Message")); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
	if app.NotDeployed || app.Cell() != "3 of 3 Current, 1 drifted, 1 out of sync" {
		t.Errorf("not deployed %v, cell %q", app.NotDeployed, app.Cell())
	}
}

// Watch draws each report over the last on a terminal, after a time
// line elsewhere, and stops when ctx ends.
func TestWatch(t *testing.T) {
	for _, inPlace := range []bool{true, false} {
		var out bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		status.Watch(ctx, &out, time.Millisecond, inPlace, false, func(w io.Writer) {
			n++
			fmt.Fprintf(w, "report %d\nline\n", n)
			if n == 3 {
				cancel() // the third is not written: interrupted while made
			}
		})
		got := out.String()
		if strings.Count(got, "report") != 2 || inPlace != strings.Contains(got, "\x1b[2A\x1b[J") || inPlace == strings.Contains(got, "--- ") {
			t.Errorf("in place %v:\n%q", inPlace, got)
		}
	}
}

// TestDeployed: the promotion notes of status are said only of a fleet
// that runs something.
func TestDeployed(t *testing.T) {
	for _, tt := range []struct {
		results map[string][]status.App
		want    bool
	}{
		{nil, false},
		{map[string][]status.App{"stg": {{App: "web", NotDeployed: true}}, "prod": {{App: "web", NotDeployed: true}}}, false},
		{map[string][]status.App{"stg": {{App: "web"}}, "prod": {{App: "web", NotDeployed: true}}}, true},
	} {
		if got := status.Deployed(tt.results); got != tt.want {
			t.Errorf("Deployed(%v) = %v, want %v", tt.results, got, tt.want)
		}
	}
}

// FromInventory, with no revision recorded, reports each member the
// parent records by its health alone, kind by kind; a labelled object the
// parent does not record is no member.
func TestFromInventoryReportsMembersByHealth(t *testing.T) {
	c := kubetest.New(t)
	set := &inventory.Set{App: "web", ID: inventory.ID("web")}
	secret := kubetest.Object("v1", "Secret", "web", "token")
	secret.Object["data"] = map[string]any{"token": "aHVudGVyMg=="}
	members := []*unstructured.Unstructured{configMap("a", "1"), deployment("ready", rollout(2, 2)), deployment("rolling", rollout(1, 1)), secret}
	for _, o := range members {
		set.Label(o)
	}
	copied := configMap("copy", "1") // labelled by hand, recorded nowhere
	set.Label(copied)
	c.Put(append(members, copied)...)
	if err := set.WriteParent(context.Background(), c.Client, inventory.ContentsOf(members), time.Now(), "kubectl-fleet", "test"); err != nil {
		t.Fatal(err)
	}
	loaded, err := inventory.Load(context.Background(), c.Client, "web")
	if err != nil {
		t.Fatal(err)
	}
	app, err := status.FromInventory(context.Background(), c.Client, loaded, status.Options{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := []status.Object{
		{Ref: "configmap/a", Namespace: "web", Health: status.Current},
		{Ref: "deployment.apps/ready", Namespace: "web", Health: status.Current},
		{Ref: "deployment.apps/rolling", Namespace: "web", Health: status.InProgress},
		{Ref: "secret/token", Namespace: "web", Health: status.Current},
	}
	if d := cmp.Diff(want, app.Objects, cmpopts.IgnoreFields(status.Object{}, "Message")); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
}
