package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// docBlock returns the first fenced block of the page of docs/ after the
// line that starts with after: the documentation under test.
func docBlock(t *testing.T, page, after string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", page))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+after)
	if i < 0 {
		t.Fatalf("docs/%s has no line starting %q", page, after)
	}
	s = s[i:]
	start := strings.Index(s, "\n```")
	if start < 0 {
		t.Fatalf("no code block after %q", after)
	}
	s = s[start+4:]
	s = s[strings.Index(s, "\n")+1:]
	return s[:strings.Index(s, "\n```")+1]
}

// TestPlanCredentialIsDryRunOnly: docs/ci.md's credential for the
// pull-request job (a ServiceAccount, and a ValidatingAdmissionPolicy
// that refuses its requests that are not dry runs), applied as written,
// lets diff plan a change and refuses an apply of it, on a real API
// server: the job that runs a pull request's code cannot write.
func TestPlanCredentialIsDryRunOnly(t *testing.T) {
	setup := "apiVersion: v1\nkind: Namespace\nmetadata: {name: kubectl-fleet}\n---\n" + docBlock(t, "ci.md", "The plan's ServiceAccount")
	if _, errOut, code := kubectl(t, setup, "apply", "--context", "fleet-c1", "-f", "-"); code != 0 {
		t.Fatalf("applying docs/ci.md's ServiceAccount and policy: %s", errOut)
	}
	t.Cleanup(func() {
		kubectl(t, "", "delete", "--context", "fleet-c1", "validatingadmissionpolicybinding/fleet-plan-dry-run-only", "validatingadmissionpolicy/fleet-plan-dry-run-only", "clusterrolebinding/fleet-plan", "clusterrole/fleet-plan", "--ignore-not-found")
	})
	// The policy takes effect within a few seconds of being created.
	const sa = "system:serviceaccount:kubectl-fleet:fleet-plan"
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, errOut, code := kubectl(t, "", "create", "configmap", "e2e-policy-probe", "-n", "default", "--context", "fleet-c1", "--as", sa)
		if code != 0 && strings.Contains(errOut, "fleet-plan may only dry-run") {
			break
		}
		if code == 0 {
			kubectl(t, "", "delete", "configmap", "e2e-policy-probe", "-n", "default", "--context", "fleet-c1")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy never refused a real write: %s", errOut)
		}
		time.Sleep(500 * time.Millisecond)
	}
	token, errOut, code := kubectl(t, "", "create", "token", "fleet-plan", "-n", "kubectl-fleet", "--context", "fleet-c1")
	if code != 0 {
		t.Fatal(errOut)
	}
	dir := t.TempDir()
	kc := authKubeconfig(t, dir, map[string]*clientcmdapi.AuthInfo{"fleet-c1": {Token: strings.TrimSpace(token)}})
	fleetYAML := strings.ReplaceAll(stgOnly, "context: fleet-c1", "kubeconfig: "+kc+", context: fleet-c1") + "apps:\n  - {name: planned, manifests: app.yaml}\n"
	wd := workdir(t, fleetYAML, map[string]string{"app.yaml": namespaced("e2e-planned", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: e2e-planned}\ndata: {k: v}\n")})

	out, errOut, code := fleet(t, wd, "diff", "--out", filepath.Join(wd, "plan.json"))
	if code != 1 || !strings.Contains(out, "2 to create, 0 to change") {
		t.Fatalf("diff with the plan credential: exit %d\n%s%s", code, out, withoutLogs(errOut))
	}
	out, errOut, code = fleet(t, wd, "apply", "--plan", filepath.Join(wd, "plan.json"))
	if code == 0 || !strings.Contains(out+errOut, "fleet-plan may only dry-run") {
		t.Errorf("apply with the plan credential: exit %d\n%s%s", code, out, withoutLogs(errOut))
	}
	if !absent(t, "fleet-c1", "namespace", "e2e-planned") {
		t.Error("the plan credential wrote to the cluster")
	}
}
