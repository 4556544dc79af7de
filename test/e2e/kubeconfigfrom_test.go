package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const kubeconfigFromFleet = `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e-kcfrom}
groups: [{name: all}]
clusters:
  - {name: kcf-plain, group: all, context: kcfrom-plain, kubeconfigFrom: {env: KCFROM_PLAIN}}
  - {name: kcf-b64, group: all, context: kcfrom-b64, kubeconfigFrom: {env: KCFROM_B64}}
  - {name: kcf-cmd, group: all, context: kcfrom-cmd, kubeconfigFrom: {command: [./kc.sh, --field=kubeconfig]}}
apps: [{name: kcfrom, manifests: kcfrom}]
`

// kubeconfigFor returns the test bed's kubeconfig reduced to the context
// of one test bed cluster, renamed: found in no other kubeconfig, it can
// only be reached through the kubeconfigFrom that holds it.
func kubeconfigFor(t *testing.T, testbedContext, name string) []byte {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[testbedContext]
	if ctx == nil {
		t.Fatalf("no context %s in the test bed", testbedContext)
	}
	cfg.Contexts = map[string]*clientcmdapi.Context{name: ctx}
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testbedToken is the bearer token of the test bed's kubeconfig.
func testbedToken(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		if u.Token != "" {
			return u.Token
		}
	}
	t.Fatal("no token in the test bed's kubeconfig")
	return ""
}

func TestKubeconfigFrom(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the kubeconfigFrom command is a shell script")
	}
	token := testbedToken(t)
	plain := kubeconfigFor(t, "fleet-c1", "kcfrom-plain")
	b64 := base64.StdEncoding.EncodeToString(kubeconfigFor(t, "fleet-c2", "kcfrom-b64"))
	dir := workdir(t, kubeconfigFromFleet, map[string]string{
		"kcfrom/cm.yaml": namespaced("e2e-kcfrom", `apiVersion: v1
kind: ConfigMap
metadata: {name: kcfrom-settings, namespace: e2e-kcfrom}
data: {cluster: '${FLEET_CLUSTER_NAME}'}
`),
		// Counts its runs, keeps what came on its stdin (nothing: not the
		// plugin's) and prints the kubeconfig, like vault read -field.
		"kc.sh":   "#!/bin/sh\necho run >> runs\ncat >> stdin\ncat cmd.kubeconfig\n",
		"fail.sh": "#!/bin/sh\necho \"vault: token: " + token + " rejected\" >&2\necho \"Authorization: Bearer " + token + "\" >&2\necho " + token + " >&2\necho 'permission denied' >&2\nexit 3\n",
	})
	if err := os.WriteFile(filepath.Join(dir, "cmd.kubeconfig"), kubeconfigFor(t, "fleet-c3", "kcfrom-cmd"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"kc.sh", "fail.sh"} {
		if err := os.Chmod(filepath.Join(dir, s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "runs"))
		return strings.Count(string(b), "run")
	}
	// run runs kubectl fleet with the secrets in its environment, a
	// --kubeconfig that does not exist (no cluster may fall back to it) and
	// something on its stdin; it checks that no output holds a credential
	// and that no temporary kubeconfig is left.
	run := func(fleetFile string, args ...string) (string, string, int) {
		t.Helper()
		before := runs()
		flags := []string{"fleet", "-F", fleetFile, "--kubeconfig", filepath.Join(dir, "none")}
		if slices.Contains(args, "--no-kubeconfig") {
			flags = flags[:3]
		}
		cmd := kubectlCmd(t, append(flags, args...)...)
		cmd.Env = append(cmd.Env, "KCFROM_PLAIN="+string(plain), "KCFROM_B64="+b64, "TMPDIR="+tmp)
		out, errOut, code := runCmd(t, cmd, "the plugin's stdin\n")
		all := out + errOut
		if strings.Contains(all, token) || strings.Contains(all, b64[:40]) || strings.Contains(all, "client-key-data") {
			t.Errorf("%v printed a credential:\n%s", args, all)
		}
		if n := runs() - before; n > 1 {
			t.Errorf("%v ran the kubeconfigFrom command %d times, want at most once", args, n)
		}
		if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
			t.Errorf("%v left temporary files: %v", args, entries)
		}
		return out, errOut, code
	}
	fleetFile := filepath.Join(dir, "fleet.yaml")

	// render and a listing need no kubeconfig: the command does not run.
	if out, errOut, code := run(fleetFile, "render"); code != 0 || strings.Count(out, "kind: ConfigMap") != 3 {
		t.Fatalf("render: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := run(fleetFile, "clusters")
	if code != 0 || !strings.Contains(out, "<kubeconfigFrom env:KCFROM_B64>") || !strings.Contains(out, "<kubeconfigFrom command:./kc.sh --field=kubeconfig>") || runs() != 0 {
		t.Fatalf("clusters: exit %d, %d command runs\n%s%s", code, runs(), out, errOut)
	}

	out, errOut, code = run(fleetFile, "apply", "--yes")
	if code != 0 || strings.Count(out, "configmap/kcfrom-settings created") != 3 || runs() != 1 {
		t.Fatalf("apply: exit %d, %d command runs\n%s%s", code, runs(), out, errOut)
	}
	for context, want := range map[string]string{"fleet-c1": "kcf-plain", "fleet-c2": "kcf-b64", "fleet-c3": "kcf-cmd"} {
		if v, _ := get(t, context, "configmap", "kcfrom-settings", "-n", "e2e-kcfrom", "-o", "jsonpath={.data.cluster}"); v != want {
			t.Errorf("%s got cluster=%q, want %q", context, v, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "stdin")); err != nil || len(b) != 0 {
		t.Errorf("the command's stdin was the plugin's: %q %v", b, err)
	}

	for _, args := range [][]string{{"diff"}, {"status"}, {"clusters", "--check"}, {"apply", "--yes", "--v=9"}, {"diff", "--v=9"}, {"exec", "--", "get", "configmap", "kcfrom-settings", "-n", "e2e-kcfrom"}, {"vet"}} {
		out, errOut, code := run(fleetFile, args...)
		if code != 0 {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		if args[0] == "exec" && strings.Count(out, "kcfrom-settings") != 3 {
			t.Errorf("exec did not reach each cluster:\n%s", out)
		}
	}
	if _, errOut, code := run(fleetFile, "vet", "--no-kubeconfig"); code != 0 || runs() != 8 {
		t.Errorf("vet --no-kubeconfig: exit %d, %d command runs, want 8 (none for it)\n%s", code, runs(), errOut)
	}

	// A command that fails, printing the token on its stderr.
	failing := filepath.Join(dir, "failing.yaml")
	if err := os.WriteFile(failing, []byte(strings.Replace(kubeconfigFromFleet, "./kc.sh, --field=kubeconfig", "./fail.sh", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"apply", "--yes"}, {"diff", "--v=9"}, {"clusters", "--check"}} {
		out, errOut, code := run(failing, args...)
		if code == 0 || !strings.Contains(errOut, "cluster kcf-cmd: kubeconfigFrom.command ./fail.sh: exit status 3: vault: token: <redacted> rejected; Authorization: Bearer <redacted>; <redacted>; permission denied") {
			t.Errorf("%v with a failing command: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	// An unset variable, garbage in one.
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte(strings.NewReplacer("env: KCFROM_PLAIN", "env: KCFROM_UNSET", "env: KCFROM_B64", "env: TMPDIR").Replace(kubeconfigFromFleet)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := run(broken, "diff"); code == 0 || !strings.Contains(errOut, "cluster kcf-plain: kubeconfigFrom.env KCFROM_UNSET is not set") || !strings.Contains(errOut, "cluster kcf-b64: kubeconfigFrom.env TMPDIR is neither a kubeconfig") {
		t.Errorf("diff with broken sources: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code = run(fleetFile, "delete", "--yes")
	if code != 0 || strings.Count(out, "namespace/e2e-kcfrom deleted") != 3 {
		t.Errorf("delete: exit %d\n%s%s", code, out, errOut)
	}
}
