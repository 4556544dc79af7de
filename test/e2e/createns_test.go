package e2e

import (
	"strings"
	"testing"
)

// TestCreateNamespace: on a fresh cluster, a Helm app with a namespace its
// chart does not render (most charts) and a kustomize app with
// createNamespace: true get their namespaces, as helm install
// --create-namespace would: diff shows each Namespace to create and the
// objects in it (not "namespaces not found"), apply creates them first,
// records them as the apps', and delete removes them.
func TestCreateNamespace(t *testing.T) {
	const helmNS, kzNS = "e2e-createns-helm", "e2e-createns-kz"
	fleetYAML := stgOnly + `apps:
  - name: hello
    namespace: ` + helmNS + `
    helm: {chart: ./chart}
  - name: kz
    namespace: ` + kzNS + `
    createNamespace: true
    kustomize: ./kz
`
	dir := workdir(t, fleetYAML, map[string]string{
		"chart/Chart.yaml":            "apiVersion: v2\nname: hello\nversion: 0.1.0\n",
		"chart/templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hello-cfg}\ndata: {greeting: hi}\n",
		"kz/kustomization.yaml":       "resources: [cm.yaml]\n",
		"kz/cm.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kz-cfg}\n",
	})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	out, errOut, code := fleet(t, dir, "diff")
	if code != 1 || strings.Contains(out+errOut, "not found") {
		t.Fatalf("diff on a fresh cluster: exit %d, want 1 (differences)\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"+++ merged/stg/hello/Namespace/" + helmNS, "+++ merged/stg/hello/ConfigMap/" + helmNS + "/hello-cfg", "+++ merged/stg/kz/Namespace/" + kzNS, "+++ merged/stg/kz/ConfigMap/" + kzNS + "/kz-cfg"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff: no %q\n%s", want, out)
		}
	}
	out, errOut, code = fleet(t, dir, "apply")
	if code != 0 || !strings.Contains(out, "[stg] hello: namespace/"+helmNS+" created") || !strings.Contains(out, "[stg] kz: namespace/"+kzNS+" created") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	for app, ns := range map[string]string{"hello": helmNS, "kz": kzNS} {
		if members, _ := get(t, "fleet-c1", "configmap", "fleet-"+app, "-n", "kubectl-fleet", "-o", "jsonpath={.data.members}"); !strings.Contains(members, "Namespace/"+ns) {
			t.Errorf("app %s does not record its namespace: %q", app, members)
		}
	}
	if out, errOut, code := fleet(t, dir, "delete", "--yes"); code != 0 {
		t.Fatalf("delete: exit %d\n%s%s", code, out, errOut)
	}
	for _, ns := range []string{helmNS, kzNS} {
		if phase, _ := get(t, "fleet-c1", "namespace", ns, "-o", "jsonpath={.status.phase}"); phase == "Active" {
			t.Errorf("namespace %s is still active after delete", ns)
		}
	}
}
