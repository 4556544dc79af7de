package fleet

import (
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
