package stream

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// A cluster's folder holds a file per object (the same name twice gets a
// suffix), its Secrets unmasked and private, and the marker that lets the
// next render, and CheckDir, know the folder as the render's.
func TestPrintDir(t *testing.T) {
	dir := t.TempDir()
	c := &fleet.Cluster{Name: "one"}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "Web App", "namespace": "ns"}}}
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "creds"}, "data": map[string]any{"k": "c2VjcmV0"}}}
	var progress, out bytes.Buffer
	p := NewPrinter(Options{Out: &out, Dir: dir, Progress: &progress, Prefix: output.NewPrefixer([]string{"one"}, false)})
	if err := p.Print(c, []*unstructured.Unstructured{cm, cm, secret}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "one"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{".kubectl-fleet-render", "configmap_ns_web-app.yaml", "configmap_ns_web-app_2.yaml", "secret_creds.yaml"}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "one", "secret_creds.yaml")); !strings.Contains(string(data), "c2VjcmV0") {
		t.Errorf("the Secret's file is masked:\n%s", data)
	}
	if fi, err := os.Stat(filepath.Join(dir, "one", "secret_creds.yaml")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the Secret's file: %v, %v", fi, err)
	}
	if out.Len() != 0 || progress.String() != "[one]  wrote 3 objects to "+filepath.Join(dir, "one")+"\n" {
		t.Errorf("stdout %q, progress %q", out.String(), progress.String())
	}
	if err := CheckDir(dir, []*fleet.Cluster{c}); err != nil {
		t.Errorf("the render's own folder refused: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "two"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "two", "kustomization.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(dir, []*fleet.Cluster{c, {Name: "two"}}); err == nil || !strings.Contains(err.Error(), "(kustomization.yaml): not written by kubectl fleet render") {
		t.Errorf("a folder no render wrote: %v", err)
	}
}
