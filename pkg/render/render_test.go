package render

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/internal/golden"
)

func cluster(name, group string, attrs map[string]any) Cluster {
	return Cluster{Name: name, Group: group, Context: "ctx-" + name, Fleet: "acme", Labels: map[string]string{"region": "eu"}, Attributes: attrs}
}

var attrs = map[string]any{"replicas": 2, "debug": true, "tags": []any{"a", "b"}}

// dump prints each result as the render command does.
func dump(results []Result) []byte {
	var b bytes.Buffer
	for _, r := range results {
		fmt.Fprintf(&b, "# Cluster: %s app: %s\n", r.Cluster.Name, r.App)
		if r.Err != nil {
			fmt.Fprintf(&b, "# error: %v\n", r.Err)
			continue
		}
		for _, o := range r.Objects {
			y, _ := yaml.Marshal(o.Object)
			b.Write(y)
			b.WriteString("---\n")
		}
	}
	return b.Bytes()
}

func renderOne(t *testing.T, src Source, c Cluster) Result {
	t.Helper()
	return (&Engine{}).Render(context.Background(), []Target{{Cluster: c, App: "app", Source: src}})[0]
}

func TestKustomizeLookup(t *testing.T) {
	dir := filepath.Join("testdata", "lookup")
	tests := []struct {
		cluster Cluster
		want    string // overlay folder chosen
	}{
		{cluster("staging-eu", "staging", attrs), "staging"},
		{cluster("prod-us", "production", attrs), "prod-us"},
		{cluster("prod-eu", "production", attrs), "."},
		{cluster("staging", "production", attrs), "staging"}, // a cluster's own folder wins over its group's
	}
	var targets []Target
	for _, tt := range tests {
		got, err := KustomizeDir(dir, &tt.cluster)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, tt.want); got != want {
			t.Errorf("%s: overlay %s, want %s", tt.cluster.Name, got, want)
		}
		targets = append(targets, Target{Cluster: tt.cluster, App: "web", Source: Source{Type: Kustomize, Path: dir, Namespace: "web"}})
	}
	e := &Engine{}
	results := e.Render(context.Background(), targets)
	golden.Assert(t, "testdata/golden/kustomize-lookup.yaml", dump(results))
	if n := e.Renders(); n != 3 {
		t.Errorf("%d kustomize builds for 3 distinct overlays", n)
	}

	_, err := KustomizeDir(filepath.Join(dir, "base", "nope"), &tests[0].cluster)
	if err == nil || !strings.Contains(err.Error(), "no kustomization in") {
		t.Errorf("want a no-kustomization error, got %v", err)
	}
}

func TestRenderTypes(t *testing.T) {
	c := cluster("prod-eu", "production", map[string]any{"replicas": 3, "count": 7})
	tests := []struct {
		name string
		src  Source
	}{
		{"jsonnet-object", Source{Type: Jsonnet, Path: "testdata/jsonnet/object.jsonnet"}},
		{"jsonnet-jpath", Source{Type: Jsonnet, Path: "testdata/jsonnet/object.jsonnet", JPath: []string{"testdata/jsonnet/lib"}}},
		{"jsonnet-array", Source{Type: Jsonnet, Path: "testdata/jsonnet/array.jsonnet"}},
		{"jsonnet-list-extvar", Source{Type: Jsonnet, Path: "testdata/jsonnet/list.jsonnet"}},
		{"jsonnet-nested", Source{Type: Jsonnet, Path: "testdata/jsonnet/nested.jsonnet", Namespace: "default-ns"}},
		{"jsonnet-scalar", Source{Type: Jsonnet, Path: "testdata/jsonnet/scalar.jsonnet"}},
		{"jsonnet-error", Source{Type: Jsonnet, Path: "testdata/jsonnet/error.jsonnet"}},
		{"manifests-list", Source{Type: Manifests, Path: "testdata/manifests/list.yaml"}},
		{"manifests-dir", Source{Type: Manifests, Path: "testdata/manifests/dir", Namespace: "ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden.Assert(t, "testdata/golden/"+tt.name+".yaml", dump([]Result{renderOne(t, tt.src, c)}))
		})
	}
}

func TestStdin(t *testing.T) {
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: in}\ndata: {c: '${FLEET_CLUSTER_NAME}'}\n"
	e := &Engine{Stdin: strings.NewReader(in)}
	var targets []Target
	for _, name := range []string{"a", "b"} {
		targets = append(targets, Target{Cluster: cluster(name, "g", nil), App: "in", Source: Source{Type: Manifests, Path: "-"}})
	}
	results := e.Render(context.Background(), targets)
	for i, want := range []string{"a", "b"} {
		if results[i].Err != nil {
			t.Fatal(results[i].Err)
		}
		got, _, _ := unstructured.NestedString(results[i].Objects[0].Object, "data", "c")
		if got != want {
			t.Errorf("cluster %s read %q from stdin", want, got)
		}
	}
}

func TestSubstitutionTypes(t *testing.T) {
	r := renderOne(t, Source{Type: Kustomize, Path: "testdata/lookup"}, cluster("staging-eu", "staging", attrs))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	var dep *unstructured.Unstructured
	for _, o := range r.Objects {
		if o.GetKind() == "Deployment" {
			dep = o
		}
	}
	replicas, found, err := unstructured.NestedInt64(dep.Object, "spec", "replicas")
	if err != nil || !found || replicas != 2 {
		t.Errorf("spec.replicas = %v (found %v, %v), want the integer 2", replicas, found, err)
	}
}

// Every object that fails substitution is reported, not only the first,
// so that one pass over a third-party stack fixes them all; the app's
// substitute: false leaves them alone.
func TestUndefinedVariable(t *testing.T) {
	c := cluster("staging-eu", "staging", map[string]any{"debug": false, "tags": "x"})
	r := renderOne(t, Source{Type: Kustomize, Path: "testdata/lookup"}, c)
	for _, want := range []string{
		"cluster staging-eu: app app: 2 objects fail variable substitution",
		"\n    ConfigMap settings: undefined variable ${replicas} in data.replicas",
		"\n    Deployment web: undefined variable ${replicas} in spec.replicas",
	} {
		if r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("error %v, want %q", r.Err, want)
		}
	}
	r = renderOne(t, Source{Type: Kustomize, Path: "testdata/lookup", NoSubstitute: true}, c)
	if r.Err != nil || !strings.Contains(string(dump([]Result{r})), "${replicas}") {
		t.Errorf("substitute: false: %v", r.Err)
	}
}

func TestRenderOrderIsStable(t *testing.T) {
	src := Source{Type: Jsonnet, Path: "testdata/jsonnet/nested.jsonnet"}
	c := cluster("x", "g", map[string]any{"replicas": 1})
	first := dump([]Result{renderOne(t, src, c)})
	for i := 0; i < 5; i++ {
		if got := dump([]Result{renderOne(t, src, c)}); !bytes.Equal(got, first) {
			t.Fatalf("render %d differs from the first", i)
		}
	}
}

func TestRenderErrorsName(t *testing.T) {
	r := renderOne(t, Source{Type: Kustomize, Path: "testdata/nope"}, cluster("c1", "g", nil))
	if r.Err == nil || !strings.Contains(r.Err.Error(), "cluster c1: app app: no kustomization in") {
		t.Errorf("got %v", r.Err)
	}
	r = renderOne(t, Source{Type: Manifests, Path: "testdata/manifests/dir/sub/ignored.txt"}, cluster("c1", "g", nil))
	if r.Err == nil || !strings.Contains(r.Err.Error(), "ignored.txt") {
		t.Errorf("got %v", r.Err)
	}
}

// TestRenderTargetRelease: a cluster's jsonnet evaluations are kept until
// the cluster is released, then evaluated again if asked for.
func TestRenderTargetRelease(t *testing.T) {
	e := &Engine{}
	src := Source{Type: Jsonnet, Path: "testdata/jsonnet/object.jsonnet"}
	one, two := cluster("one", "g", attrs), cluster("two", "g", attrs)
	for _, tg := range []Target{{Cluster: one, App: "a", Source: src}, {Cluster: one, App: "b", Source: src}, {Cluster: two, App: "a", Source: src}} {
		if r := e.RenderTarget(context.Background(), tg); r.Err != nil || len(r.Objects) == 0 {
			t.Fatalf("%s/%s: %d objects, %v", tg.Cluster.Name, tg.App, len(r.Objects), r.Err)
		}
	}
	if n := e.Renders(); n != 2 {
		t.Errorf("%d evaluations for two clusters", n)
	}
	e.Release("one")
	if len(e.perCluster) != 1 {
		t.Errorf("%d clusters kept after one was released of two", len(e.perCluster))
	}
	if r := e.RenderTarget(context.Background(), Target{Cluster: one, App: "a", Source: src}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if n := e.Renders(); n != 3 {
		t.Errorf("%d evaluations; want 3: a released cluster is evaluated again", n)
	}
}

// A jsonnet source reads nothing outside its own folder and the library
// folders: not an absolute path, not a relative one that climbs out, not
// through a symbolic link.
func TestJsonnetImportsStayInside(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "token")
	if err := os.WriteFile(secret, []byte("s3cr3t"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "apps", "web"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "lib.libsonnet"), []byte(`{name: "from-lib"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "apps", "web", "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	render := func(t *testing.T, body string, jpath ...string) (string, error) {
		t.Helper()
		main := filepath.Join(root, "apps", "web", "main.jsonnet")
		if err := os.WriteFile(main, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		e := &Engine{}
		res := e.Render(context.Background(), []Target{{Cluster: Cluster{Name: "c"}, App: "web", Source: Source{Type: Jsonnet, Path: main, JPath: jpath}}})
		if res[0].Err != nil {
			return "", res[0].Err
		}
		return res[0].Objects[0].GetName(), nil
	}
	cm := func(expr string) string {
		return `{apiVersion: "v1", kind: "ConfigMap", metadata: {name: ` + expr + `}}`
	}
	if name, err := render(t, `local l = import "lib.libsonnet"; `+cm("l.name"), root); err != nil || name != "from-lib" {
		t.Fatalf("an import from a library folder: %q, %v", name, err)
	}
	for what, body := range map[string]string{
		"an absolute path": cm(`std.strReplace(importstr "` + secret + `", "3", "e")`),
		"a climb out":      cm(`importstr "` + filepath.Join("..", "..", "..", filepath.Base(outside), "token") + `"`),
		"a symbolic link":  cm(`importstr "link"`),
	} {
		_, err := render(t, body)
		if err == nil || !strings.Contains(err.Error(), "is outside the source's folder") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v", what, err)
		}
	}
	// A library folder given with -J is inside.
	if _, err := render(t, cm(`std.strReplace(importstr "token", "s3cr3t", "token")`), outside); err != nil {
		t.Errorf("an import from a library folder: %v", err)
	}
}
