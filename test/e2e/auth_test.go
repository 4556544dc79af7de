package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// authKubeconfig writes a kubeconfig with the test bed's clusters whose
// contexts authenticate as given: by an exec credential plugin (a small
// shell script printing an ExecCredential) or with a token.
func authKubeconfig(t *testing.T, dir string, users map[string]*clientcmdapi.AuthInfo) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for ctxName, ctx := range cfg.Contexts {
		if u, ok := users[ctxName]; ok {
			cfg.AuthInfos[ctxName] = u
			ctx.AuthInfo = ctxName
		}
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every kubeconfig kubectl accepts works: an exec credential plugin gives
// the token; a wrong token fails its cluster only, and is never printed.
func TestAuthExecPluginAndWrongToken(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "credential.sh")
	script := `#!/bin/sh
echo "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"` + env.Token + `\"}}"
`
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	const wrong = "zq-wrong-token-5e1b"
	kc := authKubeconfig(t, dir, map[string]*clientcmdapi.AuthInfo{
		"fleet-c1": {Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: plugin, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}},
		"fleet-c2": {Token: wrong},
	})
	fleetYAML := strings.ReplaceAll(twoGroups, "context: fleet-c", "kubeconfig: "+kc+", context: fleet-c") + "apps:\n  - {name: auth, manifests: app.yaml}\n"
	wd := workdir(t, fleetYAML, map[string]string{"app.yaml": namespaced("e2e-auth", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: e2e-auth}\n")})
	for _, args := range [][]string{{"diff"}, {"apply", "--yes"}, {"status"}, {"diff", "--v=9"}} {
		out, errOut, code := fleet(t, wd, args...)
		all := out + errOut
		if strings.Contains(all, wrong) || strings.Contains(all, env.Token) {
			t.Errorf("%s printed a token:\n%s", args[0], withoutLogs(all))
		}
		if code == 0 || !strings.Contains(all, "prod-a") || !strings.Contains(strings.ToLower(all), "unauthorized") {
			t.Errorf("%s: exit %d, want prod-a Unauthorized:\n%s", args[0], code, withoutLogs(all))
		}
		if args[0] == "apply" && (!strings.Contains(out, "[stg]    namespace/e2e-auth created") || !strings.Contains(out, "[prod-b] namespace/e2e-auth created")) {
			t.Errorf("apply did not go through the exec plugin's cluster and the good one:\n%s", out)
		}
	}
	if _, code := get(t, "fleet-c1", "configmap", "a", "-n", "e2e-auth"); code != 0 {
		t.Error("nothing applied through the exec credential plugin")
	}
}

// exec passes kubectl's flags on: -n reaches the namespace, --as the
// impersonated user (who may do nothing here).
func TestExecPassesFlagsThrough(t *testing.T) {
	dir := workdir(t, stgOnly, map[string]string{})
	out, errOut, code := fleet(t, dir, "exec", "-n", "kube-system", "--", "get", "configmaps", "-o", "name")
	if code != 0 || !strings.Contains(out, "[stg] configmap/kube-apiserver-legacy-service-account-token-tracking") {
		t.Errorf("exec -n kube-system: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "exec", "--as", "nobody-e2e", "--", "get", "configmaps", "-n", "default")
	if code == 0 || !strings.Contains(out+errOut, `User "nobody-e2e" cannot list resource "configmaps"`) {
		t.Errorf("exec --as: exit %d\n%s%s", code, out, errOut)
	}
}
