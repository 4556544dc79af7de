package plan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubectlapply "k8s.io/kubectl/pkg/cmd/apply"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
)

func TestLoadRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"kind.json":    `{"apiVersion":"fleet.kubectl.io/v1alpha1","kind":"Fleet","clusters":[]}`,
		"unknown.json": `{"apiVersion":"fleet.kubectl.io/v1alpha1","kind":"Plan","extra":1}`,
		"garbage.json": `apiVersion: x`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "is not a plan") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestAgree(t *testing.T) {
	p := &Plan{Clusters: []Cluster{{Name: "a", Apps: []App{{App: "web"}}}, {Name: "b", Apps: []App{{App: "web"}, {App: "db"}}}}}
	if err := p.Agree(map[string][]string{"a": {"web"}, "b": {"web", "db"}}); err != nil {
		t.Errorf("agreeing: %v", err)
	}
	err := p.Agree(map[string][]string{"b": {"web"}, "c": {"web"}})
	for _, want := range []string{"the plan has cluster a, which is not selected", "cluster c is not in the plan", "cluster b: the plan has app db, which is not rendered for it"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}

// LoadFor reads a plan and refuses one that does not agree with the
// selection, or that cannot be read.
func TestLoadFor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.json")
	want := &Plan{APIVersion: APIVersion, Kind: Kind, Fleet: "f", Clusters: []Cluster{{Name: "a", Apps: []App{{App: "web"}}}}}
	if err := want.Write(path); err != nil {
		t.Fatal(err)
	}
	if p, err := LoadFor(path, map[string][]string{"a": {"web"}}); err != nil || p.Fleet != "f" || p.Cluster("a").App("web") == nil {
		t.Errorf("LoadFor = %+v, %v; want the plan", p, err)
	}
	if p, err := LoadFor(path, map[string][]string{"a": {"web"}, "b": {"web"}}); err == nil || p != nil || !strings.Contains(err.Error(), "cluster b is not in the plan") {
		t.Errorf("another selection: %+v, %v", p, err)
	}
	if p, err := LoadFor(filepath.Join(t.TempDir(), "none.json"), nil); err == nil || p != nil {
		t.Errorf("no file: %+v, %v", p, err)
	}
}

// TestCheck: on the fake cluster, an unchanged plan holds; an edit, a
// creation and a deletion after the plan each make it stale, named.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	ns := kubetest.Object("v1", "Namespace", "", "web")
	conf := kubetest.Object("v1", "ConfigMap", "web", "conf")
	c.Put(ns, conf)
	render := []*unstructured.Unstructured{ns, conf, kubetest.Object("v1", "ConfigMap", "web", "new")}
	diffs := []diff.Object{
		{Ref: "namespace/web", Action: change.Unchanged, Current: c.Live(ns)},
		{Ref: "configmap/conf", Action: change.Configured, Current: c.Live(conf)},
		{Ref: "configmap/new", Action: change.Created, Merged: render[2]},
	}
	objs, err := Objects(diffs)
	if err != nil {
		t.Fatal(err)
	}
	planned := &App{App: "web", Digest: digest.Render(render, nil), Objects: objs}
	if err := Check(ctx, c.Client, planned, render, 4); err != nil {
		t.Fatalf("unchanged: %v", err)
	}
	if err := Check(ctx, c.Client, planned, render[:2], 4); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "the render of app web changed since the plan") {
		t.Errorf("another render: %v", err)
	}
	edited := c.Live(conf)
	edited.Object["data"] = map[string]any{"k": "by hand"}
	c.Put(edited, render[2])
	err = Check(ctx, c.Client, planned, render, 4)
	for _, want := range []string{"configmap/conf changed since the plan (resourceVersion ", "configmap/new was created since the plan"} {
		if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if err := c.Client.Dynamic.Resource(cms).Namespace("web").Delete(ctx, "conf", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, c.Client, planned, render, 4); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "configmap/conf was deleted since the plan") {
		t.Errorf("deleted: %v", err)
	}
	if _, err := Objects([]diff.Object{{Ref: "configmap/x", Err: errors.New("forbidden")}}); err == nil {
		t.Error("a diff with an error made a plan")
	}
}

// A plan records the app's inventory as read: another apply since (its
// members changed, or it was created) makes the plan stale, so that what
// the apply would prune is what was reviewed.
func TestCheckSet(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	parent := func(rv string) *unstructured.Unstructured {
		o := kubetest.Object("v1", "ConfigMap", inventory.Namespace, inventory.ParentName("web"))
		o.SetLabels(map[string]string{kubectlapply.ApplySetParentIDLabel: inventory.ID("web")})
		o.SetAnnotations(map[string]string{kubectlapply.ApplySetToolingAnnotation: inventory.ToolName + "/v1", "members": rv})
		return o
	}
	planned := &App{App: "web", Digest: digest.Render(nil, nil), Set: &Set{}}
	if err := Check(ctx, c.Client, planned, nil, 4); err != nil {
		t.Fatalf("no inventory, as planned: %v", err)
	}
	c.Put(parent("1"))
	if err := Check(ctx, c.Client, planned, nil, 4); err == nil || !strings.Contains(err.Error(), "app web was applied here since the plan") {
		t.Errorf("an inventory created since: %v", err)
	}
	set, err := inventory.Load(ctx, c.Client, "web")
	if err != nil {
		t.Fatal(err)
	}
	planned.Set = SetOf(set)
	if err := Check(ctx, c.Client, planned, nil, 4); err != nil {
		t.Fatalf("the inventory as planned: %v", err)
	}
	c.Put(parent("2"))
	if err := Check(ctx, c.Client, planned, nil, 4); err == nil || !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "the inventory of app web changed since the plan") {
		t.Errorf("an inventory changed since: %v", err)
	}
	planned.Set = nil
	if err := Check(ctx, c.Client, planned, nil, 4); err != nil {
		t.Errorf("a plan from before sets were recorded: %v", err)
	}
}
