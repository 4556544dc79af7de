package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlan: a plan applied unchanged succeeds; a plan whose source
// changed, or whose live object was edited after the plan, is refused for
// that cluster with nothing written there; the plan holds no Secret value
// and must match the selection.
func TestPlan(t *testing.T) {
	const marker = "zq-plan-marker-8086"
	app := func(level string) string {
		return namespaced("e2e-plan", `apiVersion: v1
kind: ConfigMap
metadata: {name: conf, namespace: e2e-plan}
data: {level: `+level+`}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: e2e-plan}
stringData: {password: `+marker+`}
`)
	}
	// Each cluster's digest key exists before the plan, as it does once
	// anything holding a Secret was applied there: without it a plan
	// cannot vouch for Secret values, and says so. Run alone, on fresh
	// clusters, this test made its plan before any key existed.
	warm := workdir(t, twoGroups, map[string]string{"app/all.yaml": namespaced("e2e-plan-key", "apiVersion: v1\nkind: Secret\nmetadata: {name: k, namespace: e2e-plan-key}\nstringData: {v: x}\n")})
	if out, errOut, code := fleet(t, warm, "apply", "-f", filepath.Join(warm, "app"), "--name", "plan-key", "--yes"); code != 0 {
		t.Fatalf("apply of a Secret: exit %d\n%s%s", code, out, errOut)
	}
	dir := workdir(t, twoGroups, map[string]string{"app/all.yaml": app("one")})
	src := filepath.Join(dir, "app")
	planFile := filepath.Join(t.TempDir(), "plan.json")
	level := func(ctx string) string {
		v, _ := get(t, ctx, "configmap", "conf", "-n", "e2e-plan", "-o", "jsonpath={.data.level}")
		return v
	}
	out, errOut, code := fleet(t, dir, "diff", "-f", src, "--name", "plan", "--out", planFile)
	if code != 1 || !strings.Contains(errOut, "Plan written to "+planFile) {
		t.Fatalf("diff --out: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(planFile); st.Mode().Perm() != 0o600 {
		t.Errorf("plan mode %v", st.Mode().Perm())
	}
	if strings.Contains(string(b), marker) || !strings.Contains(string(b), `"kind": "Plan"`) || strings.Count(string(b), `"action": "create"`) != 9 {
		t.Errorf("plan:\n%s", b)
	}
	// Applied as planned.
	out, errOut, code = fleet(t, dir, "apply", "-f", src, "--name", "plan", "--plan", planFile, "--yes")
	if code != 0 || strings.Count(out, "configmap/conf created") != 3 {
		t.Fatalf("apply --plan: exit %d\n%s%s", code, out, errOut)
	}
	// The same plan again: what it planned to create exists now.
	out, _, code = fleet(t, dir, "apply", "-f", src, "--name", "plan", "--plan", planFile, "--yes")
	if code != 1 || !strings.Contains(out, "[stg]    failed: plan is stale: configmap/conf was created since the plan") || !strings.Contains(out, "[prod-a] not started") {
		t.Errorf("a used plan: exit %d\n%s", code, out)
	}

	// The source changes after the plan: refused, nothing written.
	if _, errOut, code := fleet(t, dir, "diff", "-f", src, "--name", "plan", "--out", planFile); code != 0 {
		t.Fatalf("diff --out of an applied app: exit %d: %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(src, "all.yaml"), []byte(app("two")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = fleet(t, dir, "apply", "-f", src, "--name", "plan", "--plan", planFile, "--yes")
	if code != 1 || !strings.Contains(out, "[stg]    failed: plan is stale: the render of app plan changed since the plan (digest sha256:") {
		t.Errorf("a changed source: exit %d\n%s", code, out)
	}
	if level("fleet-c1") != "one" {
		t.Error("a stale plan wrote to staging")
	}

	// A live object edited after the plan: refused on that cluster only.
	if _, errOut, code := fleet(t, dir, "diff", "-f", src, "--name", "plan", "--out", planFile); code != 1 {
		t.Fatalf("diff --out: exit %d: %s", code, errOut)
	}
	if _, errOut, code := kubectl(t, "", "patch", "--context", "fleet-c3", "-n", "e2e-plan", "configmap", "conf", "-p", `{"data":{"level":"by-hand"}}`); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code = fleet(t, dir, "apply", "-f", src, "--name", "plan", "--plan", planFile, "--yes")
	if code != 1 || !strings.Contains(out, "[prod-b] failed: plan is stale: configmap/conf changed since the plan (resourceVersion ") || !strings.Contains(out, "[prod-a] applied: ") {
		t.Errorf("an edited live object: exit %d\n%s%s", code, out, errOut)
	}
	if level("fleet-c3") != "by-hand" || level("fleet-c2") != "two" || level("fleet-c1") != "two" {
		t.Errorf("levels: stg %s, prod-a %s, prod-b %s", level("fleet-c1"), level("fleet-c2"), level("fleet-c3"))
	}

	// The plan and the selection must agree, before anything is sent.
	if _, errOut, code := fleet(t, dir, "apply", "-f", src, "--name", "plan", "--plan", planFile, "-c", "stg"); code != 1 || !strings.Contains(errOut, "the plan has cluster prod-a, which is not selected") {
		t.Errorf("a narrower selection: exit %d: %s", code, errOut)
	}
	if _, errOut, code := fleet(t, dir, "apply", "-f", src, "--name", "other", "--plan", planFile, "--yes"); code != 1 || !strings.Contains(errOut, "cluster stg: app other is not in the plan") {
		t.Errorf("another app: exit %d: %s", code, errOut)
	}
}
