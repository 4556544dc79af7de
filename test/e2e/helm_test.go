package e2e

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"
	helmrepo "helm.sh/helm/v4/pkg/repo/v1"
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
	// Production alone, in another run: the promotion rule renders staging
	// again, with staging's own capabilities, and finds the release it
	// verified.
	if out, errOut, code := fleet(t, dir, "apply", "-g", "production", "--yes"); code != 0 || strings.Contains(out, "not started") || !strings.Contains(out, "[prod-a] configmap/store-settings unchanged") {
		t.Errorf("apply -g production in a later run: exit %d\n%s%s", code, out, errOut)
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

// publish packages the chart in src into the repository folder repoDir
// and indexes it, as a chart repository serves charts.
func publish(t *testing.T, src, repoDir string) {
	t.Helper()
	ch, err := loader.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chartutil.Save(ch, repoDir); err != nil {
		t.Fatal(err)
	}
	index, err := helmrepo.IndexDirectory(repoDir, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteFile(filepath.Join(repoDir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHelmRepositoryAndLock: a chart from an HTTP chart repository (served
// by the test), asked for by a version range, is pinned by deps update to
// its exact version and digest in fleet.lock, and applied. Republished
// under the same version with other content, it is not deployed: from the
// chart cache the pinned one still renders (the repository down), and
// with an empty cache the new archive is refused for its digest, until
// deps update accepts it.
func TestHelmRepositoryAndLock(t *testing.T) {
	const ns = "e2e-helm-repo"
	home := t.TempDir()
	for k, v := range map[string]string{"HELM_CONFIG_HOME": "config", "HELM_CACHE_HOME": "cache", "HELM_DATA_HOME": "data", "KUBECTL_FLEET_CHART_CACHE": "charts"} {
		t.Setenv(k, filepath.Join(home, v))
	}
	src, repoDir := t.TempDir(), t.TempDir()
	helmChart(t, src, false)
	publish(t, filepath.Join(src, "chart"), repoDir)
	var down atomic.Bool // the repository answers 503 while set
	files := http.FileServer(http.Dir(repoDir))
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer server.Close()

	// Apps are named apart from the other tests' (an app's set is per name).
	dir := workdir(t, stgOnly+"apps:\n  - name: shoprepo\n    namespace: "+ns+"\n    helm: {chart: shop, repo: '"+server.URL+"', version: '~0.3.0', releaseName: shop}\n", map[string]string{})
	out, errOut, code := fleet(t, dir, "deps", "update")
	if code != 0 || !strings.Contains(out, "shoprepo: shop 0.3.0 sha256:") {
		t.Fatalf("deps update: exit %d\n%s%s", code, out, errOut)
	}
	lock, err := os.ReadFile(filepath.Join(dir, "fleet.lock"))
	if err != nil || !strings.Contains(string(lock), "resolved: 0.3.0") || !strings.Contains(string(lock), "version: ~0.3.0") {
		t.Fatalf("fleet.lock: %v\n%s", err, lock)
	}
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 || !strings.Contains(out, "configmap/shop-settings created") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := fleet(t, dir, "history"); code != 0 || !strings.Contains(out, "shop@0.3.0 sha256:") {
		t.Errorf("history names the pinned chart and its digest:\n%s", out)
	}

	// The same version, republished with other content.
	if err := writeFile(src, "chart/values.yaml", "greeting: tampered\nreplicas: 1\nregion: none\n"); err != nil {
		t.Fatal(err)
	}
	publish(t, filepath.Join(src, "chart"), repoDir)
	down.Store(true)
	out, errOut, code = fleet(t, dir, "diff")
	if code != 0 || !strings.Contains(out, "0 to create, 0 to change") {
		t.Errorf("diff from the cache (the pinned chart, the repository down): exit %d\n%s%s", code, out, errOut)
	}
	down.Store(false)
	t.Setenv("KUBECTL_FLEET_CHART_CACHE", filepath.Join(home, "empty"))
	out, errOut, code = fleet(t, dir, "apply")
	if code == 0 || !strings.Contains(errOut, "fleet.lock pins sha256:") || strings.Contains(out, "configured") {
		t.Fatalf("apply of a republished chart: exit %d\n%s%s", code, out, errOut)
	}
	if got, _ := get(t, "fleet-c1", "configmap", "shop-settings", "-n", ns, "-o", "jsonpath={.data.greeting}"); got != "hello" {
		t.Errorf("greeting %q: the republished chart was deployed", got)
	}
	if out, errOut, code := fleet(t, dir, "deps", "update"); code != 0 {
		t.Fatalf("deps update again: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 || !strings.Contains(out, "configmap/shop-settings configured") {
		t.Fatalf("apply once accepted: exit %d\n%s%s", code, out, errOut)
	}
	// A local chart that depends on the repository's: deps update fetches
	// the dependency into its charts/, as helm dependency build does, and
	// the render has the dependency's objects.
	umbrella := filepath.Join(dir, "umbrella")
	for name, content := range map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: umbrella\nversion: 1.0.0\ndependencies:\n  - {name: shop, version: 0.3.0, repository: '" + server.URL + "'}\n",
		"templates/note.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: umbrella-note}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(umbrella, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(umbrella, name, content); err != nil {
			t.Fatal(err)
		}
	}
	ff := filepath.Join(dir, "fleet.yaml")
	data, _ := os.ReadFile(ff)
	withUmbrella := string(data) + "  - name: umbrella\n    namespace: e2e-umbrella\n    helm: {chart: ./umbrella}\n"
	if err := os.WriteFile(ff, []byte(withUmbrella), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := fleet(t, dir, "render", "--app", "umbrella"); code == 0 || !strings.Contains(errOut, "helm dependency build") {
		t.Errorf("render of a chart whose dependency is missing: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "deps", "update"); code != 0 || !strings.Contains(out, "umbrella: fetched the dependencies of ./umbrella into its charts/") {
		t.Fatalf("deps update of the umbrella chart: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "render", "--app", "umbrella"); code != 0 || !strings.Contains(out, "name: umbrella-note") || !strings.Contains(out, "name: umbrella-settings") {
		t.Errorf("render of the umbrella chart: exit %d\n%s%s", code, out, errOut)
	}

	// A fleet file that asks for another version than the lock pins is
	// told to update the lock.
	if err := os.WriteFile(ff, []byte(strings.Replace(withUmbrella, "~0.3.0", "0.3.0", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := fleet(t, dir, "render"); code == 0 || !strings.Contains(errOut, "app shoprepo: fleet.lock pins chart shop ~0.3.0") || !strings.Contains(errOut, "run kubectl fleet deps update") {
		t.Errorf("render with a stale lock: exit %d\n%s%s", code, out, errOut)
	}
}

// TestHelmOCIAndAtomic: a chart pushed to an OCI registry (in process,
// started by the test) is deployed from oci://, with --set given ad hoc;
// an upgrade to a chart version the API server rejects, with --atomic,
// is rolled back to the version before.
func TestHelmOCIAndAtomic(t *testing.T) {
	const ns = "e2e-helm-oci"
	home := t.TempDir()
	for k, v := range map[string]string{"HELM_CONFIG_HOME": "config", "HELM_CACHE_HOME": "cache", "HELM_DATA_HOME": "data", "KUBECTL_FLEET_CHART_CACHE": "charts"} {
		t.Setenv(k, filepath.Join(home, v))
	}
	reg := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	rc, err := registry.NewClient(registry.ClientOptPlainHTTP())
	if err != nil {
		t.Fatal(err)
	}
	push := func(src, version string) {
		t.Helper()
		ch, err := loader.Load(src)
		if err != nil {
			t.Fatal(err)
		}
		ch.Metadata.Version = version
		tgz, err := chartutil.Save(ch, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(tgz)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rc.Push(data, host+"/charts/shop:"+version); err != nil {
			t.Fatalf("push %s: %v", version, err)
		}
	}
	src := t.TempDir()
	helmChart(t, src, false)
	push(filepath.Join(src, "chart"), "1.0.0")
	if err := writeFile(src, "chart/templates/broken.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: broken}\nspec:\n  ports: [{port: 0}]\n"); err != nil {
		t.Fatal(err)
	}
	push(filepath.Join(src, "chart"), "1.1.0")

	dir := workdir(t, stgOnly, map[string]string{})
	ref := "oci://" + host + "/charts/shop"
	chart := func(version string, extra ...string) []string {
		return append([]string{"apply", "--chart", ref, "--chart-version", version, "--plain-http", "--name", "shopoci", "-n", ns}, extra...)
	}
	out, errOut, code := fleet(t, dir, append(chart("1.0.0"), "--set", "greeting=from oci")...)
	if code != 0 || !strings.Contains(out, "configmap/shopoci-settings created") {
		t.Fatalf("apply from oci://: exit %d\n%s%s", code, out, errOut)
	}
	if got, _ := get(t, "fleet-c1", "configmap", "shopoci-settings", "-n", ns, "-o", "jsonpath={.data.greeting}"); got != "from oci" {
		t.Errorf("--set greeting: %q", got)
	}
	out, errOut, code = fleet(t, dir, append(chart("1.1.0"), "--atomic", "--set", "greeting=upgraded")...)
	if code != 1 || !strings.Contains(out, "service/broken failed") || !strings.Contains(out, "rolled back to r1") {
		t.Fatalf("apply --atomic of a rejected chart: exit %d\n%s%s", code, out, errOut)
	}
	if got, _ := get(t, "fleet-c1", "configmap", "shopoci-settings", "-n", ns, "-o", "jsonpath={.data.greeting}"); got != "from oci" {
		t.Errorf("after the atomic rollback: greeting %q", got)
	}
	if out, _, code := fleet(t, dir, "history", "--app", "shopoci"); code != 0 || !strings.Contains(out, "shop@1.0.0") {
		t.Errorf("history:\n%s", out)
	}
}
