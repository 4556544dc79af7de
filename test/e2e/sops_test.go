package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/sopstest"
)

// sopsApps writes three apps whose Secrets come from files encrypted with
// SOPS for k, each holding the value v: a kustomize app (an encrypted
// Secret manifest, Flux's encrypted_regex, and a secretGenerator env
// file), a Helm chart with an encrypted values file, and jsonnet
// importing an encrypted JSON file.
func sopsApps(t *testing.T, k sopstest.Key, ns, v string) string {
	t.Helper()
	enc := func(name, plain, regex string) string { return string(k.Encrypt(t, name, plain, regex)) }
	fleetYAML := stgOnly + `apps:
  - {name: kust, kustomize: kust, namespace: ` + ns + `}
  - name: chart
    namespace: ` + ns + `
    dependsOn: [kust]
    helm: {chart: ./chart, values: [chart-values.yaml]}
  - {name: jsonnet, jsonnet: jsonnet/main.jsonnet, namespace: ` + ns + `, dependsOn: [kust]}
`
	return workdir(t, fleetYAML, map[string]string{
		"kust/namespace.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n",
		"kust/secret.yaml":        enc("secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "+v+"\n", "^(data|stringData)$"),
		"kust/api.env":            enc("api.env", "TOKEN="+v+"\n", ""),
		"kust/kustomization.yaml": "resources: [namespace.yaml, secret.yaml]\nsecretGenerator:\n- {name: api, envs: [api.env]}\n",
		"chart/Chart.yaml":        "apiVersion: v2\nname: creds\nversion: 0.1.0\n",
		"chart/templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: {{ .Release.Name }}-key}\n" +
			"stringData: {apiKey: {{ .Values.apiKey | quote }}}\n",
		"chart-values.yaml":    enc("values.yaml", "apiKey: "+v+"\n", ""),
		"jsonnet/creds.json":   enc("creds.json", `{"token": "`+v+`"}`, ""),
		"jsonnet/main.jsonnet": "{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'jsonnet-token' }, stringData: { token: (import 'creds.json').token } }\n",
	})
}

// TestSOPS: SOPS-encrypted files of every source type are decrypted in
// the plugin and applied, and the value never shows: not in render, diff,
// apply -o json, a report or --v=9. Without the key, a wrong key or a
// file edited by hand, apply fails before any write, naming the file;
// vet and render without the key still work and say so.
func TestSOPS(t *testing.T) {
	const ns, value = "e2e-sops", "sops-plaintext-7c41"
	sopstest.Isolate(t)
	k, other := sopstest.NewKey(t), sopstest.NewKey(t)
	dir := sopsApps(t, k, ns, value)
	var all strings.Builder
	run := func(key string, wantCode int, wantOut string, args ...string) string {
		t.Helper()
		t.Setenv("SOPS_AGE_KEY", key)
		if key == "" {
			os.Unsetenv("SOPS_AGE_KEY")
		}
		out, errOut, code := fleet(t, dir, args...)
		all.WriteString(out + errOut)
		if code != wantCode || !strings.Contains(out+errOut, wantOut) {
			t.Errorf("%s: exit %d (want %d), want %q in\n%s%s", strings.Join(args, " "), code, wantCode, wantOut, out, withoutLogs(errOut))
		}
		return out + errOut
	}
	namespaceAbsent := func(when string) {
		t.Helper()
		if _, _, code := kubectl(t, "", "get", "namespace", ns, "--context", "fleet-c1"); code == 0 {
			t.Fatalf("%s: namespace %s was created: something was written", when, ns)
		}
	}

	// Without the key: nothing is written; vet and render say what they
	// could not decrypt.
	msg := run("", 1, "/kust/secret.yaml is encrypted with SOPS and no key here decrypts it; it is encrypted for age "+k.Recipient, "apply", "--yes")
	if !strings.Contains(msg, "tried: age: no age key here (looked in $SOPS_AGE_KEY") {
		t.Errorf("the error does not say what was tried:\n%s", msg)
	}
	run(other.Identity, 1, "tried: age: the keys here are "+other.Recipient+" (from $SOPS_AGE_KEY), and the file is not encrypted for any of them", "apply", "--yes")
	run("", 2, "no key here decrypts it", "diff")
	namespaceAbsent("apply without the key")
	run("", 0, "/kust/secret.yaml is encrypted with SOPS for age "+k.Recipient+" and no key here decrypts it", "vet")
	run("", 0, "/jsonnet/creds.json is encrypted with SOPS for age "+k.Recipient+" and no key here decrypts it: rendered with its values encrypted", "render")
	run(other.Identity, 0, "/jsonnet/creds.json is encrypted with SOPS for age "+k.Recipient+" and no key here decrypts it (age: the keys here are "+other.Recipient+" (from $SOPS_AGE_KEY), and the file is not encrypted for any of them): rendered with its values encrypted", "render")

	// A file edited by hand is refused, keys or not.
	secretFile := filepath.Join(dir, "kust/secret.yaml")
	good, err := os.ReadFile(secretFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte(strings.Replace(string(good), "name: db", "name: db2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	run(k.Identity, 1, "/kust/secret.yaml: SOPS: the file is not what its MAC says", "apply", "--yes")
	namespaceAbsent("apply of a tampered file")
	if err := os.WriteFile(secretFile, good, 0o644); err != nil {
		t.Fatal(err)
	}

	// With the key: every command does its work, and never shows it.
	report := filepath.Join(t.TempDir(), "report.md")
	run(k.Identity, 0, "kind: Secret", "render")
	run(k.Identity, 0, `"kind":"Secret"`, "render", "-o", "json")
	run(k.Identity, 0, "vet: 1 cluster ok", "vet")
	run(k.Identity, 1, "3 to create", "diff", "--app", "kust", "--v=9")
	run(k.Identity, 0, `"action":"created"`, "apply", "--yes", "-o", "json", "--report", report, "--v=9")
	run(k.Identity, 0, `"action":"unchanged"`, "diff", "-o", "json")
	run(k.Identity, 0, "5 unchanged", "diff", "--v=9")
	run(k.Identity, 0, "Current", "status", "-o", "wide")
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	all.Write(data)
	for _, s := range []string{"db", "api-", "chart-key", "jsonnet-token"} {
		out, _, _ := kubectl(t, "", "get", "secrets", "-n", ns, "--context", "fleet-c1", "-o", "jsonpath={range .items[*]}{.metadata.name}={.data}{\"\\n\"}{end}")
		line := ""
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, s) {
				line = l
			}
		}
		if !strings.Contains(line, base64.StdEncoding.EncodeToString([]byte(value))) {
			t.Errorf("the live Secret %s* does not hold the decrypted value: %q", s, line)
		}
	}
	for _, v := range []string{value, base64.StdEncoding.EncodeToString([]byte(value))} {
		if i := strings.Index(all.String(), v); i >= 0 {
			t.Errorf("a decrypted value was printed: %q at\n%s", v, all.String()[max(0, i-300):min(all.Len(), i+100)])
		}
	}
	run(k.Identity, 0, "deleted", "delete", "--yes")
}

// TestSOPSKeyCommandHangs: a SOPS_AGE_KEY_CMD that never answers (a
// password prompt without a terminal) is stopped at the key time limit,
// with every process it started, and said as a timeout, not as a
// missing key; nothing is written.
func TestSOPSKeyCommandHangs(t *testing.T) {
	const ns = "e2e-sops-keycmd"
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	dir := sopsApps(t, k, ns, "sops-keycmd-3b9e")
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("SOPS_AGE_KEY_CMD", `sh -c 'sleep 300 & echo $! > `+pidFile+`; wait'`)
	t.Setenv("KUBECTL_FLEET_KEY_TIMEOUT", "3s")
	start := time.Now()
	out, errOut, code := fleet(t, dir, "apply", "--yes", "--app", "kust")
	if code != 1 || !strings.Contains(errOut, "timed out after") || !strings.Contains(errOut, "SOPS_AGE_KEY_CMD") || strings.Contains(errOut, "no key here decrypts it") {
		t.Errorf("apply with a key command that hangs: exit %d after %s\n%s%s", code, time.Since(start).Round(time.Second), out, withoutLogs(errOut))
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("apply took %s with a 3s key limit", d)
	}
	if !absent(t, "fleet-c1", "namespace", ns) {
		t.Error("something was written")
	}
	out, errOut, code = fleet(t, dir, "vet")
	if !strings.Contains(out+errOut, "its key did not answer in time") {
		t.Errorf("vet: exit %d\n%s%s", code, out, withoutLogs(errOut))
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the key command never ran: %v", err)
	}
	// The command's own child is gone with it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat("/proc/" + strings.TrimSpace(string(pid))); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key command's child %s still runs after the plugin exited", strings.TrimSpace(string(pid)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
