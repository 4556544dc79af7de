package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWritePins(t *testing.T) {
	in := `# The fleet.
apiVersion: fleet/v1alpha1
kind: Fleet
metadata:
  name: acme
groups:
  - name: g
clusters:
  # first
  - name: a
    group: g
    context: ctx-a # the context
    labels: {region: eu}
  - {name: b, group: g, context: ctx-b, uid: old}
  - name: c
    group: g
    context: ctx-c
`
	out, err := WritePins([]byte(in), map[string]Pin{"a": {Server: "https://127.0.0.1:1", UID: "uid-a"}, "b": {Server: "https://127.0.0.1:2", UID: "uid-b"}})
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"# The fleet.\n",
		"  # first\n",
		"    context: ctx-a # the context\n    server: https://127.0.0.1:1\n    uid: uid-a\n    labels: {region: eu}\n",
		"{name: b, group: g, context: ctx-b, server: 'https://127.0.0.1:2', uid: uid-b}",
		"  - name: c\n    group: g\n    context: ctx-c\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	f, err := Parse(out, "fleet.yaml", "/")
	if err != nil {
		t.Fatalf("pinned file does not load: %v\n%s", err, got)
	}
	if c := f.Cluster("b"); c.UID != "uid-b" || c.Server != "https://127.0.0.1:2" {
		t.Errorf("b: %+v", c)
	}
	if _, err := WritePins([]byte(in), map[string]Pin{"zz": {}}); err == nil {
		t.Error("no error for a cluster not in the file")
	}
}

// Repin writes the pins into the file, with its mode, only when asked
// and only when they change it.
func TestRepin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	in := "clusters:\n  - {name: a, group: g, context: ctx-a}\n"
	if err := os.WriteFile(path, []byte(in), 0o640); err != nil {
		t.Fatal(err)
	}
	pins := map[string]Pin{"a": {Server: "https://127.0.0.1:1", UID: "uid-a"}}
	before, after, err := Repin(path, pins, false)
	if got, _ := os.ReadFile(path); err != nil || string(before) != in || !strings.Contains(string(after), "uid-a") || string(got) != in {
		t.Fatalf("dry: %v, file %q, after %q", err, got, after)
	}
	if _, after, err = Repin(path, pins, true); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	info, _ := os.Stat(path)
	if string(got) != string(after) || info.Mode().Perm() != 0o640 {
		t.Errorf("written %q (mode %v); want %q, 0640", got, info.Mode().Perm(), after)
	}
	if before, after, err := Repin(path, pins, true); err != nil || string(before) != string(after) {
		t.Errorf("pins already there: %v, %q -> %q", err, before, after)
	}
}
