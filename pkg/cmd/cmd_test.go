package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-fleet/kubectl-fleet/internal/golden"
	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render/stream"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/roster"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/vet"
)

const example = "../../examples/fleet.yaml"

// run runs the plugin as a user would and returns stdout, stderr and the
// exit code.
func run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	t.Setenv("NO_COLOR", "")
	t.Setenv("KUBECONFIG", filepath.Join("testdata", "kubeconfig"))
	// The example fleet's encrypted file, decrypted with its demo key.
	t.Setenv("SOPS_AGE_KEY_FILE", filepath.Join("..", "..", "examples", "demo-age-key.txt"))
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, args)
	return out.String(), errOut.String(), code
}

func TestRenderExample(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"render-example.yaml", []string{"render", "-F", example}},
		{"render-example.json", []string{"render", "-F", example, "-o", "json"}},
		{"render-staging-adhoc.yaml", []string{"render", "-F", example, "-k", "../../examples/apps/web/overlays", "--group", "staging"}},
		{"render-prod-us-jsonnet.yaml", []string{"build", "-F", example, "-j", "../../examples/apps/dashboard/main.jsonnet", "-c", "prod-us", "-n", "dash"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, "", tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden.Assert(t, filepath.Join("testdata", "golden", tt.name), []byte(out))
		})
	}
}

func TestRenderJSONLines(t *testing.T) {
	out, _, code := run(t, "", "render", "-F", example, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var clusters []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rc stream.RenderedCluster
		if err := json.Unmarshal([]byte(line), &rc); err != nil {
			t.Fatalf("not a JSON line: %v: %s", err, line)
		}
		clusters = append(clusters, rc.Cluster)
		for _, o := range rc.Objects {
			if o["kind"] == "Deployment" && o["metadata"].(map[string]any)["name"] == "web" {
				if _, ok := o["spec"].(map[string]any)["replicas"].(float64); !ok {
					t.Errorf("%s: replicas is not a number", rc.Cluster)
				}
			}
		}
	}
	if got := strings.Join(clusters, ","); got != "staging-eu,prod-eu,prod-us" {
		t.Errorf("clusters %s", got)
	}
}

func TestRenderSecrets(t *testing.T) {
	const marker = "s3cr3t-marker-7f3a"
	fleetFile := filepath.Join("testdata", "secret", "fleet.yaml")
	out, errOut, code := run(t, "", "render", "-F", fleetFile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out+errOut, marker) || strings.Contains(out, "czNjcjN0") {
		t.Errorf("render printed a Secret value:\n%s", out)
	}
	if !strings.Contains(out, "password: '***'") {
		t.Errorf("no masked value in:\n%s", out)
	}
	out, _, _ = run(t, "", "render", "-F", fleetFile, "--show-secrets")
	if !strings.Contains(out, marker) {
		t.Errorf("--show-secrets did not show the value:\n%s", out)
	}
	// A cluster folder with files no render wrote (an overlay of the
	// same name) is refused, with nothing written; one a render wrote
	// loses the files that render wrote, and keeps the others.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "one"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one-beside.yaml", filepath.Join("one", "kustomization.yaml")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, code = run(t, "", "render", "-F", fleetFile, "--output-dir", dir)
	if code == 0 || !strings.Contains(errOut, "(kustomization.yaml): not written by kubectl fleet render") {
		t.Fatalf("a folder that is not the render's: exit %d: %s", code, errOut)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "one", "kustomization.yaml")); string(data) != "x" {
		t.Errorf("the user's kustomization.yaml became %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "one", "secret_app_creds.yaml")); !os.IsNotExist(err) {
		t.Errorf("written beside the user's files: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "one", "kustomization.yaml")); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code = run(t, "", "render", "-F", fleetFile, "--output-dir", dir); code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, errOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, "one", "secret_app_creds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), marker) {
		t.Errorf("--output-dir should write what was rendered, got:\n%s", data)
	}
	if runtime.GOOS != "windows" {
		secret, _ := os.Stat(filepath.Join(dir, "one", "secret_app_creds.yaml"))
		folder, _ := os.Stat(filepath.Join(dir, "one"))
		if secret.Mode().Perm() != 0o600 || folder.Mode().Perm() != 0o700 {
			t.Errorf("the Secret's file is %v, its folder %v: want 0600 and 0700", secret.Mode().Perm(), folder.Mode().Perm())
		}
	}
	// A file an earlier render wrote goes; one added since stays.
	for name, content := range map[string]string{"stale.yaml": "x", "mine.yaml": "mine"} {
		if err := os.WriteFile(filepath.Join(dir, "one", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "one", ".kubectl-fleet-render"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("stale.yaml\n../one-beside.yaml\n")
	_ = f.Close()
	if _, errOut, code := run(t, "", "render", "-F", fleetFile, "--output-dir", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "one", "stale.yaml")); !os.IsNotExist(err) {
		t.Errorf("a file the last render wrote was left: %v", err)
	}
	for _, name := range []string{filepath.Join("one", "mine.yaml"), "one-beside.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s, not the render's, was touched: %v", name, err)
		}
	}
}

// The example fleet's dashboard imports an encrypted file: --output-dir
// cannot leave it encrypted for Flux, and says so; with --decrypt, its
// Secret is written decrypted, for its owner only.
func TestOutputDirExample(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := run(t, "", "render", "-F", example, "--output-dir", dir)
	if code != 1 || !strings.Contains(errOut, "apps/dashboard/credentials.json: SOPS: it feeds the render") {
		t.Fatalf("without --decrypt: exit %d: %s", code, errOut)
	}
	_, errOut, code = run(t, "", "render", "-F", example, "--output-dir", dir, "--decrypt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	secret := filepath.Join(dir, "prod-eu", "secret_dashboard_dashboard-credentials.yaml")
	if data, err := os.ReadFile(secret); err != nil || !strings.Contains(string(data), "demo-only-dashboard-password") {
		t.Errorf("%s: %v\n%s", secret, err, data)
	} else if fi, _ := os.Stat(secret); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", secret, fi.Mode().Perm())
	}
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	golden.Assert(t, "testdata/golden/output-dir.txt", []byte(strings.Join(files, "\n")+"\n"))
	if !strings.Contains(errOut, "[prod-us]") || !strings.Contains(errOut, "wrote 10 objects") {
		t.Errorf("progress on stderr: %s", errOut)
	}
}

// The example fleet's edge (make demo's pulled group) vets clean, and
// bootstrap writes what makes edge-1's Flux follow its tag, verified
// with the demo key's public half.
func TestExampleEdge(t *testing.T) {
	edge := filepath.Join("..", "..", "examples", "edge.yaml")
	out, errOut, code := run(t, "", "vet", "--no-kubeconfig", "-F", edge)
	if code != 0 || !strings.Contains(out, "[edge-1] ok: 5 objects from app web") {
		t.Fatalf("vet of examples/edge.yaml: exit %d: %s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "bootstrap", "-F", edge)
	if code != 0 {
		t.Fatalf("bootstrap of examples/edge.yaml: exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"url: oci://127.0.0.1:5310/fleets/acme-edge/web", "tag: edge-1", "provider: cosign", "name: acme-edge-cosign", "insecure: true"} {
		if !strings.Contains(out, want) {
			t.Errorf("bootstrap does not write %q:\n%s", want, out)
		}
	}
}

func TestVet(t *testing.T) {
	out, errOut, code := run(t, "", "vet", "-F", example)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	golden.Assert(t, "testdata/golden/vet-example.txt", []byte(out))

	bad := filepath.Join(t.TempDir(), "fleet.yaml")
	data, _ := os.ReadFile(example)
	text := strings.Replace(string(data), "context: fleet-c2", "contxet: fleet-c2", 1)
	text = strings.Replace(text, "group: production\n    context: fleet-c3", "group: prod\n    context: fleet-c3", 1)
	text = text[:strings.Index(text, "apps:")] + text[strings.Index(text, "approvers:"):]
	if err := os.WriteFile(bad, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = run(t, "", "vet", "-F", bad)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{
		bad + `:37: cluster prod-eu: contxet: unknown field "contxet" (did you mean "context"?)`,
		bad + `:35: cluster prod-eu: context: required`,
		bad + `:41: cluster prod-us: group: unknown group "prod" (groups: staging, production)`,
		"vet: 3 problems in " + bad,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("vet output lacks %q:\n%s", want, out)
		}
	}
}

func TestVetRenderProblems(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("fleet.yaml", "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: g}]\nclusters:\n  - {name: a, group: g, context: fleet-c1, attributes: {x: 1}}\n  - {name: b, group: g, context: fleet-nope}\n")
	write("m.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {x: '${x}'}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns, namespace: other, labels: {'bad key!': v}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n")
	out, _, code := run(t, "", "vet", "-F", filepath.Join(dir, "fleet.yaml"), "-f", filepath.Join(dir, "m.yaml"))
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		`fleet.yaml:7: cluster b: context: context "fleet-nope" not found in kubeconfig testdata/kubeconfig (it has contexts fleet-c1, fleet-c2, fleet-c3)`,
		"[a] Namespace other/ns: a Namespace has no namespace",
		"[a] Namespace other/ns: metadata.labels: Invalid value: \"bad key!\"",
		"[a] ConfigMap cm: rendered more than once",
		"[b] app m: ConfigMap cm: undefined variable ${x}",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("vet output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "do-not-print-this-token") {
		t.Error("vet printed a credential")
	}
}

func TestClusters(t *testing.T) {
	out, errOut, code := run(t, "", "clusters", "-F", example)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden.Assert(t, "testdata/golden/clusters.txt", []byte(out))

	out, _, _ = run(t, "", "ls", "-F", example, "-l", "region=eu", "-o", "json")
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var c roster.Row
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		if c.Type != "cluster" {
			t.Errorf("clusters -o json: type %q, want cluster: %s", c.Type, line)
		}
		names = append(names, c.Name+"@"+c.Server)
	}
	if got := strings.Join(names, " "); got != "staging-eu@https://127.0.0.1:16441 prod-eu@https://127.0.0.1:16442" {
		t.Errorf("clusters -o json: %s", got)
	}
	if strings.Contains(out, "do-not-print-this-token") {
		t.Error("clusters printed a credential")
	}
}

func TestClustersMissingContext(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"clusters", "-F", example, "--kubeconfig", filepath.Join("testdata", "kubeconfig"), "-c", "prod-us"})
	if code != 0 {
		t.Fatalf("--kubeconfig: exit %d: %s", code, errOut.String())
	}
	_, errText, code := run(t, "", "clusters", "-F", example, "--kubeconfig", filepath.Join(t.TempDir(), "empty"))
	if code != 1 || !strings.Contains(errText, `../../examples/fleet.yaml:32: cluster staging-eu: context:`) {
		t.Errorf("exit %d, stderr:\n%s", code, errText)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no source", []string{"render", "-F", "testdata/secret/fleet.yaml", "--app", "nope"}, "--app nope: no such app in testdata/secret/fleet.yaml; its apps: creds"},
		{"an app's name mistyped", []string{"render", "-F", "testdata/secret/fleet.yaml", "--app", "cred"}, "--app cred: no such app in testdata/secret/fleet.yaml (did you mean \"creds\"?); its apps: creds"},
		{"two sources", []string{"render", "-F", example, "-k", "a", "-f", "b"}, "mutually exclusive"},
		{"bad name", []string{"render", "-F", example, "-k", "x", "--name", "Web_1"}, `--name: "Web_1" is not a valid app name`},
		{"empty selection", []string{"render", "-F", example, "-g", "staging", "-l", "region=us"}, `no cluster in ../../examples/fleet.yaml matches --group staging --selector "region=us"`},
		{"missing fleet", []string{"render", "-F", "nope.yaml"}, "fleet file nope.yaml not found"},
		{"bad output", []string{"render", "-F", example, "-o", "table"}, `--output "table": want yaml or json`},
		{"render error", []string{"render", "-F", example, "-k", "testdata"}, "rendering failed, nothing was done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, "", tt.args...)
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q, want %q", code, errOut, tt.want)
			}
			if out != "" {
				t.Errorf("stdout should be empty on error, got:\n%s", out)
			}
		})
	}
}

func TestRenderStdin(t *testing.T) {
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {c: '${FLEET_CLUSTER_NAME}'}\n"
	out, errOut, code := run(t, in, "render", "-F", example, "-f", "-", "--name", "piped", "-g", "production")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Count(out, "kind: ConfigMap") != 2 || !strings.Contains(out, "c: prod-us") {
		t.Errorf("stdin not rendered per cluster:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	out, _, code := run(t, "", "version", "-o", "json")
	var v VersionInfo
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" {
		t.Errorf("exit %d: %s", code, out)
	}
	out, _, _ = run(t, "", "--help")
	if !strings.Contains(out, "kubectl fleet [command]") {
		t.Errorf("usage does not say kubectl fleet:\n%s", out)
	}
}

func TestAttributesFrom(t *testing.T) {
	dir := t.TempDir()
	fleetFile := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(fleetFile, []byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: f}
groups: [{name: g}]
defaults:
  attributesFrom:
    - {apiVersion: v1, kind: Namespace, name: kube-system, attributes: {clusterUID: '{.metadata.uid}'}}
clusters:
  - {name: a, group: g, context: fleet-c1}
  - {name: b, group: g, context: missing-context}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: id}\ndata: {uid: '${clusterUID}'}\n"
	out, errOut, code := run(t, in, "vet", "-F", fleetFile, "-f", "-", "--name", "id", "--no-kubeconfig")
	if code != 0 || !strings.Contains(out, "[a] ok: 1 object from") {
		t.Errorf("vet with placeholders: exit %d\n%s%s", code, out, errOut)
	}
	// render must read from the cluster, so a missing context stops it
	// before any request, naming the file and line.
	out, errOut, code = run(t, in, "render", "-F", fleetFile, "-f", "-", "--name", "id")
	if code != 1 || out != "" || !strings.Contains(errOut, fleetFile+`:10: cluster b: context: context "missing-context" not found`) {
		t.Errorf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
}

// vet renders and checks the apps' tests too, with their own errors.
func TestVetChecksTests(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"fleet.yaml":     "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: v}\ngroups: [{name: g}]\nclusters: [{name: c, group: g, context: x}]\napps:\n  - {name: web, manifests: app.yaml, tests: tests}\n",
		"app.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: d}\n",
		"tests/job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata: {name: smoke, namespace: d}\nspec:\n  template: {metadata: {labels: {run: \"${undefined}\"}}}\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _, code := run(t, "", "vet", "--no-kubeconfig", "-F", filepath.Join(dir, "fleet.yaml"))
	if code != 1 || !strings.Contains(out, "[c] tests of app web: Job d/smoke: undefined variable ${undefined}") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// vetChart is a fleet of two clusters and a Helm chart whose template
// does not parse, and a plain app that renders.
func vetChart(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, s := range map[string]string{
		"fleet.yaml":                   "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: v}\ngroups: [{name: g}]\nclusters:\n  - {name: stg, group: g, context: fleet-c1}\n  - {name: prod, group: g, context: fleet-c2}\napps:\n  - {name: hello, namespace: hello-ns, helm: {chart: chart}}\n  - {name: plain, manifests: cm.yaml}\n",
		"chart/Chart.yaml":             "apiVersion: v2\nname: hello\nversion: 0.1.0\n",
		"chart/templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name | quote }\n",
		"chart/templates/tests/t.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations: {helm.sh/hook: test}\n",
		"cm.yaml":                      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, namespace: default}\n",
	} {
		writeFile(t, filepath.Join(dir, name), s)
	}
	return filepath.Join(dir, "fleet.yaml")
}

// writeFile writes a test's file, and the folders it is in.
func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestVetSaysAProblemOnce: a chart that does not parse is one problem,
// said in full once, not once per cluster and again as its tests'.
func TestVetSaysAProblemOnce(t *testing.T) {
	file := vetChart(t)
	out, _, code := run(t, "", "vet", "-F", file)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	out = strings.ReplaceAll(out, filepath.Dir(file), "DIR")
	golden.Assert(t, "testdata/golden/vet-chart-error.txt", []byte(out))
}

// TestVetJSON: vet -o json is one event a line, each problem with its
// cluster and app, or its file, line and field.
func TestVetJSON(t *testing.T) {
	file := vetChart(t)
	out, _, code := run(t, "", "vet", "-F", file, "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	out = strings.ReplaceAll(out, filepath.Dir(file), "DIR")
	golden.Assert(t, "testdata/golden/vet-chart-error.json", []byte(out))

	bad := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: v}\ngroups: [{name: g}]\nclusters:\n  - {name: a, group: h, context: c1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = run(t, "", "vet", "-F", bad, "-o", "json")
	var p vet.Problem
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 1 || len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &p) != nil {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if want := (vet.Problem{Type: "problem", File: bad, Line: 6, Field: "clusters[0].group", Subject: "cluster a", Message: `unknown group "h" (groups: g)`}); p != want {
		t.Errorf("problem %+v, want %+v", p, want)
	}
	if lines[1] != `{"type":"summary","clusters":0,"problems":1}` {
		t.Errorf("summary %s", lines[1])
	}
}

// TestFleetFileErrorsGolden: what a newcomer's mistakes in a fleet file
// are told, as golden files: a typo under helm is the typo (not "one of
// kustomize, … is required"), an unknown field says what it may have
// meant, a field of a cluster or app is said under its name, a YAML
// indentation error at its own line, a context that is not there with
// those that are.
func TestFleetFileErrorsGolden(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string { return writeFile(t, filepath.Join(dir, name), s) }
	write("chart/Chart.yaml", "apiVersion: v2\nname: hello\nversion: 0.1.0\n")
	write("app.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n")
	head := "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: first-hour}\ngroups: [{name: staging}, {name: production}]\nclusters:\n"
	cases := []struct{ name, fleet string }{
		{"fields", head + "  - name: stg\n    group: staging\n    contxet: fleet-c1\n  - name: prod\n    group: prod\n    context: fleet-c2\napps:\n  - name: hello\n    namespace: hello-ns\n    helm:\n      chart: ../chart\n      valuesInLine: {greeting: hi}\n  - name: plain\n    manifests: ../app.yaml\n    namepsace: plain\n"},
		{"indentation", head + "  - name: stg\n    group: staging\n    context: fleet-c1\napps:\n  - name: hello\n    helm:\n      chart: ../chart\n      values:\n        - values.yaml\n     namespace: hello-ns\n"},
		{"contexts", head + "  - name: stg\n    group: staging\n    context: fleet-c1\n  - name: prod\n    group: production\n    context: fleet-c4\napps:\n  - name: plain\n    manifests: ../app.yaml\n"},
	}
	var all strings.Builder
	for _, c := range cases {
		file := write(c.name+"/fleet.yaml", c.fleet)
		out, errOut, code := run(t, "", "vet", "-F", file)
		fmt.Fprintf(&all, "$ kubectl fleet vet  # %s, exit %d\n%s%s", c.name, code, out, errOut)
	}
	golden.Assert(t, "testdata/golden/fleet-file-errors.txt", []byte(strings.ReplaceAll(all.String(), dir, "DIR")))
}

// bootstrap writes Flux's verify with the public key alone: from
// --public-key, or the delivery's signing.publicKey, no private key is
// read (the signing key's variable is not even set here).
func TestBootstrapPublicKeyOnly(t *testing.T) {
	dir := t.TempDir()
	key := registrytest.SigningKey(t)
	f := &fleet.Fleet{Dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "cosign.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := publish.SignerOf(f, &fleet.Signing{Key: "cosign.key"})
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := signer.PublicKey()
	for name, content := range map[string]string{
		"cosign.pub": string(pub),
		"web.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: default}\n",
		"fleet.yaml": "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: shop}\ngroups:\n- name: edge\n  delivery: {oci: oci://registry.example.com/shop, signing: {keyEnv: NO_SUCH_SIGNING_KEY}}\n- name: lab\n  delivery: {oci: oci://registry.example.com/lab, signing: {keyEnv: NO_SUCH_SIGNING_KEY, publicKey: cosign.pub}}\nclusters:\n- {name: e1, group: edge}\n- {name: l1, group: lab}\napps:\n- {name: web, manifests: web.yaml}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "cosign.key")); err != nil {
		t.Fatal(err)
	}
	fleetFile := filepath.Join(dir, "fleet.yaml")
	firstLine := strings.SplitN(string(pub), "\n", 3)[1]
	if out, errOut, code := run(t, "", "bootstrap", "-F", fleetFile, "-c", "e1"); code != 1 || !strings.Contains(errOut, "NO_SUCH_SIGNING_KEY is not set") {
		t.Errorf("bootstrap with neither key: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{{"-c", "e1", "--public-key", filepath.Join(dir, "cosign.pub")}, {"-c", "l1"}} {
		out, errOut, code := run(t, "", append([]string{"bootstrap", "-F", fleetFile}, args...)...)
		if code != 0 || !strings.Contains(out, "cosign.pub: |") || !strings.Contains(out, firstLine) || strings.Contains(out, "PRIVATE") {
			t.Errorf("bootstrap %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	if out, errOut, code := run(t, "", "bootstrap", "-F", fleetFile, "-c", "e1", "--public-key", fleetFile); code != 1 || !strings.Contains(errOut, "no PEM public key in it") {
		t.Errorf("bootstrap --public-key of a file that is no key: exit %d\n%s%s", code, out, errOut)
	}
}
