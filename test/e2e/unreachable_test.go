package e2e

import (
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// deadKubeconfig is the test bed's kubeconfig with one more context,
// "dead", whose server refuses connections.
func deadKubeconfig(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clusters["dead"] = &clientcmdapi.Cluster{Server: "https://" + closed, InsecureSkipTLSVerify: true}
	cfg.Contexts["dead"] = &clientcmdapi.Context{Cluster: "dead", AuthInfo: "admin"}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	return kc
}

// TestSkipUnreachable: with --skip-unreachable a dead cluster is skipped,
// not failed: it does not stop the rollout (staging's maxFailures is 0),
// the rest is done, and the exit code, 3, tells CI "done except the dead
// cluster". Without the flag nothing changes: the dead cluster fails and
// production is not started.
func TestSkipUnreachable(t *testing.T) {
	kc := deadKubeconfig(t)
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - {name: staging}
  - {name: production}
clusters:
  - {name: stg, group: staging, context: fleet-c1}
  - {name: gone, group: staging, context: dead}
  - {name: prod, group: production, context: fleet-c2}
`, map[string]string{"app/cm.yaml": namespaced("e2e-unreachable", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: e2e-unreachable}\n")})
	app := filepath.Join(dir, "app")
	args := func(more ...string) []string {
		return append([]string{"--kubeconfig", kc, "--request-timeout", "5s"}, more...)
	}
	out, errOut, code := fleet(t, dir, args("apply", "-f", app, "--name", "unreachable")...)
	if code != 1 || !strings.Contains(out, "[gone] failed: cluster unreachable (connection refused): ") || !strings.Contains(out, "--skip-unreachable reports such a cluster as skipped") || !strings.Contains(out, "[prod] not started") {
		t.Fatalf("without --skip-unreachable: exit %d\n%s%s", code, out, errOut)
	}
	// diff says the same, and client-go's own log lines (a raw
	// "memcache.go … Couldn't get current server API group list", without
	// the cluster) stay out unless -v asks.
	out, errOut, code = fleet(t, dir, args("diff", "-f", app, "--name", "unreachable")...)
	if code != 2 || !strings.Contains(out+errOut, "cluster unreachable (connection refused)") || strings.Contains(errOut, ".go:") {
		t.Errorf("diff without --skip-unreachable: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c2", "namespace", "e2e-unreachable") {
		t.Error("production was written after a staging cluster failed")
	}
	out, errOut, code = fleet(t, dir, args("apply", "-f", app, "--name", "unreachable", "--skip-unreachable")...)
	if code != 3 || !strings.Contains(out, "[gone] skipped: unreachable: ") || !strings.Contains(out, "[prod] applied: 2 created") || !strings.Contains(errOut, "1 of 3 clusters skipped: unreachable") {
		t.Fatalf("with --skip-unreachable: exit %d\n%s%s", code, out, errOut)
	}
	if _, code := get(t, "fleet-c2", "configmap", "cm", "-n", "e2e-unreachable"); code != 0 {
		t.Error("production was not applied")
	}
	// The read-only commands too: diff and status finish the others.
	out, errOut, code = fleet(t, dir, args("diff", "-f", app, "--name", "unreachable", "--skip-unreachable")...)
	if code != 3 || !strings.Contains(out, "[gone] skipped: unreachable: ") || !strings.Contains(out, "[prod] 0 to create, 0 to change, 0 to prune, 2 unchanged") {
		t.Errorf("diff --skip-unreachable: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, args("status", "-f", app, "--name", "unreachable", "--skip-unreachable")...)
	if code != 3 || !regexp.MustCompile(`(?m)^gone\s+staging\s+Skipped$`).MatchString(out) || !strings.Contains(errOut, "skipped: gone: unreachable: ") {
		t.Errorf("status --skip-unreachable: exit %d\n%s%s", code, out, errOut)
	}
	// And the writes that are not apply.
	out, errOut, code = fleet(t, dir, args("delete", "-f", app, "--name", "unreachable", "--skip-unreachable", "--yes", "-c", "gone")...)
	if code != 3 || !strings.Contains(out, "[gone] skipped: unreachable") {
		t.Errorf("delete --skip-unreachable: exit %d\n%s%s", code, out, errOut)
	}
}

// TestUnreachableHelmApp: a Helm chart renders with what each cluster
// serves (its version and APIs), so a cluster that does not answer stops
// the render; it is said as unreachable, with the way out, as on every
// other path that first touches a cluster; with --skip-unreachable the
// others are diffed and applied.
func TestUnreachableHelmApp(t *testing.T) {
	kc := deadKubeconfig(t)
	dir := workdir(t, stgOnly+`  - {name: gone, group: staging, context: dead}
apps:
  - name: shop
    namespace: e2e-unreachable-helm
    helm: {chart: ./chart, releaseName: unreach}
`, map[string]string{})
	helmChart(t, dir, false)
	args := func(more ...string) []string {
		return append([]string{"--kubeconfig", kc, "--request-timeout", "5s"}, more...)
	}
	for _, verb := range [][]string{{"diff"}, {"apply", "--yes"}} {
		out, errOut, code := fleet(t, dir, args(verb...)...)
		if code == 0 || !strings.Contains(errOut, "cluster gone: cluster unreachable (connection refused): reading the server's version") || !strings.Contains(errOut, "--skip-unreachable reports such a cluster as skipped") {
			t.Errorf("%s: exit %d\n%s%s", verb, code, out, errOut)
		}
	}
	if !absent(t, "fleet-c1", "namespace", "e2e-unreachable-helm") {
		t.Error("stg was written although the render of the run failed")
	}
	out, errOut, code := fleet(t, dir, args("diff", "--skip-unreachable")...)
	if code != 3 || !strings.Contains(out, "[gone] skipped: unreachable: ") || !strings.Contains(out, "[stg]  3 to create") {
		t.Errorf("diff --skip-unreachable: exit %d\n%s%s", code, out, errOut)
	}
}
