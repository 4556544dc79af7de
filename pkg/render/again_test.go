package render

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testfiles"
)

// TestAgain: a render of a source the fleet shares (kustomize, plain
// manifests) makes the same objects again from memory, in the same
// order, even once the files changed; one of the cluster's own (jsonnet,
// a chart) only once packed, and a failed one never.
func TestAgain(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) { testfiles.Write(t, dir, map[string]string{name: text}) }
	write("k/kustomization.yaml", "resources: [cm.yaml, deploy.yaml]\nnamespace: ${ns}\n")
	write("k/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {cluster: '${FLEET_CLUSTER_NAME}', port: '${port:=80}'}\n")
	write("k/deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: '${replicas}', template: {spec: {containers: [{name: web, image: 'r/${FLEET_CLUSTER_GROUP}'}]}}}\n")
	write("m/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {cluster: '${FLEET_CLUSTER_NAME}'}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n")
	write("j/main.jsonnet", "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'cm'}}")
	c := cluster("prod-eu", "production", map[string]any{"ns": "web", "replicas": 3})
	e := &Engine{}
	sources := map[string]Source{
		"kustomize": {Type: Kustomize, Path: filepath.Join(dir, "k"), Namespace: "default"},
		"manifests": {Type: Manifests, Path: filepath.Join(dir, "m"), Namespace: "default"},
	}
	results := map[string]Result{}
	for name, src := range sources {
		results[name] = e.Render(t.Context(), []Target{{Cluster: c, App: "app", Source: src}})[0]
	}
	// The files change under the run: what is made again does not.
	write("k/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: edited}\n")
	write("m/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: edited}\n")
	for name, r := range results {
		if r.Err != nil || len(r.Objects) != 2 {
			t.Fatalf("%s: %d objects, %v", name, len(r.Objects), r.Err)
		}
		objs, err := r.Again()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(dump([]Result{{Objects: r.Objects}}), dump([]Result{{Objects: objs}})); diff != "" {
			t.Errorf("%s made again differs (-render +again):\n%s", name, diff)
		}
		// Its own objects: the render's are not written by a reader of
		// the others.
		objs[0].SetNamespace("other")
		if r.Objects[0].GetNamespace() == "other" {
			t.Errorf("%s: made again shares metadata with the render", name)
		}
	}
	own := e.Render(t.Context(), []Target{
		{Cluster: c, App: "j", Source: Source{Type: Jsonnet, Path: filepath.Join(dir, "j", "main.jsonnet")}},
		{Cluster: cluster("b", "production", nil), App: "k", Source: sources["kustomize"]}, // ${ns} unset
	})
	for _, r := range own {
		if _, err := r.Again(); err == nil {
			t.Errorf("%s on %s: Again did not fail", r.App, r.Cluster.Name)
		}
	}
	// Packed, the jsonnet render is made again from its packed objects;
	// the failed one is not packed.
	j := own[0]
	if err := j.Pack(); err != nil {
		t.Fatal(err)
	}
	objs, err := j.Again()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dump([]Result{{Objects: j.Objects}}), dump([]Result{{Objects: objs}})); diff != "" {
		t.Errorf("jsonnet made again from its packed objects differs (-render +again):\n%s", diff)
	}
	if err := own[1].Pack(); err == nil {
		t.Error("a failed render was packed")
	}
}
