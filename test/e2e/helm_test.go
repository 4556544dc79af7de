package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// helmChart writes a small chart into dir/chart: a Namespace (the
// release's), a ConfigMap of values, a second one that an upgrade drops,
// and a pre-install hook. Nothing in it needs controllers, so that every
// phase is healthy on API servers alone.
func helmChart(t *testing.T, dir string, withExtra bool) {
	t.Helper()
	files := map[string]string{
		"chart/Chart.yaml":               "apiVersion: v2\nname: shop\nversion: 0.3.0\nappVersion: \"1.0\"\n",
		"chart/values.yaml":              "greeting: hello\nreplicas: 1\nregion: none\n",
		"chart/templates/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: {{ .Release.Namespace }}}\n",
		"chart/templates/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-settings}
data:
  greeting: {{ .Values.greeting | quote }}
  replicas: {{ .Values.replicas | quote }}
  replicasKind: {{ kindOf .Values.replicas | quote }}
  region: {{ .Values.region | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
`,
		"chart/templates/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-migrated
  annotations: {helm.sh/hook: pre-install}
data: {at: before}
`,
	}
	if withExtra {
		files["chart/templates/extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-extra}\n"
	} else if err := os.Remove(filepath.Join(dir, "chart/templates/extra.yaml")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(dir, name, content); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHelmChartRollout: a local chart deployed through the fleet file,
// with a values file per group and inline values per cluster (typed), to
// staging then production; diffed clean; upgraded with a changed value
// and a dropped template (pruned); rolled back; the pre-install hook's
// object applied in its own phase, before the rest.
func TestHelmChartRollout(t *testing.T) {
	const ns = "e2e-helm"
	fleetYAML := twoGroups + `apps:
  - name: shop
    namespace: ` + ns + `
    helm:
      chart: ./chart
      releaseName: store
      values:
        - values/${FLEET_CLUSTER_GROUP}.yaml
      valuesInline:
        region: ${FLEET_CLUSTER_NAME}
`
	dir := workdir(t, fleetYAML, map[string]string{
		"values/staging.yaml":    "greeting: hi staging\nreplicas: 1\n",
		"values/production.yaml": "greeting: hi production\nreplicas: 3\n",
	})
	helmChart(t, dir, true)
	out, errOut, code := fleet(t, dir, "apply", "--yes")
	if code != 0 || !strings.Contains(out, "[stg]    configmap/store-settings created") || !strings.Contains(out, "[prod-a] configmap/store-migrated created") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if i, j := strings.Index(out, "[stg]    configmap/store-migrated created"), strings.Index(out, "[stg]    configmap/store-settings created"); i < 0 || j < i {
		t.Errorf("the pre-install hook was not applied before the rest:\n%s", out)
	}
	// .Capabilities.KubeVersion is the cluster's own (its discovery), not
	// the default render uses offline.
	raw, _, _ := kubectl(t, "", "version", "--context", "fleet-c1", "-o", "json")
	var v struct {
		Server struct{ GitVersion string } `json:"serverVersion"`
	}
	_ = json.Unmarshal([]byte(raw), &v)
	version := v.Server.GitVersion
	if !strings.HasPrefix(version, "v1.") {
		t.Fatalf("server version %q", version)
	}
	for ctx, want := range map[string]string{
		"fleet-c1": "hi staging 1 float64 stg " + version,
		"fleet-c2": "hi production 3 float64 prod-a " + version,
	} {
		got, _ := get(t, ctx, "configmap", "store-settings", "-n", ns, "-o", "jsonpath={.data.greeting} {.data.replicas} {.data.replicasKind} {.data.region} {.data.kube}")
		if got != want {
			t.Errorf("%s: settings %q, want %q", ctx, got, want)
		}
	}
	if out, errOut, code := fleet(t, dir, "diff"); code != 0 || !strings.Contains(out, "0 to create, 0 to change, 0 to prune") {
		t.Errorf("diff after apply: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "render", "-c", "stg"); code != 0 || !strings.Contains(out, "kube: v1.37.0") {
		t.Errorf("render (offline: the kubeVersion attribute's default): exit %d\n%s%s", code, out, errOut)
	}

	// Upgrade: a changed value, a template dropped.
	helmChart(t, dir, false)
	if err := writeFile(dir, "values/staging.yaml", "greeting: hello again\nreplicas: 1\n"); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "--prune", "-c", "stg")
	if code != 0 || !strings.Contains(out, "configmap/store-settings configured") || !strings.Contains(out, "configmap/store-extra pruned") {
		t.Fatalf("upgrade: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "history", "-c", "stg")
	if code != 0 || !strings.Contains(out, "CHART") || strings.Count(out, "shop@0.3.0") != 2 {
		t.Errorf("history names the chart of each revision: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "rollback", "--app", "shop", "--to-revision", "1", "-c", "stg", "--yes")
	if code != 0 || !strings.Contains(out, "configmap/store-extra created") {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, errOut)
	}
	if got, _ := get(t, "fleet-c1", "configmap", "store-settings", "-n", ns, "-o", "jsonpath={.data.greeting}"); got != "hi staging" {
		t.Errorf("after the rollback: greeting %q", got)
	}

	// The chart's test hook (a Pod) is the app's test: run as a Job on
	// staging (fleet-c1 runs workloads), passed, and removed.
	test := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test\n  annotations: {helm.sh/hook: test}\nspec:\n  containers: [{name: t, image: registry.example/smoke:1}]\n"
	if err := writeFile(dir, "chart/templates/test.yaml", test); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-c", "stg", "--timeout", "2m")
	if code != 0 || !strings.Contains(out, "test job.batch/store-test passed") || strings.Contains(out, "pod/store-test") {
		t.Fatalf("apply with a test hook: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c1", "job", "store-test", "-n", ns) {
		t.Error("the test Job was left in place after it passed")
	}
	// A hook kubectl fleet does not run is named by vet, once.
	if err := writeFile(dir, "chart/templates/cleanup.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cleanup\n  annotations: {helm.sh/hook: pre-delete}\n"); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "vet")
	if code != 0 || strings.Count(out, "warning: app shop: chart hook shop/templates/cleanup.yaml (pre-delete) is not run") != 1 {
		t.Errorf("vet: exit %d\n%s%s", code, out, errOut)
	}
}
