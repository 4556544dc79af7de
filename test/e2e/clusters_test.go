package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

type checked struct {
	Name  string
	Check struct {
		Server    string
		Reachable bool
		Version   string
		UID       string
		Problems  []string
	}
}

func writeFleet(t *testing.T, clusters string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	text := "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: e2e}\ngroups: [{name: all}]\nclusters:\n" + clusters
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func checkJSON(t *testing.T, out string) map[string]checked {
	t.Helper()
	res := map[string]checked{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var c checked
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		res[c.Name] = c
	}
	return res
}

func TestClustersCheck(t *testing.T) {
	out, errOut, code := kubectl(t, "", "fleet", "clusters", "--check", "-F", filepath.Join(repo, "examples", "fleet.yaml"), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	res := checkJSON(t, out)
	uids := map[string]bool{}
	for _, name := range []string{"staging-eu", "prod-eu", "prod-us"} {
		c := res[name].Check
		if !c.Reachable || len(c.Problems) > 0 || !strings.HasPrefix(c.Version, "v1.37.") || c.UID == "" {
			t.Errorf("%s: %+v", name, c)
		}
		uids[c.UID] = true
	}
	if len(uids) != 3 {
		t.Errorf("UIDs not distinct: %v", uids)
	}
	table, _, _ := kubectl(t, "", "fleet", "clusters", "--check", "-F", filepath.Join(repo, "examples", "fleet.yaml"))
	if !strings.Contains(table, "VERSION") || strings.Count(table, " ok\n") != 3 {
		t.Errorf("table:\n%s", table)
	}
}

// TestClustersCheckUnreachable points one cluster at a closed port: it is
// reported unreachable within the request timeout, and the others still
// are reported.
func TestClustersCheckUnreachable(t *testing.T) {
	kc := deadKubeconfig(t)
	f := writeFleet(t, "  - {name: one, group: all, context: fleet-c1}\n  - {name: gone, group: all, context: dead}\n  - {name: two, group: all, context: fleet-c2}\n")
	start := time.Now()
	out, errOut, code := kubectl(t, "", "fleet", "clusters", "--check", "-F", f, "--kubeconfig", kc, "--request-timeout", "5s", "-o", "json")
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("took %s with a 5s request timeout", elapsed)
	}
	if code == 0 || !strings.Contains(errOut, "1 of 3 clusters failed the check") {
		t.Errorf("exit %d, stderr %s", code, errOut)
	}
	res := checkJSON(t, out)
	if g := res["gone"].Check; g.Reachable || len(g.Problems) == 0 || !strings.HasPrefix(g.Problems[0], "unreachable: ") {
		t.Errorf("gone: %+v", g)
	}
	for _, name := range []string{"one", "two"} {
		if c := res[name].Check; !c.Reachable || len(c.Problems) > 0 {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

// TestClustersCheckIdentityMismatch pins cluster "a" to c1's UID, then
// points its context at c2's server: the check names both UIDs.
func TestClustersCheckIdentityMismatch(t *testing.T) {
	uid1, _, _ := kubectl(t, "", "get", "namespace", "kube-system", "--context", "fleet-c1", "-o", "jsonpath={.metadata.uid}")
	uid2, _, _ := kubectl(t, "", "get", "namespace", "kube-system", "--context", "fleet-c2", "-o", "jsonpath={.metadata.uid}")
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts["moved"] = &clientcmdapi.Context{Cluster: cfg.Contexts["fleet-c2"].Cluster, AuthInfo: "admin"}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	f := writeFleet(t, fmt.Sprintf("  - {name: a, group: all, context: moved, uid: %s, server: %q}\n", uid1, env.Clusters[0].Server))
	out, _, code := kubectl(t, "", "fleet", "clusters", "--check", "-F", f, "--kubeconfig", kc)
	if code == 0 {
		t.Fatal("exit 0 for a cluster that is not the pinned one")
	}
	for _, want := range []string{
		fmt.Sprintf("identity mismatch: the fleet file pins uid %s, the cluster has %s", uid1, uid2),
		fmt.Sprintf("server mismatch: the fleet file pins %s, the context points at %s", env.Clusters[0].Server, env.Clusters[1].Server),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestClustersCheckMissingContext(t *testing.T) {
	f := writeFleet(t, "  - {name: a, group: all, context: fleet-c1}\n  - {name: b, group: all, context: no-such-context}\n")
	out, errOut, code := kubectl(t, "", "fleet", "clusters", "--check", "-F", f)
	want := f + `:7: cluster b: context: context "no-such-context" not found in kubeconfig`
	if code != 1 || out != "" || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stdout %q, stderr %q, want %q", code, out, errOut, want)
	}
}

// TestLatencyProxy starts one more cluster behind a 25ms-each-way proxy
// and checks that the plugin works through it and that the delay is real.
func TestLatencyProxy(t *testing.T) {
	slow, err := testenv.Start(t.Context(), testenv.Options{BinDir: binDir, Clusters: 1, ContextPrefix: "slow-c", Dir: t.TempDir(), Latency: 25 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	if slow.Clusters[0].Server == slow.Clusters[0].Direct {
		t.Fatal("kubeconfig does not point at the proxy")
	}
	f := writeFleet(t, "  - {name: far, group: all, context: slow-c1}\n")
	start := time.Now()
	out, errOut, code := kubectl(t, "", "fleet", "clusters", "--check", "-F", f, "--kubeconfig", slow.Kubeconfig, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Discovery, version and the namespace read are at least 3 round trips.
	if elapsed := time.Since(start); elapsed < 150*time.Millisecond {
		t.Errorf("check through a 50ms-RTT proxy took only %s", elapsed)
	}
	if c := checkJSON(t, out)["far"].Check; !c.Reachable || c.Server != slow.Clusters[0].Server {
		t.Errorf("far: %+v", c)
	}
}

// TestPinThenRepoint pins the clusters, then points cluster one's context
// at cluster two's server: --check names the pinned and the actual UID.
func TestPinThenRepoint(t *testing.T) {
	f := writeFleet(t, "  # staging first\n  - name: one\n    group: all\n    context: fleet-c1 # c1\n  - {name: two, group: all, context: fleet-c2}\n")
	before, _ := os.ReadFile(f)
	out, errOut, code := kubectl(t, "", "fleet", "clusters", "--check", "--pin", "--dry-run", "-F", f)
	after, _ := os.ReadFile(f)
	if code != 0 || string(before) != string(after) || !strings.Contains(out, "+    uid: ") || !strings.Contains(errOut, "not written (--dry-run)") {
		t.Fatalf("dry run: exit %d, file changed %v\n%s%s", code, string(before) != string(after), out, errOut)
	}
	if _, _, code := kubectl(t, "", "fleet", "clusters", "--check", "--pin", "-F", f); code != 0 {
		t.Fatalf("--pin: exit %d", code)
	}
	pinned, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	uid1, _ := get(t, "fleet-c1", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}")
	uid2, _ := get(t, "fleet-c2", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}")
	if uid1 == "" || uid2 == "" {
		t.Fatalf("kube-system uids %q, %q", uid1, uid2)
	}
	for _, want := range []string{"  # staging first\n", "context: fleet-c1 # c1\n    server: " + env.Clusters[0].Server + "\n    uid: " + uid1 + "\n", "uid: " + uid2 + "}"} {
		if !strings.Contains(string(pinned), want) {
			t.Errorf("pinned file lacks %q:\n%s", want, pinned)
		}
	}
	if _, _, code := kubectl(t, "", "fleet", "clusters", "--check", "-F", f); code != 0 {
		t.Fatalf("check after pinning: exit %d", code)
	}

	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// Repointed at a cluster the fleet does not name: at another entry's,
	// it would be refused before the check, as one server in two entries.
	cfg.Contexts["fleet-c1"].Cluster = cfg.Contexts["fleet-c3"].Cluster
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	out, _, code = kubectl(t, "", "fleet", "clusters", "--check", "-F", f, "--kubeconfig", kc)
	uid3, _ := get(t, "fleet-c3", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}")
	want := fmt.Sprintf("identity mismatch: the fleet file pins uid %s, the cluster has %s", uid1, uid3)
	if code == 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, want %q in:\n%s", code, want, out)
	}
	// A mismatched cluster is never re-pinned: the check runs, fails for
	// it, and pins only the other, whose pin is already right.
	out, errOut, code = kubectl(t, "", "fleet", "clusters", "--check", "--pin", "-F", f, "--kubeconfig", kc)
	if code != 1 || !strings.Contains(out, want) || !strings.Contains(errOut, "pins already up to date") || !strings.Contains(errOut, "1 of 2 clusters failed the check") {
		t.Errorf("--pin with a mismatch: exit %d\n%s%s", code, out, errOut)
	}
	if again, err := os.ReadFile(f); err != nil || string(again) != string(pinned) {
		t.Errorf("--pin rewrote the pin of a mismatched cluster (%v):\n%s", err, again)
	}
}
