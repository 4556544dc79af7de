package e2e

import (
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/sopstest"
)

// The canaries: values decrypted from SOPS files, of the shapes a secret
// takes, each of which must never be printed.
const (
	canaryLong  = "canary-long-5e1f0c27"
	canaryPIN   = "04821"          // a string of five digits
	canaryToken = "84710293847561" // an integer
	canaryOld   = "canary-env-old-91d3"
	canaryNew   = "canary-env-new-b7a2"
)

// canaryApps writes a fleet whose decrypted values land everywhere but in
// a Secret: a generator's env file into a ConfigMap, Helm values into a
// ConfigMap and an annotation, a jsonnet import into a ConfigMap and a
// trace; and a Secret manifest. env is the generator file's password.
func canaryApps(t *testing.T, k sopstest.Key, ns, env string) string {
	t.Helper()
	enc := func(name, plain string) string { return string(k.Encrypt(t, name, plain, "")) }
	fleetYAML := stgOnly + `apps:
  - {name: kust, kustomize: kust, namespace: ` + ns + `}
  - name: chart
    namespace: ` + ns + `
    dependsOn: [kust]
    helm: {chart: ./chart, values: [chart-values.yaml]}
  - {name: jsonnet, jsonnet: jsonnet/main.jsonnet, namespace: ` + ns + `, dependsOn: [kust]}
`
	return workdir(t, fleetYAML, map[string]string{
		"kust/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n",
		"kust/secret.yaml":    string(k.Encrypt(t, "secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "+canaryLong+"\n", "^(data|stringData)$")),
		"kust/creds.env":      enc("creds.env", "DB_PASSWORD="+env+"\nPIN="+canaryPIN+"\n"),
		"kust/kustomization.yaml": "resources: [namespace.yaml, secret.yaml]\n" +
			"configMapGenerator:\n- {name: creds, envs: [creds.env], options: {disableNameSuffixHash: true}}\n",
		"chart/Chart.yaml": "apiVersion: v2\nname: canary\nversion: 0.1.0\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n" +
			"  annotations: {token: {{ .Values.token | quote }}}\n" +
			"data: {apiKey: {{ .Values.apiKey | quote }}, pin: {{ .Values.pin | quote }}, url: \"https://app:{{ .Values.apiKey }}@api\"}\n",
		"chart-values.yaml":  enc("values.yaml", "apiKey: "+canaryLong+"\npin: \""+canaryPIN+"\"\ntoken: "+canaryToken+"\n"),
		"jsonnet/creds.json": enc("creds.json", `{"token": `+canaryToken+`, "pin": "`+canaryPIN+`"}`),
		"jsonnet/main.jsonnet": "local c = import 'creds.json';\n" +
			"std.trace('token ' + c.token + ' pin ' + c.pin, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'jsonnet-cm' }, data: { dsn: 'postgres://app:' + c.pin + '@db', token: std.toString(c.token) } })\n",
	})
}

// canaryForms are what must not appear: each canary, its base64, and
// the forms a JSON encoder gives.
func canaryForms(values ...string) []string {
	var out []string
	for _, v := range values {
		q, _ := json.Marshal(v)
		out = append(out, v, base64.StdEncoding.EncodeToString([]byte(v)), string(q))
	}
	return out
}

// TestSecretCanaries hunts decrypted values through every command and
// every output: render (YAML, JSON, a stored revision), vet, diff (text,
// JSON, --report, --out), apply (-o json, --diff, --report), status,
// history, rollback and --v=9, a rotated value (whose old form is live),
// a jsonnet error and trace. Every byte printed or written (but --output-dir --decrypt's
// files, which are the decrypted render, and must be 0600) is searched
// for each canary and its encodings.
func TestSecretCanaries(t *testing.T) {
	const ns = "e2e-canary"
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	t.Setenv("SOPS_AGE_KEY", k.Identity)
	dir := canaryApps(t, k, ns, canaryOld)
	files := t.TempDir()
	var all strings.Builder
	run := func(wantCode int, args ...string) string {
		t.Helper()
		out, errOut, code := fleet(t, dir, args...)
		all.WriteString(out + errOut)
		if code != wantCode || strings.Contains(errOut, "unknown flag") {
			t.Errorf("%s: exit %d, want %d:\n%s%s", strings.Join(args, " "), code, wantCode, out, withoutLogs(errOut))
		}
		return out + errOut
	}
	file := func(name string) string { return filepath.Join(files, name) }

	if out := run(0, "render"); !strings.Contains(out, "DB_PASSWORD: '***'") && !strings.Contains(out, "DB_PASSWORD: ***") {
		t.Errorf("render does not mask the ConfigMap's value:\n%s", out)
	}
	run(0, "render", "-o", "json")
	run(0, "render", "--v=9")
	if out := run(0, "vet"); !strings.Contains(out, "holds a value decrypted from SOPS outside a Secret") {
		t.Errorf("vet no longer warns:\n%s", out)
	}
	// Before the first apply, the other apps' namespace does not exist:
	// their diffs follow the apply.
	run(1, "diff", "--app", "kust", "--report", file("diff.md"), "--out", file("plan.json"))
	run(1, "diff", "--app", "kust", "-o", "json", "--v=9")
	run(0, "apply", "--yes", "-o", "json", "--report", file("apply.md"))
	run(0, "status")
	run(0, "history", "--app", "kust")
	run(0, "render", "--revision", "1", "--app", "kust")
	run(0, "render", "--revision", "1", "--app", "chart", "-o", "json")

	// The env file's password and the chart's key rotate: their old
	// values are live, their new ones rendered; neither shows in a diff.
	if err := os.WriteFile(filepath.Join(dir, "kust/creds.env"), k.Encrypt(t, "creds.env", "DB_PASSWORD="+canaryNew+"\nPIN="+canaryPIN+"\n", ""), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chart-values.yaml"), k.Encrypt(t, "values.yaml", "apiKey: "+canaryNew+"\npin: \""+canaryPIN+"\"\ntoken: "+canaryToken+"\n", ""), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run(1, "diff"); !strings.Contains(out, "*** (before)") {
		t.Errorf("the rotated value's diff does not say it changed:\n%s", out)
	}
	run(1, "diff", "-o", "json", "--report", file("rotated.md"))
	run(0, "apply", "--yes", "--diff", "--report", file("rotated-apply.md"))
	// A rollback brings the old value back from the stored revision, in
	// a run that decrypts nothing.
	run(0, "rollback", "--app", "kust", "--yes", "--diff", "-o", "json")
	run(0, "render", "--revision", "3", "--app", "kust")

	// render --output-dir --decrypt writes the decrypted render: every
	// file that holds a value is for its owner only.
	out := filepath.Join(files, "rendered")
	run(0, "render", "--output-dir", out, "--decrypt")
	err := filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		holds := strings.Contains(string(data), canaryPIN) || strings.Contains(string(data), canaryLong) || strings.Contains(string(data), base64.StdEncoding.EncodeToString([]byte(canaryLong)))
		if holds && info.Mode().Perm() != 0o600 {
			t.Errorf("%s holds a decrypted value and is %v, want 0600", path, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A jsonnet error that quotes the values.
	if err := os.WriteFile(filepath.Join(dir, "jsonnet/main.jsonnet"), []byte("local c = import 'creds.json';\nerror 'token ' + c.token + ' pin ' + c.pin + ' rejected'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run(1, "render", "--app", "jsonnet"); !strings.Contains(out, "token *** pin *** rejected") {
		t.Errorf("the jsonnet error is not said, masked:\n%s", out)
	}
	run(1, "vet")
	run(1, "apply", "--yes")

	for _, name := range []string{"diff.md", "plan.json", "apply.md", "rotated.md", "rotated-apply.md"} {
		data, err := os.ReadFile(file(name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		all.WriteString("\n== " + name + "\n" + string(data))
	}
	text := all.String()
	for _, v := range canaryForms(canaryLong, canaryPIN, canaryToken, canaryOld, canaryNew) {
		if i := strings.Index(text, v); i >= 0 {
			t.Errorf("a decrypted value was printed: %q at\n%s", v, text[max(0, i-400):min(len(text), i+100)])
		}
	}
	run(0, "delete", "--yes")
}
