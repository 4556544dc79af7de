package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInit: a newcomer's first minutes. kubectl fleet init writes a
// fleet file from the test bed's kubeconfig and an example app; it
// passes vet, and apply rolls the app out to every cluster, staging
// first.
func TestInit(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "fleet.yaml")
	out, errOut, code := kubectl(t, "", "fleet", "init", "-F", file, "--contexts", "fleet-c1,fleet-c2,fleet-c3", "--group", "staging=fleet-c1", "--group", "production=fleet-c2,fleet-c3", "--app", "e2e-init")
	if code != 0 || !strings.Contains(out, "3 clusters, checked by vet") || !strings.Contains(out, "production: fleet-c2 (fleet-c2), fleet-c3 (fleet-c3)") {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "apps", "e2e-init", "e2e-init.yaml")); err != nil {
		t.Fatalf("no example app: %v", err)
	}
	if out, errOut, code := fleet(t, dir, "vet", "--server"); code != 0 {
		t.Fatalf("vet --server: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	if code != 0 || strings.Index(out, "[fleet-c1]") > strings.Index(out, "[fleet-c2]") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if v, _ := get(t, "fleet-c3", "configmap", "e2e-init", "-n", "e2e-init", "-o", "jsonpath={.data.cluster} {.data.group} {.data.greeting}"); v != "fleet-c3 production hello" {
		t.Errorf("fleet-c3's ConfigMap says %q", v)
	}
	if out, errOut, code := fleet(t, dir, "delete", "--yes"); code != 0 {
		t.Errorf("delete: exit %d\n%s%s", code, out, errOut)
	}
}
