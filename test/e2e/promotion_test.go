package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// promotionFleet is two groups whose staging check fails while the file
// "fail" exists in the fleet's folder.
func promotionFleet(group, soak string) string {
	return `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - name: staging
    soak: ` + soak + `
    verify:
      - {name: smoke, command: [./smoke.sh], timeout: 30s}
  - {name: production}
clusters:
  - {name: pr-stg, group: staging, context: fleet-c1}
  - {name: pr-a, group: production, context: fleet-c2}
  - {name: pr-b, group: production, context: fleet-c3}
apps:
  - {name: ` + group + `, manifests: app.yaml}
`
}

const smokeCheck = "#!/bin/sh\necho \"smoke on $FLEET_CLUSTER_NAME\"\n[ ! -f fail ]\n"

func promotionDir(t *testing.T, app, ns, value string) string {
	t.Helper()
	dir := workdir(t, promotionFleet(app, "0s"), map[string]string{
		"app.yaml": namespaced(ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: release, namespace: "+ns+"}\ndata: {v: \""+value+"\"}\n"),
		"smoke.sh": smokeCheck,
		"fail":     "",
	})
	if err := os.Chmod(filepath.Join(dir, "smoke.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	return dir
}

// Production only ever gets a release its staging verified, on the next
// run too: a failed check is recorded on staging's revision; a second
// apply, of everything or of production alone, re-runs the gates or
// refuses, and production stays untouched until the check passes.
// --skip-gates promotes anyway and records the release as unverified.
func TestPromotionAcrossRuns(t *testing.T) {
	const ns = "e2e-promotion"
	dir := promotionDir(t, "promo", ns, "1")
	blocked := "production not started: pr-stg runs promo r1, not verified (failed: check smoke: exit status 1)"
	out, errOut, code := fleet(t, dir, "apply", "--yes")
	if code != 1 || !strings.Contains(out, "[pr-stg] revision 1 failed: check smoke: exit status 1") || !strings.Contains(out, "[pr-a]   not started: staging failed (1 of 1 clusters; maxFailures 0)") {
		t.Fatalf("first apply: exit %d\n%s%s", code, out, errOut)
	}
	// Twice more: all groups (the unchanged staging runs its check
	// again), then production alone (staging is read, not selected).
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	if code != 1 || !strings.Contains(out, "smoke on pr-stg") || !strings.Contains(out, "revision 1 is current") || !strings.Contains(out, "[pr-b]   not started: staging failed") {
		t.Errorf("second apply: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-g", "production")
	if code != 1 || !strings.Contains(out, blocked) || strings.Contains(out, "smoke on") {
		t.Errorf("apply -g production: exit %d\n%s%s", code, out, errOut)
	}
	for _, ctx := range []string{"fleet-c2", "fleet-c3"} {
		if !absent(t, ctx, "namespace", ns) {
			t.Fatalf("production (%s) got a release staging rejected", ctx)
		}
	}
	out, _, _ = fleet(t, dir, "history", "-c", "pr-stg")
	if !strings.Contains(out, "failed: check smoke: exit status 1") {
		t.Errorf("history does not say the release failed:\n%s", out)
	}
	out, _, _ = fleet(t, dir, "status")
	if !regexp.MustCompile(`(?m)^pr-stg\s+staging\s+2 of 2 Current \(r1 failed\)$`).MatchString(out) || !strings.Contains(out, "Promotion: "+blocked) {
		t.Errorf("status does not say why production waits:\n%s", out)
	}
	// One cluster at a time, production's renders are let go until read.
	if one, _, _ := fleet(t, dir, "status", "--parallel", "1"); !regexp.MustCompile(`(?m)^pr-b\s+production\s+`).MatchString(one) || !strings.Contains(one, "Promotion: "+blocked) {
		t.Errorf("status one cluster at a time does not say why production waits:\n%s", one)
	}
	out, _, _ = fleet(t, dir, "status", "-o", "json")
	if !strings.Contains(out, `{"type":"promotion","group":"production","message":`+strconv.Quote(blocked)) {
		t.Errorf("status -o json does not say why production waits:\n%s", out)
	}

	// Fixed: production alone still waits (staging's record says failed);
	// the next full apply verifies staging, then rolls production.
	if err := os.Remove(filepath.Join(dir, "fail")); err != nil {
		t.Fatal(err)
	}
	if out, _, code := fleet(t, dir, "apply", "--yes", "-g", "production"); code != 1 || !strings.Contains(out, blocked) {
		t.Errorf("apply -g production before staging re-verified: exit %d\n%s", code, out)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	if code != 0 || !strings.Contains(out, "[pr-stg] revision 1 verified") || !strings.Contains(out, "[pr-a]   revision 1 verified") {
		t.Fatalf("apply once the check passes: exit %d\n%s%s", code, out, errOut)
	}
	if v, _ := get(t, "fleet-c3", "configmap", "release", "-n", ns, "-o", "jsonpath={.data.v}"); v != "1" {
		t.Errorf("production runs %q, want 1", v)
	}

	// An emergency: a new release straight to production.
	if err := writeFile(dir, "app.yaml", namespaced(ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: release, namespace: "+ns+"}\ndata: {v: \"2\"}\n")); err != nil {
		t.Fatal(err)
	}
	if out, _, code := fleet(t, dir, "apply", "--yes", "-g", "production"); code != 1 || !strings.Contains(out, "pr-stg runs promo r1, not this render") {
		t.Errorf("a new release to production alone: exit %d\n%s", code, out)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-g", "production", "--skip-gates")
	if code != 0 || !strings.Contains(out, "[pr-a] revision 2 unverified: gates skipped (--skip-gates)") || !strings.Contains(out, "Gates were skipped") {
		t.Errorf("--skip-gates: exit %d\n%s%s", code, out, errOut)
	}
	if v, _ := get(t, "fleet-c2", "configmap", "release", "-n", ns, "-o", "jsonpath={.data.v}"); v != "2" {
		t.Errorf("after --skip-gates production runs %q, want 2", v)
	}
}

// A reconcile loop over a fleet whose staging check fails runs pass after
// pass and never creates production's objects; once the check passes,
// the next pass verifies staging and rolls production. One cluster at a
// time: production's renders are let go from the render on, and made
// again for the check and the apply.
func TestReconcilePromotion(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the loop is stopped with SIGTERM")
	}
	const ns = "e2e-reconcile-promotion"
	dir := promotionDir(t, "recpromo", ns, "1")
	r := startFleet(t, dir, nil, "reconcile", "--interval", "1s", "--yes", "--log-format", "json", "--parallel", "1")
	for pass := 1; pass <= 3; pass++ {
		ev := waitEvent(t, r, 90*time.Second, "a failed pass", func(ev map[string]any) bool {
			p, _ := ev["pass"].(float64)
			return ev["type"] == "pass" && int(p) == pass
		})
		if ev["result"] != "failed" {
			t.Fatalf("pass %d: %v", pass, ev)
		}
		for _, ctx := range []string{"fleet-c2", "fleet-c3"} {
			if !absent(t, ctx, "namespace", ns) {
				out, errOut := r.output()
				t.Fatalf("pass %d: production (%s) got a release staging rejected\n%s%s", pass, ctx, out, errOut)
			}
		}
	}
	out, _ := r.output()
	if !strings.Contains(out, `"reason":"check smoke: exit status 1","revision":1,"state":"failed","type":"verification"`) || !strings.Contains(out, "recpromo: r1 failed: check smoke: exit status 1; running its gates again") {
		t.Errorf("the passes do not say why production waits:\n%s", out)
	}
	if err := os.Remove(filepath.Join(dir, "fail")); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, r, 90*time.Second, "a pass that succeeds", func(ev map[string]any) bool {
		return ev["type"] == "pass" && ev["result"] == "succeeded"
	})
	for _, ctx := range []string{"fleet-c2", "fleet-c3"} {
		if v, code := get(t, ctx, "configmap", "release", "-n", ns, "-o", "jsonpath={.data.v}"); code != 0 || v != "1" {
			t.Errorf("production (%s) runs %q after staging verified", ctx, v)
		}
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		t.Fatal("reconcile did not stop on SIGTERM")
	}
}

// A soak on the only group runs too: an object that goes away while it
// watches fails the cluster, and --atomic puts back the revision before.
func TestSoakOneGroup(t *testing.T) {
	const ns = "e2e-soak-one"
	fleetYAML := func(soak string) string {
		return "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: e2e}\ngroups:\n  - {name: only, soak: " + soak + "}\nclusters:\n  - {name: lone, group: only, context: fleet-c1}\napps:\n  - {name: soakone, manifests: app.yaml}\n"
	}
	release := func(v string) string {
		return namespaced(ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: release, namespace: "+ns+"}\ndata: {v: \""+v+"\"}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra-"+v+", namespace: "+ns+"}\n")
	}
	dir := workdir(t, fleetYAML("1s"), map[string]string{"app.yaml": release("1")})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	out, errOut, code := fleet(t, dir, "apply")
	if code != 0 || !strings.Contains(out, "[lone] soak passed") || !strings.Contains(out, "[lone] revision 1 verified") {
		t.Fatalf("v1 with a quiet soak: exit %d\n%s%s", code, out, errOut)
	}
	if err := writeFile(dir, "fleet.yaml", fleetYAML("30s")); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(dir, "app.yaml", release("2")); err != nil {
		t.Fatal(err)
	}
	deleted := false
	out, errOut, code = fleetStreaming(t, dir, func(line string, _ *os.Process) {
		if !deleted && strings.Contains(line, "soak started") {
			if _, errOut, code := kubectl(t, "", "delete", "--context", "fleet-c1", "-n", ns, "configmap", "extra-2"); code != 0 {
				t.Error(errOut)
			}
			deleted = true
		}
	}, "apply", "--atomic", "--prune")
	if !deleted || code != 1 || !strings.Contains(out, "configmap/extra-2 is gone") || !strings.Contains(out, "revision 2 failed: soak: configmap/extra-2 is gone") || !strings.Contains(out, "rolled back to r1") {
		t.Fatalf("v2, whose soak fails: exit %d\n%s%s", code, out, errOut)
	}
	if v, _ := get(t, "fleet-c1", "configmap", "release", "-n", ns, "-o", "jsonpath={.data.v}"); v != "1" {
		t.Errorf("after the rollback the release is %q, want 1", v)
	}
	if _, code := get(t, "fleet-c1", "configmap", "extra-1", "-n", ns); code != 0 {
		t.Error("the rollback did not bring back r1's extra-1")
	}
}

// Two reconcile replicas, --shard 0/2 and 1/2, split the clusters: each
// cluster is checked and applied by exactly one of them, and production
// waits for staging although staging is the other replica's: each reads
// the earlier group's release state from the clusters themselves.
func TestReconcileShards(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the loops are stopped with SIGTERM")
	}
	const ns = "e2e-reconcile-shards"
	// Rendezvous hashing of these names over 2 replicas: shard-stg is
	// replica 1's, shard-a and shard-b replica 0's (TestShardOwners in
	// pkg/fleet would notice a change of the hash).
	fleetYAML := strings.NewReplacer("pr-stg", "shard-stg", "pr-a", "shard-a", "pr-b", "shard-b").Replace(promotionFleet("shards", "0s"))
	dir := promotionDir(t, "shards", ns, "1")
	if err := writeFile(dir, "fleet.yaml", fleetYAML); err != nil {
		t.Fatal(err)
	}
	owned := map[string][]string{"0/2": {"shard-a", "shard-b"}, "1/2": {"shard-stg"}}
	replicas := map[string]*run{}
	for shard := range owned {
		replicas[shard] = startFleet(t, dir, nil, "reconcile", "--interval", "1s", "--yes", "--log-format", "json", "--shard", shard)
	}
	for pass := 1; pass <= 3; pass++ {
		for shard, r := range replicas {
			waitEvent(t, r, 90*time.Second, "a pass", passDone(float64(pass)))
			for _, ctx := range []string{"fleet-c2", "fleet-c3"} {
				if !absent(t, ctx, "namespace", ns) {
					out, errOut := r.output()
					t.Fatalf("pass %d of %s: production (%s) got a release staging rejected\n%s%s", pass, shard, ctx, out, errOut)
				}
			}
		}
	}
	out, _ := replicas["0/2"].output()
	if !strings.Contains(out, "production not started: shard-stg runs shards r1, not verified (failed: check smoke: exit status 1)") {
		t.Errorf("replica 0/2 does not say why production waits:\n%s", out)
	}
	if err := os.Remove(filepath.Join(dir, "fail")); err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		waitEvent(t, r, 90*time.Second, "a pass that succeeds", func(ev map[string]any) bool {
			return ev["type"] == "pass" && ev["result"] == "succeeded"
		})
	}
	for _, ctx := range []string{"fleet-c1", "fleet-c2", "fleet-c3"} {
		if v, code := get(t, ctx, "configmap", "release", "-n", ns, "-o", "jsonpath={.data.v}"); code != 0 || v != "1" {
			t.Errorf("%s runs %q after staging verified", ctx, v)
		}
	}
	for shard, r := range replicas {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		if !r.exited(60 * time.Second) {
			t.Fatalf("replica %s did not stop on SIGTERM", shard)
		}
		out, errOut := r.output()
		if !strings.Contains(out, "(shard "+shard+")") {
			t.Errorf("replica %s does not say its shard when a pass starts:\n%s", shard, out)
		}
		// Each replica checked and applied only its own clusters.
		for _, ev := range jsonEvents(t, out) {
			c, _ := ev["cluster"].(string)
			if c == "" {
				continue // the loop's own lines
			}
			if ev["type"] == "reconcile" && !slices.Contains(owned[shard], c) {
				t.Errorf("replica %s checked %s, which is not its cluster: %v\n%s", shard, c, ev, errOut)
			}
			if ev["type"] == "object" && !slices.Contains(owned[shard], c) {
				t.Errorf("replica %s applied an object on %s: %v", shard, c, ev)
			}
		}
	}
}
