package e2e

import (
	"encoding/base64"
	"strings"
	"testing"
)

// A marker Secret goes through every command and every error path,
// client-go's most verbose logging included, and its value never appears,
// neither as text nor base64. Each command must also have done its work:
// an absence proves nothing about a command that failed early.
func TestMarkerSecretEverywhere(t *testing.T) {
	const marker = "zq-marker-secret-9d1f"
	b64 := base64.StdEncoding.EncodeToString([]byte(marker))
	secret := func(name, value string, extra string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata: {name: " + name + ", namespace: e2e-marker}\n" + extra + "stringData:\n  password: " + value + "\n---\n"
	}
	app := namespaced("e2e-marker", secret("plain", marker, "")+secret("frozen", marker, "immutable: true\n")+
		"apiVersion: v1\nkind: Secret\nmetadata: {name: encoded, namespace: e2e-marker}\ndata: {token: "+b64+"}\n---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: e2e-marker}\ndata: {a: \"1\"}\n")
	dir := workdir(t, stgOnly+"apps:\n  - {name: marker, manifests: app}\n", map[string]string{"app/all.yaml": app})

	var all strings.Builder
	run := func(wantCode int, wantOut string, args ...string) {
		t.Helper()
		out, errOut, code := fleet(t, dir, args...)
		all.WriteString(out + errOut)
		if code != wantCode || !strings.Contains(out+errOut, wantOut) {
			t.Errorf("%s: exit %d (want %d), want %q in\n%s%s", strings.Join(args, " "), code, wantCode, wantOut, out, withoutLogs(errOut))
		}
	}
	const v9 = "--v=9"
	run(0, "kind: Secret", "render")
	run(0, `"kind":"Secret"`, "render", "-o", "json")
	run(0, "vet: 1 cluster ok", "vet")
	run(1, "5 to create", "diff", v9)
	run(1, `"action":"create"`, "diff", "-o", "json")
	run(0, "secret/plain created: its namespace is created by this apply; not validated by the server", "apply", "--dry-run=server", "--diff", v9)
	run(0, "secret/frozen created", "apply", v9)
	run(0, "0 to create, 0 to change, 0 to prune, 5 unchanged", "diff", v9)
	run(0, "Current", "status", "-o", "wide", "-v=9")
	run(0, `"health":"Current"`, "status", "-o", "json")
	run(0, "vet: 1 cluster ok", "vet", "--server", v9)

	// Error paths: an immutable Secret changed, a hand edit on a Secret, a
	// substitution error inside a Secret.
	changed := strings.ReplaceAll(app, "password: "+marker+"\n", "password: new-"+marker+"\n")
	if err := writeFile(dir, "app/all.yaml", changed); err != nil {
		t.Fatal(err)
	}
	run(2, "the server refuses the change to data", "diff", v9)
	run(1, "secret/frozen failed: the server refuses the change to data", "apply", v9)
	if _, errOut, code := kubectl(t, "", "patch", "--context", "fleet-c1", "-n", "e2e-marker", "secret", "encoded", "-p", `{"data":{"token":"`+base64.StdEncoding.EncodeToString([]byte("by-hand-"+marker))+`"}}`); code != 0 {
		t.Fatal(errOut)
	}
	if err := writeFile(dir, "app/all.yaml", app); err != nil {
		t.Fatal(err)
	}
	run(1, `secret/encoded: conflicts with "kubectl-patch" (.data.token)`, "diff", v9)
	run(1, `conflict with "kubectl-patch"`, "apply", v9)
	run(0, "secret/encoded configured", "apply", "--force-conflicts", v9)
	if err := writeFile(dir, "app/all.yaml", namespaced("e2e-marker", secret("plain", marker+"-${UNDEFINED}", ""))); err != nil {
		t.Fatal(err)
	}
	run(1, "undefined variable ${UNDEFINED} in stringData.password", "apply", v9)
	run(0, "secret/plain deleted (server dry run)", "delete", "--dry-run=server", "--yes", v9)

	if got, _ := get(t, "fleet-c1", "secret", "plain", "-n", "e2e-marker", "-o", "jsonpath={.data.password}"); got != b64 {
		t.Fatalf("the marker Secret is not live as applied (%q): the commands above did not run as they should", got)
	}
	for _, v := range []string{marker, b64, base64.StdEncoding.EncodeToString([]byte("new-" + marker)), base64.StdEncoding.EncodeToString([]byte("by-hand-" + marker))} {
		if i := strings.Index(all.String(), v); i >= 0 {
			t.Errorf("a Secret value was printed: %q at\n%s", v, all.String()[max(0, i-300):min(len(all.String()), i+100)])
		}
	}
	if !strings.Contains(all.String(), "bytes not shown") {
		t.Error("--v=9 logged no request or response body at all: is --v still wired to client-go?")
	}
}

// withoutLogs drops client-go's log lines (and their continuation lines).
func withoutLogs(s string) string {
	var b strings.Builder
	inLog := false
	for _, line := range strings.SplitAfter(s, "\n") {
		switch {
		case len(line) > 5 && strings.ContainsAny(line[:1], "IWE") && line[1] >= '0' && line[1] <= '9':
			inLog = true
		case inLog && (strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " >")):
		default:
			inLog = false
			b.WriteString(line)
		}
	}
	return b.String()
}
