package diff_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

func ns(name string) *unstructured.Unstructured { return kubetest.Object("v1", "Namespace", "", name) }

// obj is an object of kind (ConfigMap or Secret) whose data is the
// key=value pairs given.
func obj(kind, namespace, name string, kv ...string) *unstructured.Unstructured {
	o := kubetest.Object("v1", kind, namespace, name)
	data := map[string]any{}
	for _, p := range kv {
		k, v, _ := strings.Cut(p, "=")
		data[k] = v
	}
	o.Object["data"] = data
	return o
}

// seed applies objs (in order) as members of app's set, recorded by its
// parent, as an earlier apply would have left them: their fields are
// kubectl fleet's.
func seed(t *testing.T, c *kubetest.Cluster, app string, objs ...*unstructured.Unstructured) {
	t.Helper()
	set := &inventory.Set{App: app, ID: inventory.ID(app)}
	for _, o := range objs {
		set.Label(o)
		if _, _, err := c.Client.Apply(context.Background(), o.DeepCopy(), kube.ApplyOptions{FieldManager: "kubectl-fleet"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.WriteParent(context.Background(), c.Client, inventory.ContentsOf(objs), time.Now(), "kubectl-fleet", "test"); err != nil {
		t.Fatal(err)
	}
}

// TestRun: what apply --prune would do to each object, computed by dry
// runs that change nothing.
func TestRun(t *testing.T) {
	c := kubetest.New(t)
	kept := obj("ConfigMap", "web", "kept")
	kept.SetAnnotations(map[string]string{object.PruneAnnotation: "disabled"})
	seed(t, c, "web", ns("web"), obj("ConfigMap", "web", "same", "k=1"), obj("ConfigMap", "web", "changed", "k=1"),
		obj("ConfigMap", "web", "edited", "k=1"), obj("Secret", "web", "password", "value=b2xk"), obj("ConfigMap", "web", "gone"), kept)
	c.Put(obj("ConfigMap", "web", "stranger"))
	// Someone changed "edited" by hand after our apply: the first dry
	// run conflicts, as the double's field manager says.
	if _, err := c.Client.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("web").Patch(context.Background(), "edited", types.MergePatchType, []byte(`{"data":{"k":"by-hand"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	crd := kubetest.Object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com")
	crd.Object["spec"] = map[string]any{"group": "example.com", "names": map[string]any{"kind": "Widget"}}
	render := []*unstructured.Unstructured{
		ns("web"), obj("ConfigMap", "web", "same", "k=1"), obj("ConfigMap", "web", "changed", "k=2"),
		obj("ConfigMap", "web", "edited", "k=2"), obj("Secret", "web", "password", "value=bmV3"), obj("ConfigMap", "web", "new"),
		ns("extra"), obj("ConfigMap", "extra", "in-new-namespace"),
		crd, kubetest.Object("example.com/v1", "Widget", "web", "w"),
	}
	before, sent := c.Objects(), len(c.Requests())

	diffs, err := diff.Run(context.Background(), c.Client, render, diff.Options{App: "web", FieldManager: "kubectl-fleet", Concurrency: 4, Cluster: "c1", Context: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]change.Action{}
	byPath := map[string]diff.Object{}
	for _, d := range diffs {
		if d.Err != nil {
			t.Errorf("%s: %v", d.Path, d.Err)
		}
		got[d.Path], byPath[d.Path] = d.Action, d
	}
	want := map[string]change.Action{
		"Namespace/web":                    change.Unchanged,
		"ConfigMap/web/same":               change.Unchanged,
		"ConfigMap/web/changed":            change.Configured,
		"ConfigMap/web/edited":             change.Configured,
		"Secret/web/password":              change.Configured,
		"ConfigMap/web/new":                change.Created,
		"Namespace/extra":                  change.Created,
		"ConfigMap/extra/in-new-namespace": change.Created,
		"CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com": change.Created,
		"Widget.example.com/web/w": change.AfterCRD,
		"ConfigMap/web/gone":       change.Pruned,
		"ConfigMap/web/kept":       change.Kept,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("kinds (-want +got):\n%s", d)
	}

	// The headers name the cluster and the app, for a reader of many.
	if text := byPath["ConfigMap/web/changed"].Text; !strings.HasPrefix(text, "--- live/c1/web/ConfigMap/web/changed\n+++ merged/c1/web/ConfigMap/web/changed\n") {
		t.Errorf("changed's headers:\n%s", text)
	}
	if text := byPath["ConfigMap/web/changed"].Text; !strings.Contains(text, "-  k: \"1\"\n") || !strings.Contains(text, "+  k: \"2\"\n") {
		t.Errorf("changed's diff:\n%s", text)
	}
	if text := byPath["Secret/web/password"].Text; strings.Contains(text, "b2xk") || strings.Contains(text, "bmV3") || !strings.Contains(text, "*** (after)") {
		t.Errorf("the Secret's values are not masked:\n%s", text)
	}
	if e := byPath["ConfigMap/web/edited"]; !e.Conflict || !strings.Contains(e.Note, `"kubectl-edit" (.data.k)`) {
		t.Errorf("edited: conflict %v, note %q", e.Conflict, e.Note)
	}
	if k := byPath["ConfigMap/web/kept"]; !strings.Contains(k.Note, "kept: "+object.PruneAnnotation+": disabled") {
		t.Errorf("kept's note %q", k.Note)
	}
	if text := byPath["ConfigMap/web/gone"].Text; !strings.Contains(text, "-  name: gone") {
		t.Errorf("the prune's diff:\n%s", text)
	}
	wantSummary := diff.Summary{Create: 5, Change: 3, Prune: 1, Unchanged: 3, Conflicts: 1}
	if d := cmp.Diff(wantSummary, diff.Summarize(diffs)); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	if d := cmp.Diff(before, c.Objects()); d != "" {
		t.Errorf("diff changed the cluster (-before +after):\n%s", d)
	}
	for _, r := range c.Requests()[sent:] {
		if (r.Verb == "patch" || r.Verb == "delete") && !r.DryRun {
			t.Errorf("diff wrote: %+v", r)
		}
	}
}

// TestRunNeverApplied: an app without a parent has nothing to prune, even
// an object that carries its label.
func TestRunNeverApplied(t *testing.T) {
	c := kubetest.New(t)
	stray := obj("ConfigMap", "web", "stray")
	inventory.Label(stray, inventory.ID("web"))
	c.Put(ns("web"), stray)
	diffs, err := diff.Run(context.Background(), c.Client, []*unstructured.Unstructured{obj("ConfigMap", "web", "a")}, diff.Options{App: "web", FieldManager: "kubectl-fleet", Concurrency: 1})
	if err != nil || len(diffs) != 1 || diffs[0].Action != change.Created {
		t.Errorf("%v, %+v", err, diffs)
	}
}

// TestRunSkipsWhatApplySkips: with SkipUnchanged, an object the last apply
// sent as rendered, and nobody changed since, is unchanged without a dry
// run of its own; any doubt is a dry run: an edit behind apply's back, a
// changed render, another plugin version, --force-conflicts, an ignored
// field, or an app never applied.
func TestRunSkipsWhatApplySkips(t *testing.T) {
	render := func(b string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{ns("web"), obj("ConfigMap", "web", "a", "k=1"), obj("ConfigMap", "web", "b", "k="+b), obj("ConfigMap", "web", "c", "k=1")}
	}
	c := kubetest.New(t)
	dryRuns := func(objs []*unstructured.Unstructured, o diff.Options) ([]string, map[string]diff.Object) {
		t.Helper()
		o.App, o.FieldManager, o.Concurrency, o.Cluster = "web", "kubectl-fleet", 4, "c1"
		sent := len(c.Requests())
		diffs, err := diff.Run(context.Background(), c.Client, objs, o)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range c.Requests()[sent:] {
			if r.Verb == "patch" {
				if !r.DryRun {
					t.Errorf("diff wrote: %+v", r)
				}
				names = append(names, r.Name)
			}
		}
		byName := map[string]diff.Object{}
		for _, d := range diffs {
			if d.Err != nil {
				t.Errorf("%s: %v", d.Path, d.Err)
			}
			byName[d.Path[strings.LastIndex(d.Path, "/")+1:]] = d
		}
		slices.Sort(names)
		return names, byName
	}
	skip := diff.Options{SkipUnchanged: true, Version: "test"}
	check := func(step string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: dry runs of %v, want %v", step, got, want)
		}
	}

	got, _ := dryRuns(render("1"), skip)
	check("never applied", got, "a", "b", "c", "web")
	if err := apply.Run(context.Background(), c.Client, apply.Config{App: "web", Version: "test", Objects: render("1"), Concurrency: 4, Report: func(apply.Change) {}}); err != nil {
		t.Fatal(err)
	}
	got, diffs := dryRuns(render("1"), skip)
	check("just applied", got)
	a := diffs["a"]
	live := c.Live(obj("ConfigMap", "web", "a"))
	if a.Action != change.Unchanged || a.Current.GetResourceVersion() != live.GetResourceVersion() || a.Current.GetUID() != live.GetUID() || a.Current.GetKind() != "ConfigMap" {
		t.Errorf("a skipped as %s, current %v; live version %s", a.Action, a.Current, live.GetResourceVersion())
	}
	got, _ = dryRuns(render("1"), diff.Options{})
	check("without SkipUnchanged", got, "a", "b", "c", "web")
	got, _ = dryRuns(render("1"), diff.Options{SkipUnchanged: true, Version: "other"})
	check("another plugin version", got, "a", "b", "c", "web")
	got, _ = dryRuns(render("1"), diff.Options{SkipUnchanged: true, Version: "test", Force: true})
	check("--force-conflicts", got, "a", "b", "c", "web")
	ignore := []object.IgnoreRule{{Kind: "ConfigMap", Name: "c", JSONPointers: []string{"/data/k"}}}
	got, _ = dryRuns(render("1"), diff.Options{SkipUnchanged: true, Version: "test", Ignore: ignore})
	check("ignoreDifferences", got, "c")

	got, diffs = dryRuns(render("2"), skip)
	check("a changed render", got, "b")
	if diffs["b"].Action != change.Configured || diffs["a"].Action != change.Unchanged {
		t.Errorf("b %s, a %s", diffs["b"].Action, diffs["a"].Action)
	}

	edited := live.DeepCopy()
	edited.Object["data"] = map[string]any{"k": "by-hand"}
	c.Put(edited)
	got, diffs = dryRuns(render("1"), skip)
	check("an edit behind apply's back", got, "a")
	if diffs["a"].Action != change.Configured {
		t.Errorf("the edited object: %s", diffs["a"].Action)
	}
}

// TestRunHealth: with Health (status), each object keeps its health and
// identity, not its contents, whether it was dry-run, skipped as
// unchanged (even with Force) or is a prune.
func TestRunHealth(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	render := []*unstructured.Unstructured{ns("web"), obj("ConfigMap", "web", "same", "k=1"), obj("ConfigMap", "web", "changed", "k=1"), obj("Secret", "web", "gone", "k=YQ==")}
	if err := apply.Run(ctx, c.Client, apply.Config{App: "web", Version: "test", Objects: render, Concurrency: 4, Report: func(apply.Change) {}}); err != nil {
		t.Fatal(err)
	}
	render[2] = obj("ConfigMap", "web", "changed", "k=2")
	sent := len(c.Requests())
	diffs, err := diff.Run(ctx, c.Client, render[:3], diff.Options{App: "web", FieldManager: "kubectl-fleet", Force: true, Concurrency: 4, Cluster: "c1", SkipUnchanged: true, Version: "test", Health: true})
	if err != nil {
		t.Fatal(err)
	}
	var dryRuns []string
	for _, r := range c.Requests()[sent:] {
		if r.Verb == "patch" {
			dryRuns = append(dryRuns, r.Name)
		}
	}
	if !slices.Equal(dryRuns, []string{"changed"}) {
		t.Errorf("dry runs of %v, want [changed] (the rest are unchanged since the apply, Force or not)", dryRuns)
	}
	got := map[string]change.Action{}
	for _, d := range diffs {
		got[d.Path] = d.Action
		if d.Err != nil || d.HealthErr != nil || d.Health == nil || d.Health.Status != "Current" {
			t.Errorf("%s: error %v, health %v (%v)", d.Path, d.Err, d.Health, d.HealthErr)
		}
		if d.Live != nil || d.Text != "" {
			t.Errorf("%s: kept its live object or text", d.Path)
		}
		for _, o := range []*unstructured.Unstructured{d.Current, d.Merged} {
			if o == nil {
				continue
			}
			if o.GetName() == "" || len(o.Object) != 3 || len(o.Object["metadata"].(map[string]any)) > 4 {
				t.Errorf("%s: kept more than its type and identity: %v", d.Path, o.Object)
			}
		}
		if d.Current == nil || d.Current.GetUID() != c.Live(d.Current).GetUID() {
			t.Errorf("%s: current %v", d.Path, d.Current)
		}
	}
	want := map[string]change.Action{"Namespace/web": change.Unchanged, "ConfigMap/web/same": change.Unchanged, "ConfigMap/web/changed": change.Configured, "Secret/web/gone": change.Pruned}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("kinds (-want +got):\n%s", d)
	}
}

// TestServerDefaultsAreNoDrift: what the server defaults and the render
// does not set (a Deployment's strategy, its containers' pull policy) is
// no difference; a field the render sets is.
func TestServerDefaultsAreNoDrift(t *testing.T) {
	c := kubetest.New(t)
	deploy := func(replicas int64) *unstructured.Unstructured {
		d := kubetest.Object("apps/v1", "Deployment", "web", "web")
		d.Object["spec"] = map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}}}}
		return d
	}
	seed(t, c, "web", ns("web"), deploy(2))
	live := c.Live(deploy(2))
	if policy, _, _ := unstructured.NestedString(live.Object, "spec", "strategy", "type"); policy != "RollingUpdate" {
		t.Fatalf("the double did not default the Deployment: %v", live.Object["spec"])
	}
	for _, tt := range []struct {
		replicas int64
		want     change.Action
	}{{2, change.Unchanged}, {3, change.Configured}} {
		diffs, err := diff.Run(context.Background(), c.Client, []*unstructured.Unstructured{ns("web"), deploy(tt.replicas)}, diff.Options{App: "web", FieldManager: "kubectl-fleet", Concurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range diffs {
			if d.Ref == "deployment.apps/web" && (d.Action != tt.want || tt.want == change.Configured && !strings.Contains(d.Text, "-  replicas: 2")) {
				t.Errorf("replicas %d: %s\n%s", tt.replicas, d.Action, d.Text)
			}
		}
	}
}
