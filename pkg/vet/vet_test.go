package vet

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// A problem two clusters share is counted once, said in full on the
// first and named after on the other; JSON says it on each.
func TestOutSaysASharedProblemOnce(t *testing.T) {
	for _, tt := range []struct {
		json bool
		want string
	}{
		{false, "[stg]  app web: chart not found\n[prod] app web: the same problem as on stg\nvet: 1 problem\n"},
		{true, `{"type":"problem","cluster":"stg","app":"web","message":"chart not found"}` + "\n" +
			`{"type":"problem","cluster":"prod","app":"web","message":"chart not found"}` + "\n" +
			`{"type":"summary","clusters":2,"problems":1}` + "\n"},
	} {
		var out bytes.Buffer
		v := NewOut(&out, tt.json)
		v.Prefix = output.NewPrefixer([]string{"stg", "prod"}, false)
		v.Problem("stg", Problem{App: "web", Message: "chart not found"})
		v.Problem("prod", Problem{App: "web", Message: "chart not found"})
		v.Summary(2, "")
		if out.String() != tt.want || v.Problems != 1 {
			t.Errorf("json %v: %d problems,\n%s\nwant\n%s", tt.json, v.Problems, out.String(), tt.want)
		}
	}
}

// A delivery that publishes unsigned, or over plain HTTP off this
// machine, is warned about once; a render that would not be published
// is a problem of its cluster.
func TestDeliveries(t *testing.T) {
	f, err := fleet.Parse([]byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: f}
groups:
  - {name: stg}
  - {name: edge, delivery: {oci: "oci://registry.example.com:5000/f", insecure: true}}
  - {name: lab, delivery: {oci: "oci://127.0.0.1:5000/f", insecure: true, signing: {keyEnv: KEY}}}
clusters:
  - {name: stg-1, group: stg, context: s}
  - {name: edge-1, group: edge}
  - {name: edge-2, group: edge}
  - {name: lab-1, group: lab}
apps:
  - {name: base, kustomize: "oci://10.0.0.7:5000/bases/web:v1", insecure: true}
  - {name: local, kustomize: "oci://127.0.0.1:5000/bases/web:v1", insecure: true}
`), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	v := NewOut(&out, false)
	all := []*fleet.Cluster{f.Cluster("stg-1"), f.Cluster("edge-1"), f.Cluster("edge-2"), f.Cluster("lab-1")}
	v.Deliveries(f, all)
	want := "warning: delivery oci://registry.example.com:5000/f: artifacts are published unsigned: whoever may push there changes what 2 clusters (edge-1, edge-2) run; sign them (delivery.signing) and bootstrap again, so that their Flux verifies each one\n" +
		"warning: delivery oci://registry.example.com:5000/f: insecure: true sends artifacts and credentials over plain HTTP to a registry not on this machine\n" +
		"warning: delivery oci://127.0.0.1:5000/f: Flux's check of a signature (source-controller v1.9.6, and its main branch of July 2026) does not ask which artifact it was made for: whoever may push there can move a tag to another artifact with a signature copied onto it, and no context reads 1 cluster (lab-1), so nothing would see it there; give each a read-only context, so that status sees it and reconcile moves the tag back\n" +
		"warning: app base: insecure: true reads oci://10.0.0.7:5000/bases/web:v1 and sends credentials over plain HTTP from a registry not on this machine\n"
	if out.String() != want {
		t.Errorf("got\n%swant\n%s", out.String(), want)
	}

	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "token"}}}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "conf"}, "data": map[string]any{"password": "hunter2"}}}
	result := func(cluster string, objs ...*unstructured.Unstructured) render.Result {
		return render.Result{Target: render.Target{Cluster: render.Cluster{Name: cluster}, App: "web"}, Objects: objs}
	}
	decrypted := result("lab-1", cm)
	decrypted.Decrypted = true
	results := []render.Result{result("stg-1", secret), result("edge-1", secret), decrypted}
	for _, tt := range []struct {
		cluster string
		want    string
	}{
		{"stg-1", ""},
		{"edge-1", "app web renders Secret token"},
		{"lab-1", "app web renders values decrypted with SOPS"},
	} {
		got := ""
		for _, p := range Unpublishable(f, f.Cluster(tt.cluster), results) {
			got += p.Message
		}
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) || strings.Contains(got, "hunter2") {
			t.Errorf("%s: %q, want %q", tt.cluster, got, tt.want)
		}
	}
}
