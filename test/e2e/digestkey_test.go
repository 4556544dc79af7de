package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDigestKeyReplacedRollback: someone deletes the cluster's digest key
// after an apply of a render holding a Secret; the next apply makes
// another key and records a new revision; the first revision, whose
// render digest was made with the old key, still loads (its objects are
// checked against the digest that needs no key), and rollback to it puts
// the old password back.
func TestDigestKeyReplacedRollback(t *testing.T) {
	const (
		ns  = "e2e-digestkey"
		one = "zq-digestkey-one"
		two = "zq-digestkey-two"
	)
	app := func(password string) string {
		return namespaced(ns, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: "+ns+"}\nstringData: {password: "+password+"}\n")
	}
	dir := workdir(t, stgOnly+"apps:\n  - {name: digestkey, manifests: app.yaml}\n", map[string]string{"app.yaml": app(one)})
	var all strings.Builder // every output, searched for Secret values
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := fleet(t, dir, args...)
		all.WriteString(out + errOut)
		if code != want {
			t.Fatalf("%s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out + errOut
	}
	keyOf := func() string {
		t.Helper()
		v, code := get(t, "fleet-c1", "secret", "fleet-digest-key", "-n", "kubectl-fleet", "-o", "jsonpath={.data.key}")
		if code != 0 || v == "" {
			t.Fatalf("no digest key: exit %d", code)
		}
		return v
	}

	if out := run(0, "apply", "--app", "digestkey"); !strings.Contains(out, "revision 1 recorded") {
		t.Fatalf("apply:\n%s", out)
	}
	old := keyOf()
	if _, errOut, code := kubectl(t, "", "delete", "secret", "fleet-digest-key", "-n", "kubectl-fleet", "--context", "fleet-c1"); code != 0 {
		t.Fatalf("deleting the key: %s", errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(app(two)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run(0, "apply", "--app", "digestkey"); !strings.Contains(out, "revision 2 recorded") {
		t.Fatalf("apply after the key was deleted:\n%s", out)
	}
	if keyOf() == old {
		t.Fatal("the apply did not make another key")
	}
	if v := secretValue(t, "fleet-c1", ns); v != two {
		t.Fatalf("password %q after the second apply", v)
	}

	out := run(0, "rollback", "--app", "digestkey", "--to-revision", "1", "--yes")
	if !strings.Contains(out, "revision 3 recorded (rollback to 1)") {
		t.Fatalf("rollback to 1:\n%s", out)
	}
	if v := secretValue(t, "fleet-c1", ns); v != one {
		t.Errorf("password %q after the rollback to 1, want the first one", v)
	}
	// The history shows which key each revision was made with, and
	// nothing of the objects digest (a plain SHA-256, values included).
	history := run(0, "history", "--app", "digestkey", "-o", "json")
	if strings.Count(history, `"keyID":"`) != 3 || strings.Contains(history, "objects-digest") {
		t.Errorf("history:\n%s", history)
	}
	for _, secret := range []string{one, two} {
		if strings.Contains(all.String(), secret) {
			t.Errorf("a password (%s) appears in the output:\n%s", secret, all.String())
		}
	}
}
