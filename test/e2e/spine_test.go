package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestVersionThroughKubectl(t *testing.T) {
	out, errOut, code := kubectl(t, "", "fleet", "version")
	if code != 0 || !strings.HasPrefix(out, "kubectl-fleet ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, _ = kubectl(t, "", "plugin", "list")
	if !strings.Contains(out, "kubectl-fleet") {
		t.Errorf("kubectl plugin list does not show the plugin:\n%s", out)
	}
}

func TestClustersShowRealServers(t *testing.T) {
	out, errOut, code := kubectl(t, "", "fleet", "clusters", "-F", filepath.Join(repo, "examples", "fleet.yaml"), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d clusters:\n%s", len(lines), out)
	}
	for i, line := range lines {
		var c struct{ Name, Context, Server string }
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		if c.Context != env.Clusters[i].Context || c.Server != env.Clusters[i].Server {
			t.Errorf("cluster %s: context %s server %s, want %s %s", c.Name, c.Context, c.Server, env.Clusters[i].Context, env.Clusters[i].Server)
		}
	}
	if strings.Contains(out+errOut, env.Token) {
		t.Error("the admin token was printed")
	}
}

// TestAttributesFromCluster reads each cluster's kube-system namespace UID
// into an attribute before rendering; the three real clusters must give
// their own, distinct UIDs, the ones kubectl reads.
func TestAttributesFromCluster(t *testing.T) {
	dir := t.TempDir()
	fleetFile := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(fleetFile, []byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups: [{name: all}]
defaults:
  attributesFrom:
    - apiVersion: v1
      kind: Namespace
      name: kube-system
      attributes: {clusterUID: '{.metadata.uid}'}
    - {apiVersion: v1, kind: ConfigMap, namespace: kube-system, name: absent, optional: true, attributes: {region: '{.data.region}'}}
clusters:
  - {name: one, group: all, context: fleet-c1}
  - {name: two, group: all, context: fleet-c2}
  - {name: three, group: all, context: fleet-c3}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: identity}\ndata: {uid: '${clusterUID}', region: '${region:=none}'}\n"
	out, errOut, code := kubectl(t, in, "fleet", "render", "-F", fleetFile, "-f", "-", "--name", "identity", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rc struct {
			Cluster string
			Objects []struct{ Data map[string]string }
		}
		if err := json.Unmarshal([]byte(line), &rc); err != nil {
			t.Fatal(err)
		}
		got := rc.Objects[0].Data
		want, _, _ := kubectl(t, "", "get", "namespace", "kube-system", "--context", env.Clusters[i].Context, "-o", "jsonpath={.metadata.uid}")
		if got["uid"] == "" || got["uid"] != want {
			t.Errorf("%s: uid %q, kubectl says %q", rc.Cluster, got["uid"], want)
		}
		if got["region"] != "none" {
			t.Errorf("%s: optional attribute from an absent object: %q", rc.Cluster, got["region"])
		}
		seen[got["uid"]] = true
	}
	if len(seen) != 3 {
		t.Errorf("%d distinct UIDs for 3 clusters", len(seen))
	}
}

// TestFullClusterRunsWorkloads checks the test bed itself: on the full
// cluster a Deployment becomes Available (controller manager, scheduler and
// kwok's fake node at work); on an API-server-only cluster it never does.
func TestFullClusterRunsWorkloads(t *testing.T) {
	manifest := `apiVersion: v1
kind: Namespace
metadata: {name: e2e-full}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: e2e-full}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.example/web:1}]
`
	if _, errOut, code := kubectl(t, manifest, "apply", "--context", "fleet-c1", "-f", "-"); code != 0 {
		t.Fatalf("apply: %s", errOut)
	}
	start := time.Now()
	out, errOut, code := kubectl(t, "", "wait", "--context", "fleet-c1", "-n", "e2e-full", "--for=condition=Available", "deployment/web", "--timeout=120s")
	if code != 0 {
		t.Fatalf("deployment not available on the full cluster: %s%s", out, errOut)
	}
	// The API-server-only cluster gets longer than the full one took, and
	// kubectl wait must time out there (not fail for another reason).
	wait := max(2*time.Since(start), 5*time.Second).Round(time.Second)
	if _, errOut, code := kubectl(t, manifest, "apply", "--context", "fleet-c2", "-f", "-"); code != 0 {
		t.Fatalf("apply: %s", errOut)
	}
	out, errOut, code = kubectl(t, "", "wait", "--context", "fleet-c2", "-n", "e2e-full", "--for=condition=Available", "deployment/web", "--timeout="+wait.String())
	if code == 0 || !strings.Contains(errOut, "timed out waiting for the condition") {
		t.Errorf("an API-server-only cluster: kubectl wait exit %d after %s\n%s%s", code, wait, out, errOut)
	}
	out, _, code = kubectl(t, "", "get", "--context", "fleet-c2", "-n", "e2e-full", "deployment/web", "-o", "jsonpath={.status.availableReplicas}")
	if code != 0 || out != "" {
		t.Errorf("an API-server-only cluster: exit %d, %q available replicas", code, out)
	}
}
