package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

// TestDocsExampleFleet runs the documentation's examples of the example
// fleet at work (examples/fleet.yaml: staging-eu, prod-eu and prod-us,
// apps web and dashboard) on three full clusters of its own, with the
// contexts the example fleet names, in the order of the story they tell:
// the pins checked, the verified rollout of the README, a reconcile pass
// (a render changed on prod-eu, a drift on prod-us), status, a change
// diffed and applied on staging, rolled back, its history, a failed check
// that holds production back, and a stale lock removed. The copy of the
// example fleet soaks 1s instead of 20s.
func TestDocsExampleFleet(t *testing.T) {
	docs := newDocChecks(t)
	x := startExampleFleet(t)

	x.withFile("fleet.yaml", "    context: fleet-c2\n", "    context: fleet-c2\n    uid: 7c1c2f0e-3a5b-4d6e-8f90-a1b2c3d4e5f6\n", func() {
		docs.check("docs/command-guide.md", "$ kubectl fleet clusters --check --pin --dry-run", x.command)
	})

	// The README's quick start, then its verified rollout: production
	// waits for its approval (exit 4), then goes, its canary first.
	x.run(0, "fleet", "apply", "--group", "staging", "--wait", "--as", "alice", "--as-group", "system:masters")
	x.run(4, "fleet", "apply", "--prune", "--yes")
	x.run(0, "fleet", "approve", "--group", "production", "--key", "demo-approver-key.pem", "--as", "alice", "--as-group", "system:masters")
	docs.check("README.md", "$ kubectl fleet apply --prune --yes", x.command)

	// A render changed on prod-eu, a hand edit on prod-us.
	x.edit("prod-eu: its own banner", "attributes: {domain: eu.acme.io}", "attributes: {domain: eu.acme.io, banner: Hello from Europe}")
	x.run(0, "patch", "configmap", "web-config", "-n", "web", "--context", "fleet-c3", "--type", "merge", "-p", `{"data":{"banner":"edited by hand"}}`)
	x.run(0, "fleet", "approve", "--group", "production", "--key", "demo-approver-key.pem", "--as", "alice", "--as-group", "system:masters") // prod-eu's new render
	docs.check("docs/reconcile.md", "$ kubectl fleet reconcile --once --yes", x.command)

	// prod-eu scaled by hand beyond what its node takes.
	x.run(0, "cordon", "kwok-node-0", "--context", "fleet-c2")
	x.run(0, "scale", "deployment", "web", "-n", "web", "--replicas", "5", "--context", "fleet-c2")
	x.waitFor("fleet-c2", "deployment/web", "{.metadata.generation} {.status.observedGeneration} {.status.replicas} {.status.availableReplicas}", func(f []string) bool {
		return len(f) == 4 && f[0] == f[1] && f[2] == "5" && f[3] == "3"
	})
	docs.check("docs/command-guide.md", "$ kubectl fleet status", x.command)
	docs.check("docs/command-guide.md", "$ kubectl fleet status -o wide -c prod-eu", x.command)

	// Staging gets two replicas from ci-bot; alice rolls it back.
	x.edit("staging: 2 replicas", "attributes: {replicas: 1, logLevel: debug}", "attributes: {replicas: 2, logLevel: debug}")
	docs.check("docs/command-guide.md", "$ kubectl fleet diff --group staging", x.command)
	x.run(0, "fleet", "apply", "--group", "staging", "--as", "ci-bot", "--as-group", "system:masters")
	x.run(0, "fleet", "rollback", "--app", "web", "--group", "staging", "--as", "alice", "--as-group", "system:masters")
	docs.check("docs/revisions.md", "$ kubectl fleet history --app web -c staging-eu", x.command)

	// Staging's check fails: production waits.
	x.edit("staging: back to 1 replica", "attributes: {replicas: 2, logLevel: debug}", "attributes: {replicas: 1, logLevel: debug}")
	x.write("hack/smoke.sh", "#!/bin/sh\necho \"$FLEET_CLUSTER_NAME: web does not answer\"\nexit 1\n")
	x.run(1, "fleet", "apply", "--group", "staging")
	docs.check("docs/rollouts.md", "$ kubectl fleet apply -g production --yes", x.command)
	docs.check("docs/troubleshooting.md", "$ kubectl fleet apply -g production --yes", x.command)

	x.staleLock("web", "alice", "build-7", 4242, 6*time.Minute)
	docs.check("docs/ci.md", "$ kubectl fleet unlock --app web -c staging-eu", x.command)
}

// exampleFleet is a copy of examples/ (a git work tree) and three full
// clusters whose contexts are the example fleet's: fleet-c1…fleet-c3.
type exampleFleet struct {
	t          *testing.T
	dir        string
	kubeconfig string
}

// startExampleFleet starts the clusters (stopped when the test ends, or on
// Ctrl-C) and makes the copy of examples/.
func startExampleFleet(t *testing.T) *exampleFleet {
	t.Helper()
	start := time.Now()
	bed, err := testenv.Start(stopping, testenv.Options{BinDir: binDir, Clusters: 3, Full: 3, KwokStages: kwokStages, Dir: filepath.Join(t.TempDir(), "clusters")})
	if err != nil {
		t.Fatal("starting the example fleet's clusters:", err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-stopping.Done(): // Ctrl-C: stop them even if a command hangs
			bed.Stop()
		case <-done:
		}
	}()
	t.Cleanup(func() {
		close(done)
		stopped := time.Now()
		bed.Stop()
		t.Logf("clusters stopped in %s", time.Since(stopped).Round(time.Millisecond))
	})
	t.Logf("3 full clusters ready in %s", time.Since(start).Round(time.Millisecond))
	x := &exampleFleet{t: t, dir: t.TempDir(), kubeconfig: bed.Kubeconfig}
	if err := os.CopyFS(x.dir, os.DirFS(filepath.Join(repo, "examples"))); err != nil {
		t.Fatal(err)
	}
	x.replace("fleet.yaml", "soak: 20s ", "soak: 1s  ")
	gitRepo(t, x.dir, "the example fleet")
	return x
}

// command prepares the real kubectl in the copy of examples/, with the
// example fleet's kubeconfig and no $KUBECTL_FLEET.
func (x *exampleFleet) command(args ...string) *exec.Cmd {
	cmd := kubectlCmd(x.t, args...)
	cmd.Dir = x.dir
	cmd.Env = append(cmd.Env, "KUBECONFIG="+x.kubeconfig, "KUBECTL_FLEET=", // the last value counts
		"SOPS_AGE_KEY_FILE="+filepath.Join(x.dir, "demo-age-key.txt")) // the demo key of the one encrypted file
	return cmd
}

// run runs kubectl (the plugin with "fleet") and wants exit code want.
func (x *exampleFleet) run(want int, args ...string) string {
	x.t.Helper()
	out, errOut, code := runCmd(x.t, x.command(args...), "")
	if code != want {
		x.t.Fatalf("kubectl %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}

// write writes a file of the copy.
func (x *exampleFleet) write(name, content string) {
	x.t.Helper()
	if err := os.WriteFile(filepath.Join(x.dir, name), []byte(content), 0o755); err != nil {
		x.t.Fatal(err)
	}
}

// replace replaces old, which must be there once, with new in a file of
// the copy, and returns what the file was.
func (x *exampleFleet) replace(name, old, new string) string {
	x.t.Helper()
	b, err := os.ReadFile(filepath.Join(x.dir, name))
	if err != nil {
		x.t.Fatal(err)
	}
	if n := strings.Count(string(b), old); n != 1 {
		x.t.Fatalf("%s has %q %d times", name, old, n)
	}
	x.write(name, strings.Replace(string(b), old, new, 1))
	return string(b)
}

// edit changes the fleet file and commits the change.
func (x *exampleFleet) edit(message, old, new string) {
	x.t.Helper()
	x.replace("fleet.yaml", old, new)
	gitRepo(x.t, x.dir, message)
}

// withFile runs f with a file of the copy changed, and puts it back.
func (x *exampleFleet) withFile(name, old, new string, f func()) {
	x.t.Helper()
	was := x.replace(name, old, new)
	defer x.write(name, was)
	f()
}

// waitFor waits until ok says yes to the fields of kubectl get's
// jsonpath of object (in namespace web).
func (x *exampleFleet) waitFor(context, object, jsonpath string, ok func(fields []string) bool) {
	x.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, _, _ := runCmd(x.t, x.command("get", object, "-n", "web", "--context", context, "-o", "jsonpath="+jsonpath), "")
		if ok(strings.Fields(out)) {
			return
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("%s on %s: %s is still %q", object, context, jsonpath, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// staleLock leaves the lock of app on staging-eu as a run of user@host
// with pid that died age ago would have left it (60s leases).
func (x *exampleFleet) staleLock(app, user, host string, pid int, age time.Duration) {
	x.t.Helper()
	since := time.Now().Add(-age).UTC()
	lease := `apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: fleet-` + app + `
  namespace: kubectl-fleet
  labels: {app.kubernetes.io/managed-by: kubectl-fleet, fleet.kubectl.io/app: ` + app + `}
  annotations:
    fleet.kubectl.io/lock-user: ` + user + `
    fleet.kubectl.io/lock-host: ` + host + `
    fleet.kubectl.io/lock-pid: "` + itoa(pid) + `"
    fleet.kubectl.io/lock-started: "` + since.Format(time.RFC3339) + `"
    fleet.kubectl.io/lock-cluster-user: ` + user + `
spec:
  holderIdentity: ` + user + `@` + host + ` pid ` + itoa(pid) + `
  leaseDurationSeconds: 60
  acquireTime: "` + since.Format("2006-01-02T15:04:05.000000Z07:00") + `"
  renewTime: "` + since.Format("2006-01-02T15:04:05.000000Z07:00") + `"
`
	if out, errOut, code := runCmd(x.t, x.command("apply", "--context", "fleet-c1", "-f", "-"), lease); code != 0 {
		x.t.Fatalf("the stale lease: exit %d\n%s%s", code, out, errOut)
	}
}
