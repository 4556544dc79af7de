package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lockFleet is one cluster, the full one (fleet-c1), where a Deployment
// can be made to wait.
const lockFleet = `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups: [{name: g}]
clusters: [{name: stg, group: g, context: fleet-c1}]
`

// holdingApp is a Deployment in ns that is healthy only once a node has
// the label selector (key=value): until then apply --wait holds its
// lock; and a ConfigMap.
func holdingApp(ns, selector string) string {
	var m manifest
	m.add("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}", ns)
	key, value, _ := strings.Cut(selector, "=")
	m.add(`apiVersion: apps/v1
kind: Deployment
metadata: {name: hold, namespace: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: hold}}
  template:
    metadata: {labels: {app: hold}}
    spec:
      containers: [{name: c, image: registry.example/x:1}]
      nodeSelector: {%s: "%s"}`, ns, key, value)
	m.add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first, namespace: %s}", ns)
	return m.String()
}

// lockedBy matches the message of a lock held by the process pid.
func lockedBy(pid int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`locked by \S+@\S+ \(pid %d\) since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`, pid))
}

func leaseHolder(t *testing.T, app string) string {
	t.Helper()
	out, _ := get(t, "fleet-c1", "lease", "fleet-"+app, "-n", "kubectl-fleet", "-o", "jsonpath={.spec.holderIdentity}")
	return out
}

// TestLockConcurrentApplies: while one apply of an app to a cluster holds
// its lock (waiting for a Deployment), a second apply and a delete of the
// same app fail that cluster at once, naming the holder, and write
// nothing; the first then succeeds and releases the lock.
func TestLockConcurrentApplies(t *testing.T) {
	const ns, app, label = "e2e-lock", "e2e-lock", "e2e-lock-ready"
	other := holdingApp(ns, label+"=yes") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: second-only, namespace: " + ns + "}\n"
	dir := workdir(t, lockFleet, map[string]string{"first/all.yaml": holdingApp(ns, label+"=yes"), "second/all.yaml": other})
	node, code := get(t, "fleet-c1", "nodes", "-o", "jsonpath={.items[0].metadata.name}")
	if code != 0 || node == "" {
		t.Fatalf("no node on fleet-c1: %q", node)
	}
	t.Cleanup(func() { kubectl(t, "", "label", "--context", "fleet-c1", "node", node, label+"-") })

	first := startFleet(t, dir, nil, "apply", "-f", filepath.Join(dir, "first"), "--name", app, "--wait", "--timeout", "2m")
	first.waitFor(t, "deployment.apps/hold created", 60*time.Second)
	pid := first.cmd.Process.Pid
	if h := leaseHolder(t, app); !strings.HasSuffix(h, fmt.Sprintf(" pid %d", pid)) {
		t.Errorf("lease holder %q, want the first apply's pid %d", h, pid)
	}

	start := time.Now()
	out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "second"), "--name", app)
	took := time.Since(start)
	t.Logf("second apply: exit %d after %s", code, took.Round(time.Millisecond))
	summary := regexp.MustCompile(`(?m)^\[stg\] failed: app ` + app + `: (.*)$`).FindStringSubmatch(out)
	if code != 1 || summary == nil || !lockedBy(pid).MatchString(summary[1]) || strings.Contains(out, " created") {
		t.Errorf("second apply: exit %d\n%s%s", code, out, errOut)
	}
	if took > 20*time.Second {
		t.Errorf("the second apply took %s: it should fail at once", took)
	}
	if !absent(t, "fleet-c1", "configmap", "second-only", "-n", ns) {
		t.Error("the second apply wrote to the cluster")
	}
	out, errOut, code = fleet(t, dir, "delete", "-f", filepath.Join(dir, "first"), "--name", app, "--yes")
	if code != 1 || !lockedBy(pid).MatchString(out) || strings.Contains(out, " deleted") {
		t.Errorf("delete while locked: exit %d\n%s%s", code, out, errOut)
	}
	if absent(t, "fleet-c1", "configmap", "first", "-n", ns) {
		t.Error("the delete deleted while locked")
	}

	// The first goes on undisturbed, succeeds, and releases the lock.
	if _, errOut, code := kubectl(t, "", "label", "--context", "fleet-c1", "node", node, label+"=yes"); code != 0 {
		t.Fatal(errOut)
	}
	if !first.exited(90 * time.Second) {
		t.Fatal("the first apply did not finish")
	}
	out, errOut = first.output()
	if first.code != 0 || !strings.Contains(out, "[stg] applied: 3 created") {
		t.Errorf("first apply: exit %d\n%s%s", first.code, out, errOut)
	}
	if !absent(t, "fleet-c1", "lease", "fleet-"+app, "-n", "kubectl-fleet") {
		t.Error("the lock was not released")
	}
	if out, errOut, code := fleet(t, dir, "delete", "-f", filepath.Join(dir, "first"), "--name", app, "--yes"); code != 0 {
		t.Errorf("delete once unlocked: exit %d\n%s%s", code, out, errOut)
	}
}

// killedHolder starts an apply of app that holds its lock (a Deployment
// that never gets healthy, --wait) with the given lock flags, kills it
// with SIGKILL once it has written, and returns its pid. The lease is then
// made to look like another machine's: from this one, a lock whose holder
// is gone is taken over at once (TestLockGoneLocalHolder).
func killedHolder(t *testing.T, dir, app string, lockFlags ...string) int {
	t.Helper()
	pid := killedLocalHolder(t, dir, app, lockFlags...)
	if _, errOut, code := kubectl(t, "", "annotate", "--context", "fleet-c1", "-n", "kubectl-fleet", "lease", "fleet-"+app, "--overwrite", "fleet.kubectl.io/lock-host=elsewhere"); code != 0 {
		t.Fatal(errOut)
	}
	return pid
}

func killedLocalHolder(t *testing.T, dir, app string, lockFlags ...string) int {
	t.Helper()
	r := startFleet(t, dir, nil, append([]string{"apply", "-f", filepath.Join(dir, "hold"), "--name", app, "--wait", "--timeout", "2m"}, lockFlags...)...)
	r.waitFor(t, "deployment.apps/hold ", 60*time.Second) // created, or unchanged
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !r.exited(10 * time.Second) {
		t.Fatal("still running after SIGKILL")
	}
	return r.cmd.Process.Pid
}

// TestLockKilledHolder: an apply killed while it holds the lock leaves
// it; a new apply fails naming the dead holder while the lease looks
// live, one with --lock-timeout watches it unchanged for its duration
// (--lock-duration) and takes it over, and once its timestamps say it
// expired a plain apply watches it that long too, then takes it over.
func TestLockKilledHolder(t *testing.T) {
	const ns, app = "e2e-lock-kill", "e2e-lock-kill"
	dir := workdir(t, lockFleet, map[string]string{
		"hold/all.yaml": holdingApp(ns, "e2e-lock-never=true"),
		"next/all.yaml": namespaced(ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: next, namespace: "+ns+"}\n"),
	})
	next := filepath.Join(dir, "next")

	// 5s: time enough for the next apply to start on a busy machine.
	pid := killedHolder(t, dir, app, "--lock-duration", "5s")
	out, errOut, code := fleet(t, dir, "apply", "-f", next, "--name", app)
	if code != 1 || !lockedBy(pid).MatchString(out) {
		t.Errorf("apply right after the kill: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c1", "configmap", "next", "-n", ns) {
		t.Error("an apply wrote while locked")
	}
	start := time.Now()
	out, errOut, code = fleet(t, dir, "apply", "-f", next, "--name", app, "--lock-timeout", "30s")
	took := time.Since(start)
	t.Logf("--lock-timeout 30s: exit %d after %s", code, took.Round(time.Millisecond))
	if code != 0 || !regexp.MustCompile(`(?m)^\[stg\] waiting up to 30s for the lock: `+lockedBy(pid).String()+`$`).MatchString(out) || !strings.Contains(out, "[stg] configmap/next created") {
		t.Errorf("apply --lock-timeout: exit %d\n%s%s", code, out, errOut)
	}
	if took > 15*time.Second {
		t.Errorf("--lock-timeout waited %s for a lock lasting 5s", took)
	}

	pid = killedHolder(t, dir, app, "--lock-duration", "3s")
	if h := leaseHolder(t, app); !strings.HasSuffix(h, fmt.Sprintf(" pid %d", pid)) {
		t.Errorf("lease holder %q, want the killed apply's pid %d", h, pid)
	}
	time.Sleep(4 * time.Second)
	if out, errOut, code := fleet(t, dir, "apply", "-f", next, "--name", app); code != 0 || strings.Contains(out, "locked by") || !strings.Contains(out, "[stg] the lock looks abandoned") {
		t.Errorf("apply after the lock expired: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c1", "lease", "fleet-"+app, "-n", "kubectl-fleet") {
		t.Error("the lock taken over was not released")
	}
}

// TestLockGoneLocalHolder: a lock whose holder was a process of this
// machine that is gone (killed, or its cluster died before it could
// release) is taken over at once when the lease says the holder ran in
// this process's pid namespace, else once seen unrenewed past its
// renewal interval (a third of its duration and a second), not after it
// expires.
func TestLockGoneLocalHolder(t *testing.T) {
	const ns, app = "e2e-lock-gone", "e2e-lock-gone"
	dir := workdir(t, lockFleet, map[string]string{
		"hold/all.yaml": holdingApp(ns, "e2e-lock-never=true"),
		"next/all.yaml": namespaced(ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: next, namespace: "+ns+"}\n"),
	})
	// Killed where this process runs (the same kernel boot and pid
	// namespace, which the lease names): certainly gone, taken over at
	// once.
	pid := killedLocalHolder(t, dir, app, "--lock-duration", "30s")
	if h := leaseHolder(t, app); !strings.HasSuffix(h, fmt.Sprintf(" pid %d", pid)) {
		t.Fatalf("lease holder %q, want the killed apply's pid %d", h, pid)
	}
	start := time.Now()
	out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "next"), "--name", app)
	took := time.Since(start)
	if code != 0 || strings.Contains(out, "locked by") || strings.Contains(out, "taking it over") || !strings.Contains(out, "[stg] configmap/next created") {
		t.Errorf("apply after the holder was killed here: exit %d\n%s%s", code, out, errOut)
	}
	if took > 8*time.Second {
		t.Errorf("took %s to take over the lease of a holder gone from this machine; want at once", took)
	}

	// Killed on this host but not known to be in this pid namespace (an
	// older plugin, or another container of the same host name): gone by
	// its pid, taken over once seen unrenewed past its renewal interval.
	killedLocalHolder(t, dir, app, "--lock-duration", "30s")
	if _, errOut, code := kubectl(t, "", "annotate", "--context", "fleet-c1", "-n", "kubectl-fleet", "lease", "fleet-"+app, "fleet.kubectl.io/lock-machine-"); code != 0 {
		t.Fatal(errOut)
	}
	start = time.Now()
	out, errOut, code = fleet(t, dir, "apply", "-f", filepath.Join(dir, "next"), "--name", app)
	took = time.Since(start)
	if code != 0 || strings.Contains(out, "locked by") || !strings.Contains(out, "taking it over unless it changes within 11s") {
		t.Errorf("apply after the local holder was killed: exit %d\n%s%s", code, out, errOut)
	}
	if took < 10*time.Second || took > 25*time.Second {
		t.Errorf("took %s to take over a gone holder's 30s lease; want about 11s", took)
	}
	if !absent(t, "fleet-c1", "lease", "fleet-"+app, "-n", "kubectl-fleet") {
		t.Error("the lock taken over was not released")
	}
}

// TestLockUnlock: unlock shows a stale lock and, without a terminal,
// removes it only with --yes; then the app can be applied; a cluster
// without a lock is "not locked".
func TestLockUnlock(t *testing.T) {
	const ns, app = "e2e-lock-unlock", "e2e-lock-unlock"
	dir := workdir(t, lockFleet, map[string]string{"hold/all.yaml": holdingApp(ns, "e2e-lock-never=true")})
	pid := killedHolder(t, dir, app) // the default --lock-duration: 60s

	out, errOut, code := fleet(t, dir, "unlock", "--app", app)
	shown := regexp.MustCompile(`(?m)^\[stg\] ` + app + `: ` + lockedBy(pid).String() + `.*, expires in \d+s unless renewed$`)
	if code != 1 || !shown.MatchString(out) || !strings.Contains(errOut, "pass --yes") {
		t.Errorf("unlock without --yes nor a terminal: exit %d\n%s%s", code, out, errOut)
	}
	if absent(t, "fleet-c1", "lease", "fleet-"+app, "-n", "kubectl-fleet") {
		t.Fatal("unlock without --yes removed the lock")
	}
	out, errOut, code = fleet(t, dir, "unlock", "--app", app, "--yes")
	if code != 0 || !shown.MatchString(out) || !strings.Contains(out, "[stg] unlocked\n") {
		t.Errorf("unlock --yes: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c1", "lease", "fleet-"+app, "-n", "kubectl-fleet") {
		t.Error("unlock --yes left the lock")
	}
	if out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "hold"), "--name", app); code != 0 {
		t.Errorf("apply after unlock: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "unlock", "--app", app)
	if code != 0 || !strings.Contains(out, "[stg] not locked\n") {
		t.Errorf("unlock of an app not locked: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "delete", "-f", filepath.Join(dir, "hold"), "--name", app, "--yes"); code != 0 {
		t.Errorf("delete: exit %d\n%s%s", code, out, errOut)
	}
}

// A lock lost while held stops that cluster's writes at once: the wait in
// progress ends, the app after it is never applied, and the cluster fails
// with "lost the lock", long before --timeout.
func TestLockLostStopsWrites(t *testing.T) {
	const ns, hold, after = "e2e-lock-lost", "e2e-lost-hold", "e2e-lost-after"
	apps := "apps:\n  - {name: " + hold + ", manifests: hold.yaml}\n  - {name: " + after + ", manifests: after.yaml, dependsOn: [" + hold + "]}\n"
	dir := workdir(t, lockFleet+apps, map[string]string{
		"hold.yaml":  holdingApp(ns, "e2e-lock-lost=never"),
		"after.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after, namespace: " + ns + "}\n",
	})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	start := time.Now()
	r := startFleet(t, dir, nil, "apply", "--timeout", "2m", "--lock-duration", "3s")
	r.waitFor(t, "deployment.apps/hold created", time.Minute)
	if _, errOut, code := kubectl(t, "", "delete", "--context", "fleet-c1", "-n", "kubectl-fleet", "lease", "fleet-"+hold); code != 0 {
		t.Fatal(errOut)
	}
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		t.Fatal("apply went on after its lock was lost")
	}
	out, errOut := r.output()
	if r.code != 1 || !regexp.MustCompile(`(?m)^\[stg\] failed: .*: lost the lock: lock of app `+hold+` lost: lease kubectl-fleet/fleet-`+hold+` was taken over or deleted while held$`).MatchString(out) {
		t.Errorf("exit %d after %s\n%s%s", r.code, time.Since(start).Round(time.Second), out, errOut)
	}
	if took := time.Since(start); took > 45*time.Second {
		t.Errorf("took %s: the wait went on to --timeout", took)
	}
	if !absent(t, "fleet-c1", "configmap", "after", "-n", ns) {
		t.Error("the app after the lost lock was applied")
	}
}

// A lock lost during its group's soak stops the soak at once, and
// --atomic does not restore under it: another run may be writing there.
// The cluster fails saying both; what the run applied stays.
func TestLockLostDuringSoak(t *testing.T) {
	const ns, app = "e2e-lock-soak", "e2e-lock-soak"
	fleetYAML := strings.Replace(lockFleet, "groups: [{name: g}]", "groups: [{name: g, soak: 2m}]", 1) + "apps:\n  - {name: " + app + ", manifests: app.yaml}\n"
	v1 := namespaced(ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: steady, namespace: "+ns+"}\ndata: {v: one}\n")
	dir := workdir(t, fleetYAML, map[string]string{"app.yaml": v1})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	if out, errOut, code := fleet(t, dir, "apply", "--skip-gates"); code != 0 {
		t.Fatalf("apply v1: exit %d\n%s%s", code, out, errOut)
	}
	if err := writeFile(dir, "app.yaml", strings.Replace(v1, "v: one", "v: two", 1)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	unlocked := false
	out, errOut, code := fleetStreaming(t, dir, func(line string, _ *os.Process) {
		if !unlocked && strings.Contains(line, "soak started") {
			if _, errOut, code := kubectl(t, "", "delete", "--context", "fleet-c1", "-n", "kubectl-fleet", "lease", "fleet-"+app); code != 0 {
				t.Error(errOut)
			}
			unlocked = true
		}
	}, "apply", "--atomic", "--lock-duration", "3s")
	took := time.Since(start)
	want := regexp.MustCompile(`(?m)^\[stg\] failed, not restored \(lost the lock\): .*: soak stopped with \S+ left: lost the lock: lock of app ` + app + ` lost: lease kubectl-fleet/fleet-` + app + ` was taken over or deleted while held$`)
	if !unlocked || code != 1 || !want.MatchString(out) {
		t.Fatalf("exit %d after %s\n%s%s", code, took.Round(time.Second), out, errOut)
	}
	if took > time.Minute {
		t.Errorf("took %s: the soak went on after its lock was lost", took.Round(time.Second))
	}
	if v, _ := get(t, "fleet-c1", "configmap", "steady", "-n", ns, "-o", "jsonpath={.data.v}"); v != "two" {
		t.Errorf("v=%q: restored without the lock", v)
	}
	if holder := leaseHolder(t, app); holder != "" {
		t.Errorf("a lease is held after the run: %s", holder)
	}
}
