package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusAndDelete follows an app through its life on the staging
// cluster: not deployed, applied and healthy, drifted (edited live), out
// of sync (its render changed), deleted.
func TestStatusAndDelete(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{"lifecycle/all.yaml": namespaced("e2e-life", `apiVersion: v1
kind: ConfigMap
metadata: {name: conf, namespace: e2e-life}
data: {level: one}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: e2e-life}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: registry.example/x:1}]
`)})
	src := filepath.Join(dir, "lifecycle")
	out, _, code := fleet(t, dir, "status", "-f", src, "-c", "stg")
	if code != 1 || !strings.Contains(out, "LIFECYCLE") || !strings.Contains(out, "stg       staging   not deployed") {
		t.Fatalf("before apply: exit %d\n%s", code, out)
	}
	if out, errOut, code := fleet(t, dir, "apply", "-f", src, "-c", "stg", "--wait", "--timeout", "90s"); code != 0 {
		t.Fatalf("apply: %s%s", out, errOut)
	}
	out, _, code = fleet(t, dir, "status", "-f", src, "-c", "stg")
	if code != 0 || !strings.Contains(out, "stg       staging   3 of 3 Current (r1 verified)") || strings.Contains(out, "drifted") {
		t.Fatalf("after apply: exit %d\n%s", code, out)
	}
	// Someone edits the ConfigMap by hand: drift.
	if _, errOut, code := kubectl(t, "", "patch", "--context", "fleet-c1", "-n", "e2e-life", "configmap", "conf", "-p", `{"data":{"level":"two"}}`); code != 0 {
		t.Fatal(errOut)
	}
	out, _, code = fleet(t, dir, "status", "-f", src, "-c", "stg", "-o", "wide")
	if code != 1 || !strings.Contains(out, "lifecycle: 3 of 3 Current, 1 drifted, revision 1 verified, last applied 20") || !strings.Contains(out, "configmap/conf Current (drifted: edited live since the last apply)") || !strings.Contains(out, "deployment.apps/web Current") {
		t.Errorf("drift: exit %d\n%s", code, out)
	}
	out, _, _ = fleet(t, dir, "status", "-f", src, "-c", "stg", "-o", "json")
	var st struct {
		Type, Cluster, State, App string
		Objects                   []struct {
			Object, Health string
			Drifted        bool
		}
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &st); err != nil || st.State != "Drifted" || len(st.Objects) != 3 {
		t.Errorf("json: %v %+v\n%s", err, st, out)
	}
	// The render changes and nobody applies it: out of sync, not drifted.
	all := filepath.Join(src, "all.yaml")
	b, err := os.ReadFile(all)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(all, []byte(strings.Replace(string(b), "replicas: 1", "replicas: 2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = fleet(t, dir, "status", "-f", src, "-c", "stg")
	if code != 1 || !strings.Contains(out, "stg       staging   3 of 3 Current, 1 drifted, 1 out of sync (r1 verified)") || !strings.Contains(out, "\nout of sync: the render is not what the last apply sent") {
		t.Errorf("render changed: exit %d\n%s", code, out)
	}

	// delete needs --yes without a terminal.
	if _, errOut, code := fleet(t, dir, "delete", "-f", src, "-c", "stg"); code != 1 || !strings.Contains(errOut, "pass --yes") {
		t.Errorf("delete without --yes: exit %d: %s", code, errOut)
	}
	out, errOut, code := fleet(t, dir, "delete", "-f", src, "-c", "stg", "--yes")
	if code != 0 || !strings.Contains(out, "lifecycle: deployment.apps/web deleted") || !strings.Contains(out, "lifecycle: namespace/e2e-life deleted") {
		t.Fatalf("delete: exit %d\n%s%s", code, out, errOut)
	}
	if i, j := strings.Index(out, "deployment.apps/web deleted"), strings.Index(out, "namespace/e2e-life deleted"); i > j {
		t.Errorf("the namespace went before its contents:\n%s", out)
	}
	if !absent(t, "fleet-c1", "configmap", "fleet-lifecycle", "-n", "kubectl-fleet") {
		t.Error("the inventory parent survived delete")
	}
	out, _, code = fleet(t, dir, "delete", "-f", src, "-c", "stg", "--yes")
	if code != 0 || !strings.Contains(out, "lifecycle: nothing to delete (never applied here)") {
		t.Errorf("second delete: exit %d\n%s", code, out)
	}
}

func TestExec(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{})
	out, errOut, code := fleet(t, dir, "exec", "--", "get", "namespace", "kube-system", "-o", "name")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"[stg]    namespace/kube-system\n", "[prod-a] namespace/kube-system\n", "[prod-b] namespace/kube-system\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "[prod-b] ok") {
		t.Errorf("summary: %s", errOut)
	}
	out, errOut, code = fleet(t, dir, "exec", "-g", "production", "--", "get", "configmap", "no-such-thing")
	if code != 1 || !strings.Contains(errOut, `[prod-a] Error from server (NotFound): configmaps "no-such-thing" not found`) || !strings.Contains(errOut, "[prod-b] exit status 1") || strings.Contains(out+errOut, "[stg]") {
		t.Errorf("failing command: exit %d\n%s%s", code, out, errOut)
	}
}

func TestVetServer(t *testing.T) {
	dir := workdir(t, twoGroups, map[string]string{"vetserver/bad.yaml": `apiVersion: v1
kind: Service
metadata: {name: vet-broken, namespace: default}
spec:
  ports: [{port: 0}]
`})
	src := filepath.Join(dir, "vetserver")
	if out, _, code := fleet(t, dir, "vet", "-f", src); code != 0 {
		t.Fatalf("offline vet should pass: exit %d\n%s", code, out)
	}
	out, _, code := fleet(t, dir, "vet", "--server", "-f", src, "-g", "staging")
	if code != 1 || !strings.Contains(out, "[stg] app vetserver: service/vet-broken: the server rejects it:") || !strings.Contains(out, "spec.ports[0].port") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if !absent(t, "fleet-c1", "service", "vet-broken", "-n", "default") {
		t.Error("vet --server wrote to the cluster")
	}
}
