package rendered

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testfiles"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

func result(cluster, app string) render.Result {
	return render.Result{Target: render.Target{Cluster: render.Cluster{Name: cluster}, App: app}}
}

// apps lists the apps of results, in order.
func apps(results []render.Result) []string {
	var out []string
	for _, r := range results {
		out = append(out, r.Cluster.Name+"/"+r.App)
	}
	return out
}

func TestOf(t *testing.T) {
	s := &Set{Results: []render.Result{result("a", "web"), result("a", "db"), result("b", "web"), result("c", "db"), result("b", "db")}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { s.Of("a") }) // indexed once, whoever asks first
	}
	wg.Wait()
	for cluster, want := range map[string][]string{
		"a": {"a/web", "a/db"},
		"b": {"b/web", "b/db"}, // out of order: gathered
		"c": {"c/db"},
		"d": nil,
	} {
		if diff := cmp.Diff(want, apps(s.Of(cluster))); diff != "" {
			t.Errorf("Of(%s) (-want +got):\n%s", cluster, diff)
		}
	}
	// A caller's append does not reach the next cluster's results.
	_ = append(s.Of("a"), result("a", "extra"))
	if got := apps(s.Of("b")); got[0] != "b/web" || s.Results[2].App != "web" {
		t.Errorf("an append to a's results wrote over b's: %v", got)
	}
}

// TestForget: a cluster forgotten keeps its apps and loses its objects,
// in Results and Of alike, also when its results were gathered out of
// order; the other clusters keep theirs, read meanwhile.
func TestForget(t *testing.T) {
	withObjects := func(cluster, app string) render.Result {
		r := result(cluster, app)
		r.Objects = []*unstructured.Unstructured{{Object: map[string]any{"kind": "ConfigMap"}}}
		return r
	}
	s := &Set{Results: []render.Result{withObjects("a", "web"), withObjects("b", "web"), withObjects("c", "web"), withObjects("b", "db")}}
	var wg sync.WaitGroup
	wg.Go(func() { s.Forget("b") })
	wg.Go(func() {
		for range 100 {
			if len(s.Of("a")[0].Objects) != 1 {
				t.Error("a lost its objects")
			}
		}
	})
	wg.Wait()
	if got := apps(s.Of("b")); !cmp.Equal(got, []string{"b/web", "b/db"}) {
		t.Errorf("b's apps after Forget: %v", got)
	}
	for _, r := range s.Of("b") {
		if r.Objects != nil {
			t.Errorf("b/%s kept its objects", r.App)
		}
	}
	for _, r := range s.Results {
		if (r.Cluster.Name == "b") != (r.Objects == nil) {
			t.Errorf("Results: %s/%s has %d objects", r.Cluster.Name, r.App, len(r.Objects))
		}
	}
	// A cluster whose results are in order shares them with Results.
	s.Forget("c")
	if s.Results[2].Objects != nil || s.Of("c")[0].Objects != nil || len(s.Results[0].Objects) != 1 {
		t.Errorf("after forgetting c: Results %d, Of %d objects; a keeps %d", len(s.Results[2].Objects), len(s.Of("c")[0].Objects), len(s.Results[0].Objects))
	}
}

func TestTestsOfAndOnly(t *testing.T) {
	smoke := []*unstructured.Unstructured{{Object: map[string]any{"kind": "Job"}}}
	tests := result("b", "web")
	tests.Objects = smoke
	s := &Set{Results: []render.Result{result("a", "web"), result("b", "web")}, Tests: []render.Result{tests}}
	if got := s.TestsOf("b", "web"); len(got) != 1 || got[0] != smoke[0] {
		t.Errorf("TestsOf(b, web) = %v", got)
	}
	if got := s.TestsOf("a", "web"); got != nil {
		t.Errorf("TestsOf(a, web) = %v, want none", got)
	}
	sub := s.Only(map[string]bool{"b": true})
	if diff := cmp.Diff([]string{"b/web"}, apps(sub.Results)); diff != "" || len(sub.Tests) != 1 || sub.Of("a") != nil {
		t.Errorf("Only(b): results (-want +got):\n%s, tests %d, a's %v", diff, len(sub.Tests), sub.Of("a"))
	}
}

// TestCreateNamespaces: an app's namespace is created (first in its
// render) on each cluster where no app renders that Namespace, by the
// first app there that asks for it.
func TestCreateNamespaces(t *testing.T) {
	withNS := func(r render.Result, names ...string) render.Result {
		for _, n := range names {
			r.Objects = append(r.Objects, render.Namespace(n))
		}
		r.Objects = append(r.Objects, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"}}})
		return r
	}
	asks := map[string]string{"web": "shop", "api": "shop", "db": "data"}
	results := []render.Result{
		withNS(result("a", "web")), withNS(result("a", "api")), withNS(result("a", "db")),
		withNS(result("b", "web")), withNS(result("b", "db"), "data"),
	}
	for i := range results {
		results[i].CreateNamespace = asks[results[i].App]
	}
	createNamespaces(results)
	var got []string
	for _, r := range results {
		var kinds []string
		for _, o := range r.Objects {
			kinds = append(kinds, o.GetKind()+"/"+o.GetName())
		}
		got = append(got, r.Cluster.Name+"/"+r.App+": "+strings.Join(kinds, " "))
	}
	want := []string{
		"a/web: Namespace/shop ConfigMap/cm",
		"a/api: ConfigMap/cm", // web creates it there
		"a/db: Namespace/data ConfigMap/cm",
		"b/web: Namespace/shop ConfigMap/cm",
		"b/db: Namespace/data ConfigMap/cm", // its own, not a second one
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestRenderWarmsOnlyAfterSuccess: Warm, which asks the clusters who the
// user is and takes their locks, starts only once every target of the
// run rendered; a render that fails on one cluster sends nothing to any.
func TestRenderWarmsOnlyAfterSuccess(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) { testfiles.Write(t, dir, map[string]string{name: text}) }
	write("fleet.yaml", "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: stg}, {name: prod}]\n"+
		"clusters:\n- {name: a, group: stg, context: a, attributes: {n: '1'}}\n- {name: b, group: prod, context: b}\n"+
		"apps:\n- {name: web, manifests: web}\n")
	// ${n} has no value on b: its render fails, a's does not.
	write("web/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {n: '${n}'}\n")
	f, err := fleet.Load(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		clusters []string
		warmed   bool
	}{{[]string{"a"}, true}, {[]string{"a", "b"}, false}} {
		warmed := false
		_, err := Render(context.Background(), Config{Fleet: f, Selection: fleet.Selection{Clusters: tt.clusters}, Engine: &render.Engine{},
			Warm: func(context.Context, *Request) { warmed = true }})
		if warmed != tt.warmed || (err == nil) != tt.warmed {
			t.Errorf("clusters %v: warmed %v, err %v; want warmed %v", tt.clusters, warmed, err, tt.warmed)
		}
	}
}

// TestShedAndRerender: a cluster's render let go before its work is made
// again, the same, for whoever reads it meanwhile (not kept) and for its
// work (kept), with the Namespace its app creates; a render that cannot
// be made again from memory is not let go.
func TestShedAndRerender(t *testing.T) {
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"fleet.yaml": "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: prod}]\n" +
			"clusters:\n- {name: a, group: prod, context: a}\n- {name: b, group: prod, context: b}\n" +
			"apps:\n- {name: web, manifests: web, namespace: web, createNamespace: true}\n- {name: dash, jsonnet: dash.jsonnet}\n",
		"web/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {cluster: '${FLEET_CLUSTER_NAME}'}\n",
		"dash.jsonnet": "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'dash', namespace: 'web'}}",
	})
	f, err := fleet.Load(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	render1 := func(apps ...string) *Set {
		t.Helper()
		s, err := Render(t.Context(), Config{Fleet: f, Source: Source{Apps: apps}, Engine: &render.Engine{}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	yamlOf := func(results []render.Result) string {
		var b strings.Builder
		for _, r := range results {
			fmt.Fprintf(&b, "# %s/%s err=%v\n", r.Cluster.Name, r.App, r.Err)
			for _, o := range r.Objects {
				y, _ := yaml.Marshal(o.Object)
				b.Write(y)
			}
		}
		return b.String()
	}
	s := render1("web")
	want := yamlOf(s.Of("b"))
	if !strings.Contains(want, "kind: Namespace") || !strings.Contains(want, "cluster: b") {
		t.Fatalf("b's render:\n%s", want)
	}
	if !s.Shed("b") {
		t.Fatal("b was not shed")
	}
	if s.Results[1].Objects != nil || s.Results[0].Objects == nil {
		t.Fatalf("after shedding b: a holds %d objects, b %d", len(s.Results[0].Objects), len(s.Results[1].Objects))
	}
	if got := yamlOf(s.Of("b")); got != want {
		t.Errorf("b read while shed:\n%s\nwant:\n%s", got, want)
	}
	if s.Results[1].Objects != nil {
		t.Error("reading a shed render kept it")
	}
	if got := yamlOf(s.Only(map[string]bool{"b": true}).Of("b")); got != want {
		t.Errorf("b read through Only while shed:\n%s\nwant:\n%s", got, want)
	}
	if err := s.Rerender("b"); err != nil {
		t.Fatal(err)
	}
	if got := yamlOf(s.Results[1:2]); got != want {
		t.Errorf("b restored:\n%s\nwant:\n%s", got, want)
	}
	if err := s.Rerender("b"); err != nil || yamlOf(s.Of("b")) != want {
		t.Errorf("restoring twice: %v", err)
	}
	// A jsonnet render is the cluster's own: nothing makes it again but
	// its objects packed, and it reads the same.
	s = render1()
	want = yamlOf(s.Of("a"))
	if len(s.Of("a")) != 2 || !strings.Contains(want, "kind: ") {
		t.Fatalf("a's render:\n%s", want)
	}
	if !s.Shed("a") {
		t.Fatal("a cluster with a jsonnet app was not shed")
	}
	if s.Results[0].Objects != nil || s.Results[1].Objects != nil {
		t.Error("a's objects are still held")
	}
	if got := yamlOf(s.Of("a")); got != want {
		t.Errorf("a read while shed:\n%s\nwant:\n%s", got, want)
	}
	if err := s.Rerender("a"); err != nil || yamlOf(s.Of("a")) != want {
		t.Errorf("a restored (%v):\n%s\nwant:\n%s", err, yamlOf(s.Of("a")), want)
	}
}

// TestRenderSheds: the clusters Config.Shed names hold no objects once
// rendered, chunk by chunk, and read the same as a render that kept
// them; a render that fails still fails whole.
func TestRenderSheds(t *testing.T) {
	dir := t.TempDir()
	var fleetYAML strings.Builder
	fleetYAML.WriteString("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: prod}]\nclusters:\n")
	for i := range shedChunk + 6 {
		fmt.Fprintf(&fleetYAML, "- {name: c%02d, group: prod, context: c%02d, attributes: {n: '%d'}}\n", i, i, i)
	}
	fleetYAML.WriteString("apps:\n- {name: web, manifests: web, namespace: web, createNamespace: true}\n- {name: db, manifests: db}\n")
	testfiles.Write(t, dir, map[string]string{
		"fleet.yaml":  fleetYAML.String(),
		"web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {n: '${n}'}\n",
		"db/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db, namespace: db}\ndata: {cluster: '${FLEET_CLUSTER_NAME}'}\n",
	})
	f, err := fleet.Load(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := Render(t.Context(), Config{Fleet: f, Engine: &render.Engine{}})
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	shed, err := Render(t.Context(), Config{Fleet: f, Engine: &render.Engine{}, Shed: func(cs []*fleet.Cluster) map[string]bool {
		asked++
		out := map[string]bool{}
		for _, c := range cs[1:] {
			out[c.Name] = true
		}
		return out
	}})
	if err != nil || asked != 1 {
		t.Fatalf("asked %d times: %v", asked, err)
	}
	if len(shed.Results) != len(kept.Results) {
		t.Fatalf("%d results; want %d", len(shed.Results), len(kept.Results))
	}
	for _, r := range shed.Results {
		if first := r.Cluster.Name == "c00"; first != (r.Objects != nil) {
			t.Errorf("%s/%s holds %d objects after the render", r.Cluster.Name, r.App, len(r.Objects))
		}
	}
	yamlOf := func(results []render.Result) string {
		var b strings.Builder
		for _, r := range results {
			fmt.Fprintf(&b, "# %s/%s\n", r.Cluster.Name, r.App)
			for _, o := range r.Objects {
				y, _ := yaml.Marshal(o.Object)
				b.Write(y)
			}
		}
		return b.String()
	}
	for _, c := range kept.Clusters {
		if got, want := yamlOf(shed.Of(c.Name)), yamlOf(kept.Of(c.Name)); got != want {
			t.Errorf("%s read:\n%s\nwant:\n%s", c.Name, got, want)
		}
	}
	// A render that fails fails whole, shed or not.
	if err := os.WriteFile(filepath.Join(dir, "db", "cm.yaml"), []byte("data: {n: '${missing}'}\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: db}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Render(t.Context(), Config{Fleet: f, Engine: &render.Engine{}, Shed: func(cs []*fleet.Cluster) map[string]bool { return map[string]bool{"c01": true} }}); err == nil {
		t.Error("a failed render succeeded")
	}
}
