package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
)

// release is an app of one ConfigMap, release, in namespace ns: data.v
// is v.
func release(ns, v string) string {
	return namespaced(ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: release, namespace: "+ns+"}\ndata: {v: \""+v+"\"}\n")
}

// runs is the release (data.v) the cluster of context runs in ns.
func runs(t *testing.T, context, ns string) string {
	t.Helper()
	v, _ := get(t, context, "configmap", "release", "-n", ns, "-o", "jsonpath={.data.v}")
	return v
}

// canaryDir is a fleet whose production has a canary batch (pr-a) and
// the rest (pr-b); its check fails on the canary while the file "fail"
// exists in the fleet's folder.
func canaryDir(t *testing.T, ns string) string {
	t.Helper()
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - name: staging
  - name: production
    maxFailures: 50%
    batches:
      - {selector: canary=true, name: canary}
    verify:
      - {name: smoke, command: [./smoke.sh], timeout: 30s}
clusters:
  - {name: pr-stg, group: staging, context: fleet-c1}
  - {name: pr-b, group: production, context: fleet-c3}
  - {name: pr-a, group: production, context: fleet-c2, labels: {canary: "true"}}
apps:
  - {name: canary, manifests: app.yaml}
`, map[string]string{
		"app.yaml": release(ns, "1"),
		"smoke.sh": "#!/bin/sh\necho \"smoke on $FLEET_CLUSTER_NAME\"\n[ ! -f fail ] || [ \"$FLEET_CLUSTER_NAME\" != pr-a ]\n",
		"fail":     "",
	})
	if err := os.Chmod(filepath.Join(dir, "smoke.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	return dir
}

// A canary batch whose check fails holds the rest of its group: in the
// run, in a later run of the rest alone, and in a reconcile pass; the
// rest gets the release once the canary verified it. maxFailures 50%
// of the group does not let a failed canary of 1 through: a percentage
// is taken of the clusters rolled out before.
func TestCanaryBatchHoldsItsGroup(t *testing.T) {
	const ns = "e2e-canary"
	dir := canaryDir(t, ns)
	out, errOut, code := fleet(t, dir, "vet", "--no-kubeconfig")
	if code != 0 || !strings.Contains(out, "rollout: production/canary (1 cluster) after staging\nrollout: production/rest (1 cluster) after production/canary") {
		t.Errorf("vet does not draw the batches: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-o", "json")
	if code != 1 {
		t.Fatalf("first apply: exit %d\n%s%s", code, out, errOut)
	}
	held := "production/rest not started: pr-a runs canary r1, not verified (failed: check smoke: exit status 1)"
	states := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Type, Cluster, Batch, State, Wave string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if ev.Type == "cluster" {
			states[ev.Cluster] = ev.State + " " + ev.Batch
		}
	}
	if states["pr-stg"] != "succeeded " || states["pr-a"] != "failed canary" || states["pr-b"] != "notstarted rest" {
		t.Errorf("first apply's clusters: %v\n%s", states, out)
	}
	if !strings.Contains(out, `"wave":"production/rest","state":"not started"`) {
		t.Errorf("first apply does not say the rest was held:\n%s", out)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-c", "pr-b")
	if code != 1 || !strings.Contains(out, held) {
		t.Errorf("apply -c pr-b: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "reconcile", "--once", "--yes")
	if code != 1 || !strings.Contains(out+errOut, "production/rest not started: pr-a runs canary r1, not verified") {
		t.Errorf("reconcile --once: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c3", "namespace", ns) {
		t.Fatal("pr-b got a release its canary rejected")
	}
	out, _, _ = fleet(t, dir, "status")
	if !strings.Contains(out, "production/canary") || !strings.Contains(out, "Promotion: "+held) {
		t.Errorf("status does not say the batch and why the rest waits:\n%s", out)
	}

	if err := os.Remove(filepath.Join(dir, "fail")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	if code != 0 || !strings.Contains(out, "[pr-a]   revision 1 verified") || !strings.Contains(out, "[pr-b]   revision 1 verified") {
		t.Fatalf("apply once the canary passes: exit %d\n%s%s", code, out, errOut)
	}
	if v := runs(t, "fleet-c3", ns); v != "1" {
		t.Errorf("pr-b runs %q, want 1", v)
	}
}

// Two tracks (after:): a failure in one holds only what comes after it
// in that track; the other completes, and the exit says a cluster did
// not apply.
func TestTracks(t *testing.T) {
	const ns = "e2e-tracks"
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - name: eu-staging
    verify:
      - {name: smoke, command: [./smoke.sh], timeout: 30s}
  - {name: eu-prod, after: [eu-staging]}
  - {name: us-prod, after: []}
clusters:
  - {name: tr-eu-stg, group: eu-staging, context: fleet-c1}
  - {name: tr-eu, group: eu-prod, context: fleet-c2}
  - {name: tr-us, group: us-prod, context: fleet-c3}
apps:
  - {name: tracks, manifests: app.yaml}
`, map[string]string{
		"app.yaml": release(ns, "1"),
		"smoke.sh": "#!/bin/sh\nexit 1\n",
	})
	if err := os.Chmod(filepath.Join(dir, "smoke.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	out, errOut, code := fleet(t, dir, "vet", "--no-kubeconfig")
	if code != 0 || !strings.Contains(out, "rollout: eu-prod (1 cluster) after eu-staging\nrollout: us-prod (1 cluster)\n") {
		t.Errorf("vet does not draw the tracks: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	if code != 1 || !strings.Contains(out, "[tr-eu]     not started: eu-staging failed") || !strings.Contains(out, "[tr-us]     applied") {
		t.Errorf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c2", "namespace", ns) {
		t.Error("eu-prod got a release eu-staging failed")
	}
	if v := runs(t, "fleet-c3", ns); v != "1" {
		t.Errorf("us-prod runs %q, want 1", v)
	}
}

// Deploy windows on an injected clock ($KUBECTL_FLEET_NOW): on a
// Saturday production's office-hours window is closed, so apply and a
// reconcile pass leave it not started and say when it opens; on a
// Monday morning it goes; --ignore-windows writes anyway and its
// revision says so; a bad clock is refused before anything.
func TestDeployWindows(t *testing.T) {
	const ns = "e2e-windows"
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - name: staging
  - name: production
    windows:
      - {kind: allow, schedule: "0 9 * * 1-5", duration: 8h, timeZone: Europe/Berlin}
      - {kind: deny, schedule: "0 0 24 12 *", duration: 48h}
clusters:
  - {name: wi-stg, group: staging, context: fleet-c1}
  - {name: wi-prod, group: production, context: fleet-c2}
apps:
  - {name: windows, manifests: app.yaml}
`, map[string]string{"app.yaml": release(ns, "1")})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	at := func(now string, args ...string) (string, string, int) {
		cmd := kubectlCmd(t, append([]string{"fleet", "-F", filepath.Join(dir, "fleet.yaml")}, args...)...)
		cmd.Env = append(cmd.Env, "KUBECTL_FLEET_NOW="+now)
		return runCmd(t, cmd, "")
	}
	closed := "production not started: outside its deploy windows: no allow window is open (allow 0 9 * * 1-5 for 8h0m0s (Europe/Berlin)); they open next at 2026-11-30T09:00:00+01:00"
	out, errOut, code := at("2026-11-28T12:00:00Z", "apply", "--yes")
	if code != 1 || !strings.Contains(out, closed) || !strings.Contains(out, "[wi-stg]  applied") {
		t.Errorf("apply on a Saturday: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = at("2026-11-28T12:00:00Z", "reconcile", "--once", "--yes")
	if code != 1 || !strings.Contains(out+errOut, "production not started: outside its deploy windows") {
		t.Errorf("reconcile on a Saturday: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c2", "namespace", ns) {
		t.Fatal("production was written to outside its windows")
	}
	if out, errOut, code = at("2026-12-24T10:00:00Z", "apply", "--yes"); code != 1 || !strings.Contains(out, "deny window deny 0 0 24 12 * for 48h0m0s is open; they open next at 2026-12-28T09:00:00+01:00") {
		t.Errorf("apply on Christmas Eve: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code = at("2026-11-30T08:30:00Z", "apply", "--yes"); code != 0 {
		t.Errorf("apply on a Monday morning: exit %d\n%s%s", code, out, errOut)
	}
	if err := writeFile(dir, "app.yaml", release(ns, "2")); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code = at("2026-11-28T12:00:00Z", "apply", "--yes", "--ignore-windows"); code != 0 || !strings.Contains(out, "(apply outside the deploy windows, --ignore-windows)") {
		t.Errorf("--ignore-windows: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := fleet(t, dir, "history", "-c", "wi-prod"); !strings.Contains(out, "apply outside the deploy windows") {
		t.Errorf("history does not say the windows were ignored:\n%s", out)
	}
	// A rollback is how an incident ends: windows do not hold it.
	if out, errOut, code = at("2026-11-28T12:00:00Z", "rollback", "--app", "windows", "-c", "wi-prod", "--yes"); code != 0 || !strings.Contains(out, "rolled back") {
		t.Errorf("rollback on a Saturday: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code = at("next tuesday", "apply", "--yes"); code != 1 || !strings.Contains(errOut, "$KUBECTL_FLEET_NOW \"next tuesday\": want an RFC 3339 time") {
		t.Errorf("a bad clock: exit %d\n%s%s", code, out, errOut)
	}
}

// A pause, recorded in the clusters: issued while a reconcile pass
// soaks staging, it stops the pass's next write to the paused production
// cluster (skipped, not failed) while the other goes on; a paused
// staging holds production in the next run and says who paused it and
// why; status and history show the pauses; resume lifts them.
func TestPauseAndResume(t *testing.T) {
	const ns = "e2e-pause"
	dir := workdir(t, promotionFleet("pausing", "6s"), map[string]string{
		"app.yaml": release(ns, "1"),
		"smoke.sh": smokeCheck,
	})
	if err := os.Chmod(filepath.Join(dir, "smoke.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "resume"); _, _, _ = fleet(t, dir, "delete", "--yes") })
	if _, errOut, code := fleet(t, dir, "pause", "-c", "pr-b"); code != 1 || !strings.Contains(errOut, "--reason is required") {
		t.Errorf("pause without --reason: exit %d\n%s", code, errOut)
	}
	r := startFleet(t, dir, nil, "reconcile", "--once", "--yes")
	r.waitFor(t, "soak started", 60*time.Second)
	if out, errOut, code := fleet(t, dir, "pause", "-c", "pr-b", "--reason", "INC-1"); code != 0 || !strings.Contains(out, `[pr-b] paused every app (by `) {
		t.Fatalf("pause -c pr-b: exit %d\n%s%s", code, out, errOut)
	}
	if !r.exited(2 * time.Minute) {
		t.Fatal("reconcile --once did not end")
	}
	out, errOut := r.output()
	if r.code != 1 || !strings.Contains(out+errOut, `pr-b paused`) || !strings.Contains(out+errOut, `"INC-1"`) {
		t.Errorf("reconcile with pr-b paused mid-pass: exit %d\n%s%s", r.code, out, errOut)
	}
	if !absent(t, "fleet-c3", "namespace", ns) {
		t.Error("pr-b was written to after its pause")
	}
	if v := runs(t, "fleet-c2", ns); v != "1" {
		t.Errorf("pr-a runs %q, want 1", v)
	}

	// A paused staging holds production, a new release never reaches it.
	if out, errOut, code := fleet(t, dir, "pause", "-g", "staging", "--reason", "bad canary"); code != 0 {
		t.Fatalf("pause -g staging: exit %d\n%s%s", code, out, errOut)
	}
	if err := writeFile(dir, "app.yaml", release(ns, "2")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := fleet(t, dir, "apply", "--yes")
	if code != 1 || !regexp.MustCompile(`production not started: pr-stg paused \S+ ago by [^:]+: "bad canary"`).MatchString(out) {
		t.Errorf("apply with staging paused: exit %d\n%s%s", code, out, errOut)
	}
	if v := runs(t, "fleet-c1", ns); v != "1" {
		t.Errorf("the paused staging runs %q, want 1 (not written)", v)
	}
	if out, _, _ := fleet(t, dir, "status"); !strings.Contains(out, "Paused: pr-stg paused") || !strings.Contains(out, "Paused: pr-b paused") {
		t.Errorf("status does not show the pauses:\n%s", out)
	}
	if out, _, _ := fleet(t, dir, "history", "-o", "json"); !strings.Contains(out, `{"type":"pause","cluster":"pr-stg","by":`) {
		t.Errorf("history -o json does not show the pauses:\n%s", out)
	}

	if out, errOut, code := fleet(t, dir, "resume"); code != 0 || !strings.Contains(out, `[pr-stg] resumed: was paused`) || !strings.Contains(out, "[pr-a]   not paused") {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "apply", "--yes"); code != 0 {
		t.Errorf("apply after resume: exit %d\n%s%s", code, out, errOut)
	}
	if v := runs(t, "fleet-c3", ns); v != "2" {
		t.Errorf("pr-b runs %q after resume, want 2", v)
	}
}

// Approvals bound to a release and to an approver: production
// (approval: required) is not started until approved, apply exits 4 and
// says what to run. The deploy credential cannot approve: approve
// without an approver's key is refused, an approval written with
// kubectl (it may write ConfigMaps there) or signed by a key not the
// fleet's does not count, nor one the applying identity gave itself.
// Alice's signed approval of render A lets A go; render B needs a new
// one.
func TestApproval(t *testing.T) {
	const ns = "e2e-approval"
	_, alicePEM, alicePub, err := approval.GenerateKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	_, malloryPEM, _, err := approval.GenerateKey("mallory")
	if err != nil {
		t.Fatal(err)
	}
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - name: staging
  - {name: production, approval: required}
clusters:
  - {name: ap-stg, group: staging, context: fleet-c1}
  - {name: ap-a, group: production, context: fleet-c2}
  - {name: ap-b, group: production, context: fleet-c3}
apps:
  - {name: approval, manifests: app.yaml}
approvers:
  - {name: alice, publicKey: `+alicePub+`}
`, map[string]string{"app.yaml": release(ns, "A"), "alice.pem": string(alicePEM), "mallory.pem": string(malloryPEM)})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	out, errOut, code := fleet(t, dir, "apply", "--yes")
	if code != 4 || !strings.Contains(out, "production awaiting approval: ap-a: approval sha256:") || !strings.Contains(errOut, "approve this release with kubectl fleet approve -g production") {
		t.Fatalf("apply before approval: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c2", "namespace", ns) {
		t.Fatal("production was written to before its approval")
	}

	// The deploy job approving its own release: without an approver's
	// key nothing is written; with a key not the fleet's, nothing either;
	// a ConfigMap written by hand, or the job's own signed approval, does
	// not count.
	if out, errOut, code := fleet(t, dir, "approve", "-g", "production"); code != 1 || !strings.Contains(errOut, "approve signs with an approver's key: give --key or $KUBECTL_FLEET_APPROVER_KEY (the fleet's approvers: alice)") {
		t.Errorf("approve without a key: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "approve", "-g", "production", "--key", filepath.Join(dir, "mallory.pem")); code != 1 || !strings.Contains(errOut, "is not one of the fleet's approvers (alice)") {
		t.Errorf("approve with a key not the fleet's: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c2", "configmap", "approval.e2e", "-n", "kubectl-fleet") {
		t.Error("a refused approve wrote an approval")
	}
	if out, errOut, code := fleet(t, dir, "approve", "-g", "production", "--key", filepath.Join(dir, "alice.pem")); code != 0 {
		t.Fatalf("approve as admin with alice's key: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "apply", "--yes"); code != 4 || !strings.Contains(out+errOut, "was approved by admin, who applies it") {
		t.Errorf("apply approved by its own identity: exit %d\n%s%s", code, out, errOut)
	}
	// The job edits the approval to say alice gave it: its signature no
	// longer verifies.
	for _, ctx := range []string{"fleet-c2", "fleet-c3"} {
		a, errOut, code := kubectl(t, "", "get", "configmap", "approval.e2e", "-n", "kubectl-fleet", "--context", ctx, "-o", "jsonpath={.data.approval}")
		if code != 0 || !strings.Contains(a, `"by":"admin"`) {
			t.Fatalf("the approval on %s: %s%s", ctx, a, errOut)
		}
		forged, _ := json.Marshal(map[string]any{"data": map[string]string{"approval": strings.Replace(a, `"by":"admin"`, `"by":"alice"`, 1)}})
		if _, errOut, code := kubectl(t, "", "patch", "configmap", "approval.e2e", "-n", "kubectl-fleet", "--context", ctx, "--type", "merge", "-p", string(forged)); code != 0 {
			t.Fatal(errOut)
		}
	}
	if out, errOut, code := fleet(t, dir, "apply", "--yes"); code != 4 || !strings.Contains(out+errOut, "signed by none of the fleet's approvers") {
		t.Errorf("apply with a forged approval: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c2", "namespace", ns) {
		t.Fatal("production was written to without a valid approval")
	}

	// Alice approves, with her key.
	if out, errOut, code := fleet(t, dir, "approve", "-g", "production", "--key", filepath.Join(dir, "alice.pem"), "--as", "alice", "--as-group", "system:masters"); code != 0 || !strings.Contains(out, "[ap-a] approved approval sha256:") {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "apply", "--yes"); code != 0 {
		t.Fatalf("apply of the approved release: exit %d\n%s%s", code, out, errOut)
	}
	if v := runs(t, "fleet-c3", ns); v != "A" {
		t.Errorf("ap-b runs %q, want A", v)
	}
	if err := writeFile(dir, "app.yaml", release(ns, "B")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "reconcile", "--once", "--yes")
	if code != 4 || !strings.Contains(out+errOut, "is not approved (approved: sha256:") {
		t.Errorf("reconcile with release B unapproved: exit %d\n%s%s", code, out, errOut)
	}
	if v := runs(t, "fleet-c3", ns); v != "A" {
		t.Errorf("ap-b runs %q: the approval of A let B through", v)
	}
}
