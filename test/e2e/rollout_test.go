package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

// Phases inside an app: a migration Job (phase -1) is applied and complete
// before the ConfigMap of phase 0 is created; where the Job cannot
// complete (an API server without controllers) the next phase never
// starts.
func TestPhases(t *testing.T) {
	app := namespaced("e2e-phases", `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: e2e-phases
  annotations: {fleet.kubectl.io/phase: "-1"}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: registry.example/migrate:1}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: after, namespace: e2e-phases}
`)
	dir := workdir(t, twoGroups+"apps:\n  - {name: phases, manifests: app}\n", map[string]string{"app/all.yaml": app})
	out, _, code := fleet(t, dir, "diff", "-c", "stg")
	if code != 1 || !strings.Contains(out, "job.batch/migrate: phase -1") {
		t.Errorf("diff does not show the phase: exit %d\n%s", code, out)
	}
	out, errOut, code := fleet(t, dir, "apply", "-c", "stg", "--timeout", "2m")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	order := []string{"phase -1: 1 objects", "job.batch/migrate created", "job.batch/migrate healthy", "phase 0: 1 objects", "configmap/after created"}
	last := -1
	for _, line := range order {
		i := strings.Index(out, line)
		if i <= last {
			t.Fatalf("%q missing or out of order in\n%s", line, out)
		}
		last = i
	}
	// The server saw the same order.
	got, _ := get(t, "fleet-c1", "job", "migrate", "-n", "e2e-phases", "-o", "jsonpath={.status.completionTime}")
	done, err := time.Parse(time.RFC3339, got)
	if err != nil {
		t.Fatalf("job completion time %q: %v", got, err)
	}
	got, _ = get(t, "fleet-c1", "configmap", "after", "-n", "e2e-phases", "-o", "jsonpath={.metadata.creationTimestamp}")
	created, err := time.Parse(time.RFC3339, got)
	if err != nil || created.Before(done) {
		t.Errorf("the ConfigMap was created at %s, before the Job completed at %s", got, done)
	}
	// No controllers: the Job never completes, phase 0 never starts.
	out, errOut, code = fleet(t, dir, "apply", "-c", "prod-a", "--yes", "--timeout", "3s")
	if code == 0 || !strings.Contains(out, "phase -1: 1 object not healthy after 3s") || strings.Contains(out, "phase 0") {
		t.Errorf("apply where the Job cannot complete: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c2", "configmap", "after", "-n", "e2e-phases") {
		t.Error("phase 0 was applied although phase -1 never became healthy")
	}
}

// dependsOn: on each cluster the dependent app is applied only once its
// dependency is applied and healthy, --wait or not; a failed dependency
// fails its dependents; delete goes in reverse; a cycle is refused.
func TestDependsOn(t *testing.T) {
	db := namespaced("e2e-deps", `apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: e2e-deps}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: registry.example/db:1}]}
`)
	web := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: e2e-deps}\n"
	apps := "apps:\n  - {name: deps-web, manifests: web.yaml, dependsOn: [deps-db]}\n  - {name: deps-db, manifests: db.yaml}\n"
	dir := workdir(t, twoGroups+apps, map[string]string{"db.yaml": db, "web.yaml": web})
	out, errOut, code := fleet(t, dir, "apply", "-c", "stg", "--timeout", "2m")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	order := []string{"deps-db: deployment.apps/db created", "deps-db: deployment.apps/db healthy", "deps-web: configmap/web created"}
	last := -1
	for _, line := range order {
		i := strings.Index(out, line)
		if i <= last {
			t.Fatalf("%q missing or out of order in\n%s", line, out)
		}
		last = i
	}
	ready, _ := get(t, "fleet-c1", "deployment", "db", "-n", "e2e-deps", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].lastTransitionTime}`)
	created, _ := get(t, "fleet-c1", "configmap", "web", "-n", "e2e-deps", "-o", "jsonpath={.metadata.creationTimestamp}")
	if ready == "" || created < ready {
		t.Errorf("the dependent ConfigMap was created at %s, the dependency available at %s", created, ready)
	}
	// Without controllers the dependency never becomes healthy.
	out, errOut, code = fleet(t, dir, "apply", "-c", "prod-a", "--yes", "--timeout", "3s")
	if code == 0 || !strings.Contains(out, "app deps-web: not started: dependency deps-db failed") {
		t.Errorf("apply where the dependency fails: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c2", "configmap", "web", "-n", "e2e-deps") {
		t.Error("the dependent app was applied although its dependency failed")
	}
	// The dependent alone needs its dependency applied there before.
	out, _, code = fleet(t, dir, "apply", "-c", "prod-b", "--yes", "--app", "deps-web")
	if code == 0 || !strings.Contains(out, "dependency deps-db was never applied to this cluster") {
		t.Errorf("apply of the dependent alone: exit %d\n%s", code, out)
	}
	out, errOut, code = fleet(t, dir, "delete", "-c", "stg", "--yes")
	if i, j := strings.Index(out, "deps-web: configmap/web deleted"), strings.Index(out, "deps-db: deployment.apps/db deleted"); code != 0 || i < 0 || j < i {
		t.Errorf("delete is not in reverse dependency order: exit %d\n%s%s", code, out, errOut)
	}
	// A cycle is a fleet-file error.
	cyclic := workdir(t, twoGroups+"apps:\n  - {name: a, manifests: web.yaml, dependsOn: [b]}\n  - {name: b, manifests: web.yaml, dependsOn: [a]}\n", map[string]string{"web.yaml": web})
	if out, errOut, code := fleet(t, cyclic, "apply", "-c", "stg"); code == 0 || !strings.Contains(errOut, "app a: dependsOn: dependency cycle: a → b → a") {
		t.Errorf("a cycle: exit %d\n%s%s", code, out, errOut)
	}
}

// A group's checks run for each of its clusters after its apps: with a
// kubeconfig that reaches that cluster only, and the cluster described in
// the environment. A failing check on staging leaves production untouched.
func TestGroupChecks(t *testing.T) {
	check := `#!/bin/sh
# Records what it sees, and fails where the fleet file says so.
{
  echo "contexts=$(kubectl config get-contexts -o name | tr '\n' ' ')"
  echo "current=$(kubectl config current-context)"
  echo "cluster=$FLEET_CLUSTER_NAME group=$FLEET_CLUSTER_GROUP context=$FLEET_CLUSTER_CONTEXT fleet=$FLEET_NAME tier=$FLEET_ATTR_TIER"
  echo "configmap=$(kubectl get configmap checked -n e2e-checks -o jsonpath='{.data.a}')"
  echo "mode=$(stat -c %a "$KUBECONFIG")"
} > "$1/$FLEET_CLUSTER_NAME.seen"
env > "$1/$FLEET_CLUSTER_NAME.env"
echo "checked $FLEET_CLUSTER_NAME"
[ "$FLEET_ATTR_FAIL" != "yes" ]
`
	seenDir := t.TempDir()
	fleetYAML := func(fail string) string {
		return strings.Replace(twoGroups, "  - {name: staging, maxParallel: 1}\n", "  - name: staging\n    attributes: {tier: gold, fail: \""+fail+"\"}\n    verify:\n      - {name: smoke, command: [./smoke.sh, "+seenDir+"], timeout: 30s}\n", 1) +
			"apps:\n  - {name: checks, manifests: app.yaml}\n"
	}
	app := namespaced("e2e-checks", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: checked, namespace: e2e-checks}\ndata: {a: \"1\"}\n")
	// Keys the plugin's environment holds, which no check may see.
	canaries := map[string]string{"COSIGN_PASSWORD": "canary-cosign-password", "SOPS_AGE_KEY": "AGE-SECRET-KEY-CANARY", "VAULT_TOKEN": "canary-vault-token", "KUBECTL_FLEET_APPROVER_KEY": "/canary/approver.pem"}
	for k, v := range canaries {
		t.Setenv(k, v)
	}
	dir := workdir(t, fleetYAML("yes"), map[string]string{"app.yaml": app, "smoke.sh": check})
	if err := os.Chmod(filepath.Join(dir, "smoke.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := fleet(t, dir, "apply", "--yes")
	if code != 1 || !strings.Contains(out, "[stg") || !strings.Contains(out, "checked stg") || !strings.Contains(out, "check smoke failed") || !strings.Contains(out, "not started") {
		t.Fatalf("apply with a failing check: exit %d\n%s%s", code, out, errOut)
	}
	for _, ctx := range []string{"fleet-c2", "fleet-c3"} {
		if !absent(t, ctx, "namespace", "e2e-checks") {
			t.Errorf("production cluster %s was written although the staging check failed", ctx)
		}
	}
	seen, err := os.ReadFile(filepath.Join(seenDir, "stg.seen"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(filepath.Join(seenDir, "stg.env"))
	if err != nil || !strings.Contains(string(env), "FLEET_CLUSTER_NAME=stg\n") {
		t.Fatalf("the check's environment: %v\n%s", err, env)
	}
	for k, v := range canaries {
		if strings.Contains(string(env), v) {
			t.Errorf("the check inherited %s", k)
		}
	}
	for _, want := range []string{"contexts=fleet-c1 \n", "current=fleet-c1\n", "cluster=stg group=staging context=fleet-c1 fleet=e2e tier=gold\n", "configmap=1\n", "mode=600\n"} {
		if !strings.Contains(string(seen), want) {
			t.Errorf("the check saw\n%s\nwant %q", seen, want)
		}
	}
	// Passing, the rollout goes on to production.
	if err := writeFile(dir, "fleet.yaml", fleetYAML("no")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	if code != 0 || !strings.Contains(out, "check smoke passed") || !strings.Contains(out, "[stg]    applied: 2 unchanged; check smoke passed\n") {
		t.Fatalf("apply with a passing check (the summary names the gate): exit %d\n%s%s", code, out, errOut)
	}
	if _, code := get(t, "fleet-c3", "configmap", "checked", "-n", "e2e-checks"); code != 0 {
		t.Error("production was not applied after the check passed")
	}
	if left, _ := filepath.Glob(filepath.Join(ownTemp(t), "kubectl-fleet-kubeconfigs-*")); len(left) > 0 {
		t.Errorf("temporary kubeconfigs left behind: %v", left)
	}
}

// A run killed with SIGKILL while a check runs (a CI job's timeout, the
// OOM killer) cannot remove the kubeconfig it wrote for the check: the
// next run does, as it removes every folder whose owner is gone, and
// leaves none of its own.
func TestKilledRunKubeconfigs(t *testing.T) {
	const check = `#!/bin/sh
echo "$KUBECONFIG" > "$1/kubeconfig"
[ "$FLEET_ATTR_HANG" = yes ] || exit 0
echo $$ > "$1/pid"
exec sleep 300
`
	files := t.TempDir()
	fleetYAML := func(hang string) string {
		return strings.Replace(stgOnly, "  - {name: staging}\n", "  - name: staging\n    attributes: {hang: \""+hang+"\"}\n    verify:\n      - {name: smoke, command: [./smoke.sh, "+files+"], timeout: 5m}\n", 1) +
			"apps:\n  - {name: killed, manifests: app.yaml}\n"
	}
	dir := workdir(t, fleetYAML("yes"), map[string]string{"app.yaml": namespaced("e2e-killed", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: e2e-killed}\n"), "smoke.sh": check})
	if err := os.Chmod(filepath.Join(dir, "smoke.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A folder an earlier killed run left, with a credential in it.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(ownTemp(t), fmt.Sprintf("kubectl-fleet-kubeconfigs-%d-1", gone.Process.Pid))
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(stale, "kubeconfig-1", "a credential"); err != nil {
		t.Fatal(err)
	}

	cmd := kubectlCmd(t, "fleet", "-F", filepath.Join(dir, "fleet.yaml"), "apply", "--yes")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var sleeper []byte
	for deadline := time.Now().Add(2 * time.Minute); len(sleeper) == 0 || sleeper[len(sleeper)-1] != '\n'; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the check never ran:\n%s", out.String())
		}
		sleeper, _ = os.ReadFile(filepath.Join(files, "pid"))
	}
	t.Cleanup(func() {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(sleeper))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	seen, err := os.ReadFile(filepath.Join(files, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	written := filepath.Dir(strings.TrimSpace(string(seen)))
	if want := fmt.Sprintf("kubectl-fleet-kubeconfigs-%d-", cmd.Process.Pid); filepath.Dir(written) != ownTemp(t) || !strings.HasPrefix(filepath.Base(written), want) {
		t.Errorf("the check's kubeconfig is %s, want it in %s, in a folder named %s…", seen, ownTemp(t), want)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the earlier killed run's folder is still there: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(written); err != nil {
		t.Fatalf("the killed run's folder is not there, so this test shows nothing: %v", err)
	}

	if err := writeFile(dir, "fleet.yaml", fleetYAML("no")); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := fleet(t, dir, "apply", "--yes"); code != 0 || !strings.Contains(out, "check smoke passed") {
		t.Fatalf("the next run: exit %d\n%s%s", code, out, errOut)
	}
	if left, _ := os.ReadDir(ownTemp(t)); len(left) > 0 {
		t.Errorf("left in the temporary folder after the next run: %v", left)
	}
}

// A soak watches staging after it succeeded: an object that goes away
// during it stops the rollout before production; a quiet soak lets it go on.
func TestSoak(t *testing.T) {
	fleetYAML := func(soak string) string {
		return strings.Replace(twoGroups, "  - {name: staging, maxParallel: 1}\n", "  - {name: staging, soak: "+soak+"}\n", 1) +
			"apps:\n  - {name: soak, manifests: app.yaml}\n"
	}
	app := namespaced("e2e-soak", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: soaked, namespace: e2e-soak}\n")
	dir := workdir(t, fleetYAML("20s"), map[string]string{"app.yaml": app})
	deleted := false
	out, errOut, code := fleetStreaming(t, dir, func(line string, _ *os.Process) {
		if !deleted && strings.Contains(line, "soak started") {
			if _, errOut, code := kubectl(t, "", "delete", "--context", "fleet-c1", "-n", "e2e-soak", "configmap", "soaked"); code != 0 {
				t.Error(errOut)
			}
			deleted = true
		}
	}, "apply", "--yes")
	if !deleted || code != 1 || !strings.Contains(out, "soak failed with") || !strings.Contains(out, "configmap/soaked is gone") || !strings.Contains(out, "[prod-a] not started") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c2", "namespace", "e2e-soak") {
		t.Error("production was written although staging failed its soak")
	}
	// Nothing goes wrong: after the soak, production.
	if err := writeFile(dir, "fleet.yaml", fleetYAML("2s")); err != nil {
		t.Fatal(err)
	}
	outStr, errStr, code := fleet(t, dir, "apply", "--yes")
	if code != 0 || !strings.Contains(outStr, "[stg]    soak passed") || strings.Index(outStr, "soak passed") > strings.Index(outStr, "[prod-a] namespace/e2e-soak created") {
		t.Errorf("apply with a quiet soak: exit %d\n%s%s", code, outStr, errStr)
	}
}

// An app's tests run on each cluster after it is applied and healthy: a
// test Job that completes lets the rollout go on to production; one that
// fails stops it there, named in the output.
func TestAppTests(t *testing.T) {
	job := func(extra string) string {
		return `apiVersion: batch/v1
kind: Job
metadata: {name: smoke, namespace: e2e-tests}
spec:
  backoffLimit: 0
` + extra + `  template:
    spec:
      restartPolicy: Never
      containers: [{name: smoke, image: registry.example/smoke:1}]
`
	}
	apps := `apps:
  - {name: tested, manifests: app.yaml, tests: tests, groups: [staging]}
  - {name: everywhere, manifests: everywhere.yaml}
`
	dir := workdir(t, twoGroups+apps, map[string]string{
		"app.yaml":        namespaced("e2e-tests", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: e2e-tests}\n"),
		"everywhere.yaml": namespaced("e2e-tests-all", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: all, namespace: e2e-tests-all}\n"),
		"tests/job.yaml":  job(""),
	})
	out, errOut, code := fleet(t, dir, "apply", "--yes", "--timeout", "2m")
	if code != 0 || !strings.Contains(out, "tested: test job.batch/smoke passed") || !strings.Contains(out, "[prod-a] namespace/e2e-tests-all created") || !strings.Contains(out, "; tests of tested passed\n") {
		t.Fatalf("apply with a passing test: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c1", "job", "smoke", "-n", "e2e-tests") {
		t.Error("the test Job was left in place after it passed")
	}
	// --keep-tests leaves it; --skip-tests says so.
	if out, errOut, code := fleet(t, dir, "apply", "-c", "stg", "--keep-tests"); code != 0 {
		t.Fatalf("apply --keep-tests: exit %d\n%s%s", code, out, errOut)
	}
	if _, code := get(t, "fleet-c1", "job", "smoke", "-n", "e2e-tests"); code != 0 {
		t.Error("--keep-tests did not keep the test Job")
	}
	if out, _, code := fleet(t, dir, "apply", "-c", "stg", "--skip-tests"); code != 0 || strings.Contains(out, "test job") || !strings.Contains(out, "Tests were skipped (--skip-tests).") {
		t.Errorf("apply --skip-tests: exit %d\n%s", code, out)
	}
	if _, errOut, code := kubectl(t, "", "delete", "configmap", "all", "-n", "e2e-tests-all", "--context", "fleet-c2"); code != 0 {
		t.Fatal(errOut)
	}
	// A test that fails (it cannot be scheduled within its deadline).
	if err := writeFile(dir, "tests/job.yaml", job("  activeDeadlineSeconds: 2\n")+"      nodeSelector: {no-such-node: \"true\"}\n"); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "--timeout", "1m")
	if code != 1 || !strings.Contains(out, "tested: test job.batch/smoke failed: Job Failed") || !strings.Contains(out, "[prod-a] not started") {
		t.Fatalf("apply with a failing test: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c2", "configmap", "all", "-n", "e2e-tests-all") {
		t.Error("production was written although the staging test failed")
	}
}

// Progress: one live line per cluster on a terminal's stderr, drawn by
// mpb, never in stdout's lines; plain prefixed lines when stderr is not a
// terminal.
func TestProgress(t *testing.T) {
	// A check that takes a second, so that the live lines are drawn.
	slow := strings.Replace(stgOnly, "  - {name: staging}\n", "  - name: staging\n    verify: [{name: pause, command: [sleep, \"1\"]}]\n", 1)
	dir := workdir(t, slow+"apps:\n  - {name: progress, manifests: app.yaml}\n", map[string]string{
		"app.yaml": namespaced("e2e-progress", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: e2e-progress}\n"),
	})
	// Without a terminal: stage changes as lines on stderr.
	out, errOut, code := fleet(t, dir, "apply")
	if code != 0 || !strings.Contains(errOut, "[stg] applying progress (0/2 objects") || !strings.Contains(errOut, "[stg] done (2/2 objects") || strings.Contains(out+errOut, "\x1b[") {
		t.Fatalf("plain progress: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out, "applying progress") {
		t.Errorf("progress lines on stdout:\n%s", out)
	}
	// On a terminal: live lines on it, stdout's lines untouched.
	control, terminal, err := testenv.OpenPTY()
	if err != nil {
		if runtime.GOOS == "linux" {
			t.Fatal(err) // OpenPTY is implemented there
		}
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer control.Close()
	if err := testenv.SetPTYSize(terminal, 24, 100); err != nil {
		t.Fatal(err)
	}
	cmd := kubectlCmd(t, "fleet", "-F", filepath.Join(dir, "fleet.yaml"), "apply", "--wait")
	var stdout strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, terminal
	read := testenv.ReadPTY(control)
	err = cmd.Run()
	_ = terminal.Close()
	_ = control.SetReadDeadline(time.Now().Add(2 * time.Second))
	shown := <-read
	if err != nil || !strings.Contains(stdout.String(), "configmap/a unchanged") || strings.Contains(stdout.String(), "\x1b[") {
		t.Fatalf("apply on a terminal: %v\nstdout:\n%s\nterminal:\n%q", err, stdout.String(), shown)
	}
	if !strings.Contains(shown, "[stg] check pause   2/2 objects") || !strings.Contains(shown, "\x1b[1A") {
		t.Errorf("no live line on the terminal:\n%q", shown)
	}
	// Stdout on the terminal too, as a user runs it: its lines above the
	// live ones, and the summary after them.
	control, terminal, err = testenv.OpenPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close()
	must(t, testenv.SetPTYSize(terminal, 24, 100))
	cmd = kubectlCmd(t, "fleet", "-F", filepath.Join(dir, "fleet.yaml"), "apply", "--wait")
	cmd.Stdout, cmd.Stderr = terminal, terminal
	read = testenv.ReadPTY(control)
	err = cmd.Run()
	_ = terminal.Close()
	_ = control.SetReadDeadline(time.Now().Add(2 * time.Second))
	shown = <-read
	if err != nil || !strings.Contains(shown, "configmap/a unchanged") || !regexp.MustCompile(`Summary:\r?\n\[stg\] applied`).MatchString(shown) {
		t.Errorf("apply with stdout and stderr on a terminal: %v, no summary:\n%q", err, shown)
	}
}

// status --watch reports again and again until Ctrl-C, and sees changes.
func TestStatusWatch(t *testing.T) {
	dir := workdir(t, stgOnly+"apps:\n  - {name: watched, manifests: app.yaml}\n", map[string]string{
		"app.yaml": namespaced("e2e-watch", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: w, namespace: e2e-watch}\n"),
	})
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	deleted, sawNotFound := false, false
	out, _, code := fleetStreaming(t, dir, func(line string, p *os.Process) {
		if !deleted && strings.Contains(line, "2 of 2 Current") {
			if _, errOut, code := kubectl(t, "", "delete", "--context", "fleet-c1", "-n", "e2e-watch", "configmap", "w"); code != 0 {
				t.Error(errOut)
			}
			deleted = true
		}
		if deleted && strings.Contains(line, "1 of 2 NotFound") {
			sawNotFound = true
			_ = p.Signal(os.Interrupt)
		}
	}, "status", "--watch", "--watch-interval", "300ms")
	if !sawNotFound || code != 130 || strings.Count(out, "--- ") < 2 {
		t.Errorf("status --watch: exit %d, saw the deletion %v\n%s", code, sawNotFound, out)
	}
}

// Ctrl-C during a soak stops the rollout: the next group never starts.
func TestSoakInterrupted(t *testing.T) {
	fleetYAML := strings.Replace(twoGroups, "  - {name: staging, maxParallel: 1}\n", "  - {name: staging, soak: 5m}\n", 1) +
		"apps:\n  - {name: soak-int, manifests: app.yaml}\n"
	dir := workdir(t, fleetYAML, map[string]string{"app.yaml": namespaced("e2e-soak-int", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: e2e-soak-int}\n")})
	var signalled time.Time
	out, _, code := fleetStreaming(t, dir, func(line string, p *os.Process) {
		if signalled.IsZero() && strings.Contains(line, "soak started") {
			_ = p.Signal(os.Interrupt)
			signalled = time.Now()
		}
	}, "apply", "--yes")
	if signalled.IsZero() || code != 130 || !strings.Contains(out, "[prod-a] not started") || time.Since(signalled) > 10*time.Second {
		t.Fatalf("exit %d, %s after Ctrl-C\n%s", code, time.Since(signalled), out)
	}
	if !absent(t, "fleet-c2", "namespace", "e2e-soak-int") {
		t.Error("production was written after Ctrl-C during the soak")
	}
}

// A fleet of 40 clusters through pipes, as CI logs get it: stderr has a
// line per group, not a line per cluster and stage, and the summary says
// the clusters' identical outcome once; diff's summary too. -o json stays
// per cluster.
func TestManyClustersThroughPipes(t *testing.T) {
	const ns = "e2e-many"
	var b strings.Builder
	b.WriteString("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: e2e}\ngroups:\n  - {name: staging}\n  - {name: production}\nclusters:\n")
	for i := range 40 {
		group := "production"
		if i < 4 {
			group = "staging"
		}
		same := "" // three servers, each in many entries on purpose
		if i >= 3 {
			same = fmt.Sprintf(", sameClusterAs: many-%02d", i%3)
		}
		fmt.Fprintf(&b, "  - {name: many-%02d, group: %s, context: fleet-c%d%s}\n", i, group, i%3+1, same)
	}
	b.WriteString("apps:\n  - {name: many, manifests: app.yaml}\n")
	dir := workdir(t, b.String(), map[string]string{
		"app.yaml": namespaced(ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m, namespace: "+ns+"}\n"),
	})
	out, errOut, code := fleet(t, dir, "apply", "--dry-run=server")
	if code != 0 {
		t.Fatalf("apply --dry-run=server: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"[staging] 4 done, 8/8 objects", "[production] 36 done, 72/72 objects"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr has no %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "connecting") || strings.Count(errOut, "\n") > 10 {
		t.Errorf("stderr has a line per cluster and stage:\n%s", errOut)
	}
	if summary := out[strings.Index(out, "Summary:"):]; !strings.Contains(summary, "40 clusters applied (server dry run): 2 created\n") || strings.Contains(summary, "[many-") {
		t.Errorf("the summary names clusters whose outcome is the others':\n%s", summary)
	}
	out, errOut, code = fleet(t, dir, "diff")
	if code != 1 || !strings.Contains(out, "40 clusters: 2 to create, 0 to change, 0 to prune, 0 unchanged\n") {
		t.Errorf("diff: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "apply", "--dry-run=server", "-o", "json")
	if code != 0 || strings.Count(out, `"type":"cluster"`) != 40 {
		t.Errorf("apply -o json: exit %d, %d cluster results\n%s", code, strings.Count(out, `"type":"cluster"`), errOut)
	}
}
