package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/google/go-cmp/cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// twoGroups is a fleet of the test bed: staging on the full cluster,
// production on the two others.
const twoGroups = `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - {name: staging, maxParallel: 1}
  - {name: production, protected: true}
clusters:
  - {name: stg, group: staging, context: fleet-c1}
  - {name: prod-a, group: production, context: fleet-c2}
  - {name: prod-b, group: production, context: fleet-c3}
`

// workdir writes a fleet file and manifests into a fresh folder.
func workdir(t *testing.T, fleetYAML string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["fleet.yaml"] = fleetYAML
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fleet runs kubectl fleet with the work folder's fleet file.
func fleet(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	return kubectl(t, "", append([]string{"fleet", "-F", filepath.Join(dir, "fleet.yaml")}, args...)...)
}

// fleetStreaming runs kubectl fleet with the work folder's fleet file and
// calls onLine with each line of its standard output as it comes, and the
// process (to signal it); it returns stdout, stderr and the exit code.
func fleetStreaming(t *testing.T, dir string, onLine func(line string, p *os.Process), args ...string) (string, string, int) {
	t.Helper()
	cmd := kubectlCmd(t, append([]string{"fleet", "-F", filepath.Join(dir, "fleet.yaml")}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	scanner := bufio.NewScanner(stdout)
	for scanner.Scan() {
		out.WriteString(scanner.Text() + "\n")
		onLine(scanner.Text(), cmd.Process)
	}
	_ = cmd.Wait()
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

func get(t *testing.T, context string, args ...string) (string, int) {
	t.Helper()
	out, _, code := kubectl(t, "", append([]string{"get", "--context", context}, args...)...)
	return strings.TrimSpace(out), code
}

// absent reports whether kubectl get finds no such object: kubectl exits
// 1 saying NotFound. Any other failure of kubectl (a context that does not
// exist, a server that does not answer) fails the test, so that a check
// that nothing was written cannot pass because the read never happened.
func absent(t *testing.T, context string, args ...string) bool {
	t.Helper()
	out, errOut, code := kubectl(t, "", append([]string{"get", "--context", context}, args...)...)
	switch {
	case code == 0:
		return false
	case code == 1 && strings.Contains(errOut, "(NotFound)"):
		return true
	}
	t.Fatalf("kubectl get --context %s %s: exit %d, neither found nor NotFound:\n%s%s", context, strings.Join(args, " "), code, out, errOut)
	return false
}

func namespaced(ns, body string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n%s", ns, body)
}

func TestDiffApplyReapply(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{"reapply/cm.yaml": namespaced("e2e-reapply", `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: e2e-reapply}
data: {cluster: '${FLEET_CLUSTER_NAME}'}
`)})
	app := filepath.Join(dir, "reapply")
	// Before: differences, exit 1.
	out, errOut, code := fleet(t, dir, "diff", "-f", app)
	if code != 1 || !strings.Contains(out, "[stg]    +  cluster: stg") || !strings.Contains(out, "2 to create, 0 to change, 0 to prune, 0 unchanged") {
		t.Fatalf("diff before apply: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "apply", "-f", app, "--yes")
	if code != 0 || strings.Count(out, "configmap/settings created") != 3 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if v, _ := get(t, "fleet-c3", "configmap", "settings", "-n", "e2e-reapply", "-o", "jsonpath={.data.cluster}"); v != "prod-b" {
		t.Errorf("prod-b got cluster=%q", v)
	}
	out, _, code = fleet(t, dir, "apply", "-f", app, "--yes")
	if code != 0 || strings.Count(out, "configmap/settings unchanged") != 3 || strings.Contains(out, "configured") {
		t.Errorf("re-apply: exit %d\n%s", code, out)
	}
	// After: nothing differs, exit 0.
	out, _, code = fleet(t, dir, "diff", "-f", app)
	if code != 0 || strings.Count(out, "0 to create, 0 to change, 0 to prune, 2 unchanged") != 3 {
		t.Errorf("diff after apply: exit %d\n%s", code, out)
	}
	// An error (a context missing from the kubeconfig): exit 2.
	bad := workdir(t, strings.Replace(twoGroups, "context: fleet-c3", "context: nowhere", 1), map[string]string{})
	if _, errOut, code := fleet(t, bad, "diff", "-f", app); code != 2 || !strings.Contains(errOut, `context "nowhere" not found`) {
		t.Errorf("diff with an error: exit %d: %s", code, errOut)
	}
}

func TestSecretNeverPrinted(t *testing.T) {
	const marker = "zq-secret-marker-4711"
	dir := workdir(t, twoGroups, map[string]string{"secret/s.yaml": namespaced("e2e-secret", `apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: e2e-secret}
stringData: {password: `+marker+`}
`)})
	app := filepath.Join(dir, "secret")
	var all strings.Builder
	// Each command must have done its work: an absence proves nothing
	// about a command that failed early.
	for _, step := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"render", "-f", app}, 0, "kind: Secret"},
		{[]string{"render", "-f", app, "-o", "json"}, 0, `"kind":"Secret"`},
		{[]string{"diff", "-f", app}, 1, "+  password: '***'"},
		{[]string{"diff", "-f", app, "-o", "json"}, 1, `"action":"create"`},
		{[]string{"apply", "-f", app, "--yes", "--diff"}, 0, "secret/creds created"},
		{[]string{"apply", "-f", app, "--yes", "-o", "json", "--diff"}, 0, `"action":"unchanged"`},
		{[]string{"diff", "-f", app}, 0, "0 to create, 0 to change"},
		{[]string{"vet", "-f", app}, 0, "vet: 3 clusters ok"},
	} {
		out, errOut, code := fleet(t, dir, step.args...)
		all.WriteString(out + errOut)
		if code != step.code || !strings.Contains(out+errOut, step.want) {
			t.Errorf("%s: exit %d (want %d), want %q in\n%s%s", strings.Join(step.args, " "), code, step.code, step.want, out, errOut)
		}
	}
	// The value changes: the diff shows only that it changed.
	changed := workdir(t, twoGroups, map[string]string{"secret/s.yaml": namespaced("e2e-secret", `apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: e2e-secret}
stringData: {password: other-`+marker+`}
`)})
	out, errOut, code := fleet(t, changed, "diff", "-f", filepath.Join(changed, "secret"), "-c", "stg")
	all.WriteString(out + errOut)
	if code != 1 || !strings.Contains(out, "-  password: '*** (before)'") || !strings.Contains(out, "+  password: '*** (after)'") {
		t.Errorf("changed secret diff: exit %d\n%s", code, out)
	}
	if v, _ := get(t, "fleet-c1", "secret", "creds", "-n", "e2e-secret", "-o", "jsonpath={.data.password}"); v == "" {
		t.Fatal("the secret was not applied")
	}
	if strings.Contains(all.String(), marker) {
		t.Errorf("a Secret value was printed:\n%s", all.String())
	}
}

func TestCRDAndCustomResource(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{"crd/crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.e2e.example.com}
spec:
  group: e2e.example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {size: {type: integer}}}
---
apiVersion: e2e.example.com/v1
kind: Widget
metadata: {name: w1, namespace: e2e-crd}
spec: {size: 3}
---
apiVersion: v1
kind: Namespace
metadata: {name: e2e-crd}
`})
	app := filepath.Join(dir, "crd")
	out, _, code := fleet(t, dir, "diff", "-f", app, "-c", "stg")
	if code != 1 || !strings.Contains(out, "widget.e2e.example.com/w1 would be created after its CRD") {
		t.Errorf("diff: exit %d\n%s", code, out)
	}
	out, errOut, code := fleet(t, dir, "apply", "-f", app, "-c", "stg")
	if code != 0 || !strings.Contains(out, "customresourcedefinition.apiextensions.k8s.io/widgets.e2e.example.com created") || !strings.Contains(out, "widget.e2e.example.com/w1 created") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if v, _ := get(t, "fleet-c1", "widgets", "w1", "-n", "e2e-crd", "-o", "jsonpath={.spec.size}"); v != "3" {
		t.Errorf("widget size %q", v)
	}
}

func TestPrune(t *testing.T) {
	cm := func(ns, name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\n---\n", name, ns)
	}
	dir := workdir(t, twoGroups, map[string]string{
		"v1/all.yaml":    namespaced("e2e-prune", cm("e2e-prune", "keep")+cm("e2e-prune", "drop")),
		"v2/all.yaml":    namespaced("e2e-prune", cm("e2e-prune", "keep")),
		"other/all.yaml": cm("e2e-prune", "other-app"),
		"empty/x.yaml":   "",
	})
	if out, errOut, code := fleet(t, dir, "apply", "-c", "stg", "-f", filepath.Join(dir, "v1"), "--name", "web"); code != 0 {
		t.Fatalf("apply v1: %s%s", out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "apply", "-c", "stg", "-f", filepath.Join(dir, "other"), "--name", "other"); code != 0 {
		t.Fatalf("apply other: %s%s", out, errOut)
	}
	// A ConfigMap made by hand, outside any set.
	if _, errOut, code := kubectl(t, cm("e2e-prune", "by-hand"), "apply", "--context", "fleet-c1", "-f", "-"); code != 0 {
		t.Fatal(errOut)
	}
	out, _, code := fleet(t, dir, "diff", "-c", "stg", "-f", filepath.Join(dir, "v2"), "--name", "web")
	if code != 1 || !strings.Contains(out, "--- live/stg/web/ConfigMap/e2e-prune/drop") || !strings.Contains(out, "1 to prune") {
		t.Errorf("diff shows no prune: exit %d\n%s", code, out)
	}
	out, errOut, code := fleet(t, dir, "apply", "-c", "stg", "-f", filepath.Join(dir, "v2"), "--name", "web", "--prune")
	if code != 0 || !strings.Contains(out, "configmap/drop pruned\n") || strings.Count(out, "/") != 3 {
		t.Fatalf("apply --prune: exit %d\n%s%s", code, out, errOut)
	}
	names, _ := get(t, "fleet-c1", "configmaps", "-n", "e2e-prune", "-o", "jsonpath={.items[*].metadata.name}")
	if names != "by-hand keep kube-root-ca.crt other-app" {
		t.Errorf("left in the namespace: %q", names)
	}
	// An empty render never prunes everything without --allow-empty.
	out, errOut, code = fleet(t, dir, "apply", "-c", "stg", "-f", filepath.Join(dir, "empty"), "--name", "web", "--prune")
	if code == 0 || !strings.Contains(out+errOut, "refusing without --allow-empty") {
		t.Errorf("empty render: exit %d\n%s%s", code, out, errOut)
	}
	if _, code := get(t, "fleet-c1", "configmap", "keep", "-n", "e2e-prune"); code != 0 {
		t.Error("an empty render pruned the app")
	}
}

func TestConflictAndForce(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{"conflict/cm.yaml": namespaced("e2e-conflict", `apiVersion: v1
kind: ConfigMap
metadata: {name: owned, namespace: e2e-conflict}
data: {level: fleet}
`)})
	other := namespaced("e2e-conflict", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owned, namespace: e2e-conflict}\ndata: {level: other}\n")
	if _, errOut, code := kubectl(t, other, "apply", "--context", "fleet-c1", "--server-side", "--field-manager", "someone-else", "-f", "-"); code != 0 {
		t.Fatal(errOut)
	}
	app := filepath.Join(dir, "conflict")
	out, _, code := fleet(t, dir, "apply", "-c", "stg", "-f", app)
	if code == 0 || !strings.Contains(out, "configmap/owned failed") || !strings.Contains(out, `conflict with "someone-else"`) || !strings.Contains(out, ".data.level") {
		t.Fatalf("conflict not reported: exit %d\n%s", code, out)
	}
	out, errOut, code := fleet(t, dir, "apply", "-c", "stg", "-f", app, "--force-conflicts")
	if code != 0 || !strings.Contains(out, "configmap/owned adopted") {
		t.Fatalf("--force-conflicts: exit %d\n%s%s", code, out, errOut)
	}
	if v, _ := get(t, "fleet-c1", "configmap", "owned", "-n", "e2e-conflict", "-o", "jsonpath={.data.level}"); v != "fleet" {
		t.Errorf("level %q", v)
	}
}

func TestStagingFailureStopsProduction(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{"stop/bad.yaml": namespaced("e2e-stop", `apiVersion: v1
kind: Service
metadata: {name: broken, namespace: e2e-stop}
spec:
  ports: [{port: 0}]
`)})
	out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "stop"), "--yes")
	if code != 1 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"[stg]    service/broken failed", "[stg]    failed:", "[prod-a] not started", "[prod-b] not started"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, ctx := range []string{"fleet-c2", "fleet-c3"} {
		if !absent(t, ctx, "namespace", "e2e-stop") {
			t.Errorf("%s: production was written to after staging failed", ctx)
		}
	}
}

func TestWait(t *testing.T) {
	deploy := func(name, extra string) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: e2e-wait}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers: [{name: c, image: registry.example/x:1}]
%s`, name, name, name, extra)
	}
	dir := workdir(t, twoGroups, map[string]string{
		"good/d.yaml": namespaced("e2e-wait", deploy("good", "")),
		// No node has this label: the pod never runs.
		"never/d.yaml": namespaced("e2e-wait", deploy("never", "      nodeSelector: {no-such-node: \"true\"}\n")),
	})
	out, errOut, code := fleet(t, dir, "apply", "-c", "stg", "-f", filepath.Join(dir, "good"), "--wait", "--timeout", "90s")
	if code != 0 || !strings.Contains(out, "deployment.apps/good healthy") {
		t.Fatalf("--wait: exit %d\n%s%s", code, out, errOut)
	}
	// The wait says how long and why when it starts, and again when it
	// times out.
	out, errOut, code = fleet(t, dir, "apply", "-c", "stg", "-f", filepath.Join(dir, "never"), "--wait", "--timeout", "5s")
	if code == 0 || !strings.Contains(out, "deployment.apps/never unhealthy") || !strings.Contains(out, "1 object not healthy after 5s (waited for: --wait)") || !strings.Contains(errOut, "never: waiting until healthy, up to 5s (--wait)") {
		t.Errorf("unavailable deployment: exit %d\n%s%s", code, out, errOut)
	}
}

// A pinned cluster whose context now reaches another server: every command
// that reads or writes it refuses, since reading the wrong cluster's state
// misleads as much as writing to it.
func TestIdentityPinRefusesWrites(t *testing.T) {
	uid2, code := get(t, "fleet-c2", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}")
	if code != 0 || uid2 == "" {
		t.Fatalf("fleet-c2's kube-system uid: exit %d, %q", code, uid2)
	}
	f := strings.Replace(twoGroups, "{name: stg, group: staging, context: fleet-c1}", "{name: stg, group: staging, context: fleet-c1, uid: "+uid2+"}", 1)
	dir := workdir(t, f, map[string]string{"pin/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: e2e-pin}\n"})
	want := "identity check failed, nothing read or written: identity mismatch: the fleet file pins uid " + uid2
	for _, args := range [][]string{{"apply"}, {"diff"}, {"status"}, {"vet", "--server"}, {"delete", "--yes"}} {
		out, errOut, code := fleet(t, dir, append(args, "-c", "stg", "-f", filepath.Join(dir, "pin"))...)
		if code == 0 || !strings.Contains(out+errOut, want) {
			t.Errorf("%s: exit %d\n%s%s", args[0], code, out, errOut)
		}
	}
	if !absent(t, "fleet-c1", "namespace", "e2e-pin") {
		t.Error("written despite the identity mismatch")
	}
}

func TestJSONLines(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{"json/cm.yaml": namespaced("e2e-json", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: j, namespace: e2e-json}\n")})
	app := filepath.Join(dir, "json")
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "-f", app, "--yes") })
	for _, tc := range []struct {
		args []string
		code int
		// objects are the outcome of each object on every cluster, and
		// types how many events of each type.
		objects map[string]string
		types   map[string]int
	}{
		{[]string{"diff", "-f", app, "-o", "json"}, 1, nil, map[string]int{"diff": 6, "summary": 3}},
		// A dry run cannot validate in a namespace it only pretends to
		// create: created, as diff says, with the reason (change.NotValidated).
		// Each of the two groups' waves says its start and its end.
		{[]string{"apply", "-f", app, "--yes", "-o", "json", "--dry-run=server"}, 0, map[string]string{"namespace/e2e-json": "created", "configmap/j": "created"}, map[string]int{"object": 6, "cluster": 3, "wave": 4}},
		{[]string{"apply", "-f", app, "--yes", "-o", "json"}, 0, map[string]string{"namespace/e2e-json": "created", "configmap/j": "created"}, map[string]int{"object": 6, "revision": 3, "verification": 3, "cluster": 3, "wave": 4}},
		{[]string{"apply", "-f", app, "--yes", "-o", "json"}, 0, map[string]string{"namespace/e2e-json": "unchanged", "configmap/j": "unchanged"}, map[string]int{"object": 6, "revision": 3, "verification": 3, "cluster": 3, "wave": 4}},
		{[]string{"diff", "-f", app, "-o", "json"}, 0, nil, map[string]int{"diff": 6, "summary": 3}},
	} {
		out, errOut, code := fleet(t, dir, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, code, tc.code, errOut)
		}
		types := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev struct {
				Type, Cluster, Object, Action, State string
				DryRun                               bool
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%v: not JSON: %q (stderr %s)", tc.args, line, errOut)
			}
			types[ev.Type]++
			switch ev.Type {
			case "object":
				if want := tc.objects[ev.Object]; ev.Action != want || ev.DryRun != slices.Contains(tc.args, "--dry-run=server") {
					t.Errorf("%v: %s on %s: %s (dry run %v), want %s", tc.args, ev.Object, ev.Cluster, ev.Action, ev.DryRun, want)
				}
			case "cluster":
				if ev.State != "succeeded" {
					t.Errorf("%v: cluster %s %s", tc.args, ev.Cluster, ev.State)
				}
			case "verification":
				if ev.State != "verified" {
					t.Errorf("%v: %s's release is %s", tc.args, ev.Cluster, ev.State)
				}
			}
		}
		if diff := cmp.Diff(tc.types, types); diff != "" {
			t.Errorf("%v: events (-want +got):\n%s", tc.args, diff)
		}
	}
}

// TestInterrupt sends Ctrl-C (SIGINT) while staging waits for a Deployment
// that never becomes available: nothing new starts, the summary says what
// happened where, and the exit code is 130.
func TestInterrupt(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{"interrupt/d.yaml": namespaced("e2e-interrupt", `apiVersion: apps/v1
kind: Deployment
metadata: {name: never, namespace: e2e-interrupt}
spec:
  replicas: 1
  selector: {matchLabels: {app: never}}
  template:
    metadata: {labels: {app: never}}
    spec:
      nodeSelector: {no-such-node: "true"}
      containers: [{name: c, image: registry.example/x:1}]
`)})
	signalled := false
	out, errOut, code := fleetStreaming(t, dir, func(line string, p *os.Process) {
		if !signalled && strings.Contains(line, "deployment.apps/never created") {
			_ = p.Signal(os.Interrupt)
			signalled = true
		}
	}, "apply", "-f", filepath.Join(dir, "interrupt"), "--yes", "--wait", "--timeout", "2m")
	if !signalled || code != 130 {
		t.Fatalf("exit %d, signalled %v\n%s%s", code, signalled, out, errOut)
	}
	for _, want := range []string{"Summary:", "[stg]    failed:", "[prod-a] not started", "[prod-b] not started"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !absent(t, "fleet-c2", "namespace", "e2e-interrupt") {
		t.Error("production was written to after Ctrl-C")
	}
}

func TestExternalDiff(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{"ext/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ext, namespace: default}\ndata: {k: v}\n"})
	cmd := kubectlCmd(t, "fleet", "-F", filepath.Join(dir, "fleet.yaml"), "diff", "-f", filepath.Join(dir, "ext"), "-c", "stg")
	cmd.Env = append(cmd.Env, "KUBECTL_EXTERNAL_DIFF=diff -r")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "/stg/ConfigMap_default_ext.yaml") || !strings.Contains(string(out), "> kind: ConfigMap") {
		t.Errorf("exit %d:\n%s", cmd.ProcessState.ExitCode(), out)
	}
}

func TestProtectedGroupNeedsYes(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{"protected/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: e2e-protected}\n"})
	out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "protected"))
	if code != 1 || !strings.Contains(errOut, "group production is protected (prod-a, prod-b): pass --yes") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, ctx := range []string{"fleet-c1", "fleet-c2"} {
		if !absent(t, ctx, "namespace", "e2e-protected") {
			t.Errorf("%s written to without confirmation", ctx)
		}
	}
	// Staging alone is not protected.
	if _, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "protected"), "-g", "staging"); code != 0 {
		t.Errorf("staging: %s", errOut)
	}
}

func TestForeignApplySetRefused(t *testing.T) {
	parent := `apiVersion: v1
kind: Namespace
metadata: {name: kubectl-fleet}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: fleet-foreign
  namespace: kubectl-fleet
  annotations: {applyset.kubernetes.io/tooling: kubectl/v1.37}
`
	if _, errOut, code := kubectl(t, parent, "apply", "--context", "fleet-c1", "-f", "-"); code != 0 {
		t.Fatal(errOut)
	}
	dir := workdir(t, twoGroups, map[string]string{"foreign/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foreign-cm, namespace: default}\n"})
	out, _, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "foreign"), "-c", "stg")
	if code == 0 || !strings.Contains(out, `is the ApplySet parent of another tool (applyset.kubernetes.io/tooling="kubectl/v1.37"); refusing to adopt it`) {
		t.Errorf("exit %d\n%s", code, out)
	}
	if !absent(t, "fleet-c1", "configmap", "foreign-cm", "-n", "default") {
		t.Error("applied into a foreign ApplySet")
	}
}

// TestPruneInContextNamespace: objects without a namespace go to the
// context's namespace, and prune still finds them there.
func TestPruneInContextNamespace(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{
		"v1/all.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ctxns-a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ctxns-b}\n",
		"v2/all.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ctxns-a}\n",
	})
	if out, errOut, code := fleet(t, dir, "apply", "-c", "stg", "-f", filepath.Join(dir, "v1"), "--name", "ctxns"); code != 0 {
		t.Fatalf("%s%s", out, errOut)
	}
	out, errOut, code := fleet(t, dir, "apply", "-c", "stg", "-f", filepath.Join(dir, "v2"), "--name", "ctxns", "--prune")
	if code != 0 || !strings.Contains(out, "configmap/ctxns-b pruned") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c1", "configmap", "ctxns-b", "-n", "default") {
		t.Error("ctxns-b was not pruned from the default namespace")
	}
}

// TestRenderFailureWritesNothing: one production cluster lacks an attribute
// the manifests need; apply must stop before writing anywhere, staging
// included.
func TestRenderFailureWritesNothing(t *testing.T) {
	f := strings.Replace(twoGroups, "{name: stg, group: staging, context: fleet-c1}", "{name: stg, group: staging, context: fleet-c1, attributes: {tier: gold}}", 1)
	f = strings.Replace(f, "{name: prod-a, group: production, context: fleet-c2}", "{name: prod-a, group: production, context: fleet-c2, attributes: {tier: gold}}", 1)
	dir := workdir(t, f, map[string]string{"renderfail/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: e2e-renderfail, labels: {tier: '${tier}'}}\n"})
	// With its namespace there, stg's lock is taken while the sources
	// render.
	kubectl(t, "", "--context", "fleet-c1", "create", "namespace", "kubectl-fleet")
	out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "renderfail"), "--yes")
	if code != 1 || !strings.Contains(errOut, "rendering failed, nothing was done") || !strings.Contains(errOut, "cluster prod-b: app renderfail: Namespace e2e-renderfail: undefined variable ${tier}") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, ctx := range []string{"fleet-c1", "fleet-c2", "fleet-c3"} {
		if !absent(t, ctx, "namespace", "e2e-renderfail") {
			t.Errorf("%s was written to although a render failed", ctx)
		}
		// A lock taken while the sources rendered goes with the run.
		if !absent(t, ctx, "lease", "fleet-renderfail", "-n", "kubectl-fleet") {
			t.Errorf("%s: the lock of app renderfail is still held after its render failed", ctx)
		}
	}
}
