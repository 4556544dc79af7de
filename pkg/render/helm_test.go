package render

import (
	"github.com/kubectl-fleet/kubectl-fleet/pkg/subst"

	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/golden"
)

func chartSource(values ...string) Source {
	h := &Helm{Chart: abs("testdata/charts/web"), IncludeCRDs: true, ValuesInline: map[string]any{"image": "nginx:${tag}"}}
	for _, v := range values {
		h.Values = append(h.Values, abs("testdata/charts/values/"+v))
	}
	return Source{Type: HelmChart, Path: h.Chart, Namespace: "shop", Helm: h}
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// A chart renders per cluster as helm template does: values files named
// with ${FLEET_CLUSTER_GROUP}, contents substituted typed (replicas stays
// an integer), inline values last; .Capabilities from the attributes;
// .Release from the app and its namespace; crds/ included; hooks in the
// phases their events say; resource-policy keep is prune: disabled; a
// template's own "${HOME}" is left alone. Golden file:
// testdata/golden/helm.yaml (-update).
func TestHelmChart(t *testing.T) {
	src := chartSource("common.yaml", "${FLEET_CLUSTER_GROUP}.yaml")
	stg := cluster("stg-eu", "staging", map[string]any{"region": "eu", "tag": "1.29", "replicas": 1})
	prod := cluster("prod-us", "production", map[string]any{"region": "us", "tag": "1.29", "replicas": 3, "kubeVersion": "v1.31.4", "apiVersions": []any{"gateway.networking.k8s.io/v1", "networking.k8s.io/v1/Ingress"}})
	e := &Engine{}
	results := e.Render(context.Background(), []Target{{Cluster: stg, App: "web", Source: src}, {Cluster: prod, App: "web", Source: src}})
	for _, r := range results {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Cluster.Name, r.Err)
		}
	}
	golden.Assert(t, "testdata/golden/helm.yaml", dump(results))

	p := results[1].Objects
	d := find(p, "Deployment", "web")
	if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 3 || d.GetNamespace() != "shop" {
		t.Errorf("production's deployment: replicas %d, namespace %q", n, d.GetNamespace())
	}
	info := find(p, "ConfigMap", "web-info")
	if data, _, _ := unstructured.NestedStringMap(info.Object, "data"); data["kubeVersion"] != "v1.31.4" || data["hasGateway"] != "true" || data["namespace"] != "shop" || data["isInstall"] != "true" {
		t.Errorf("capabilities and release: %v", data)
	}
	if info.GetAnnotations()["fleet.kubectl.io/prune"] != "disabled" {
		t.Errorf("resource-policy keep: %v", info.GetAnnotations())
	}
	if find(results[0].Objects, "ConfigMap", "web-cache") != nil || find(p, "ConfigMap", "web-cache") == nil {
		t.Error("the subchart's condition is not per cluster")
	}
	if find(p, "CustomResourceDefinition", "widgets.example.com") == nil {
		t.Error("crds/ not rendered")
	}
	if job := find(p, "Job", "web-migrate"); job == nil || job.GetAnnotations()["fleet.kubectl.io/phase"] != "-1" || job.GetAnnotations()["fleet.kubectl.io/force"] != "enabled" {
		t.Errorf("the pre-install hook: %v", job)
	}
	if done := find(p, "ConfigMap", "web-done"); done == nil || done.GetAnnotations()["fleet.kubectl.io/phase"] != "1" {
		t.Errorf("the post-install hook: %v", done)
	}
	if find(p, "Pod", "web-test") != nil || find(p, "ConfigMap", "web-cleanup") != nil {
		t.Error("a test or pre-delete hook is deployed")
	}
	if c, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers"); !strings.Contains(c[0].(map[string]any)["command"].([]any)[2].(string), "${HOME} shop") {
		t.Errorf("the template's own ${HOME}: %v", c)
	}
	// The built-in API versions name no kinds, as in helm template: the
	// Ingress is there only where the attribute says the kind is served.
	if find(results[0].Objects, "Ingress", "web") != nil || find(p, "Ingress", "web") == nil {
		t.Error("the Ingress does not follow the apiVersions attribute")
	}
	if want := "chart hook web/templates/hooks.yaml (pre-delete) is not run"; len(results[0].Warnings) != 1 || !strings.HasPrefix(results[0].Warnings[0], want) {
		t.Errorf("warnings %q, want one %q", results[0].Warnings, want)
	}
	if e.charts.Len() != 1 {
		t.Errorf("the chart was loaded %d times for two clusters", e.charts.Len())
	}
}

// Bad values are errors that name the file and the field; a chart that
// fails to render names the template.
func TestHelmErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		src   Source
		attrs map[string]any
		want  string
	}{
		{"undefined variable", chartSource("common.yaml"), map[string]any{"tag": "1"}, "values file testdata/charts/values/common.yaml:2: undefined variable ${region} in region"},
		{"missing values file", chartSource("${FLEET_CLUSTER_GROUP}.yaml"), map[string]any{"tag": "1"}, "values file: "},
		{"bad kubeVersion", chartSource(), map[string]any{"tag": "1", "kubeVersion": "banana"}, "attribute kubeVersion"},
		{"no chart", Source{Type: HelmChart, Helm: &Helm{Chart: abs("testdata/charts/nope")}}, nil, "testdata/charts/nope"},
	} {
		r := (&Engine{}).RenderTarget(context.Background(), Target{Cluster: cluster("c1", "qa", tt.attrs), App: "web", Source: tt.src})
		if r.Err == nil || !strings.Contains(r.Err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, r.Err, tt.want)
		}
	}
}

// A chart's test hooks, rendered as the app's tests: the test Pod becomes
// a Job of its name that runs it once; nothing else is rendered.
func TestHelmTests(t *testing.T) {
	src := chartSource()
	tests := *src.Helm
	tests.Tests = true
	src.Helm = &tests
	r := (&Engine{}).RenderTarget(context.Background(), Target{Cluster: cluster("c1", "qa", map[string]any{"tag": "1"}), App: "web", Source: src})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if len(r.Objects) != 1 {
		t.Fatalf("%d test objects, want the one test hook", len(r.Objects))
	}
	job := r.Objects[0]
	backoff, _, _ := unstructured.NestedInt64(job.Object, "spec", "backoffLimit")
	restart, _, _ := unstructured.NestedString(job.Object, "spec", "template", "spec", "restartPolicy")
	if job.GetKind() != "Job" || job.GetName() != "web-test" || job.GetNamespace() != "shop" || backoff != 0 || restart != "Never" {
		t.Errorf("the test: %v", job.Object)
	}
}

// A substitution error in a values file names the line of its field.
func TestValuesErrorLine(t *testing.T) {
	data := []byte("image: x\ncontroller:\n  annotations:\n    region.example.com/name: ok\n  args:\n    - a\n    - ${missing}\n")
	for _, tt := range []struct {
		field, want string
	}{
		{"controller.args[1]", ":7"},
		{"controller.annotations[region.example.com/name]", ":4"},
		{"image", ":1"},
		{"nope.x", ""},
	} {
		if got := lineSuffix(data, &subst.UndefinedError{Name: "missing", Field: tt.field}); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.field, got, tt.want)
		}
	}
}

// TestHelmStrictTemplates: for vet (Lint), a template that reads a value
// nothing sets (a typo) is a warning, as helm lint --strict says; without
// Lint (apply, diff, render) the chart renders as helm template does.
func TestHelmStrictTemplates(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: typo\nversion: 0.1.0\n",
		"values.yaml":       "image: nginx\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {image: {{ .Values.imag | quote }}}\n",
		"templates/ok.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\ndata: {image: {{ .Values.image | quote }}}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := Source{Type: HelmChart, Path: dir, Namespace: "shop", Helm: &Helm{Chart: dir}}
	for _, lint := range []bool{false, true} {
		r := (&Engine{Lint: lint}).Render(context.Background(), []Target{{Cluster: cluster("stg", "staging", nil), App: "typo", Source: src}})[0]
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		warned := strings.Contains(strings.Join(r.Warnings, "\n"), `a template reads a value nothing sets`) && strings.Contains(strings.Join(r.Warnings, "\n"), "imag")
		if warned != lint {
			t.Errorf("lint %v: warnings %q", lint, r.Warnings)
		}
	}
	// The test chart of the other Helm tests passes strict.
	r := (&Engine{Lint: true}).Render(context.Background(), []Target{{Cluster: cluster("stg-eu", "staging", map[string]any{"region": "eu", "tag": "1.29", "replicas": 1}), App: "web", Source: chartSource("common.yaml", "${FLEET_CLUSTER_GROUP}.yaml")}})[0]
	for _, w := range r.Warnings {
		if strings.Contains(w, "nothing sets") {
			t.Errorf("the web chart: %s", w)
		}
	}
}
