package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderStopsAtFailedCluster runs the command: c2 lacks the attribute
// the manifest needs, c1 before it is printed, c3 after it is not.
func TestRenderStopsAtFailedCluster(t *testing.T) {
	dir := t.TempDir()
	fleetFile := filepath.Join(dir, "fleet.yaml")
	err := os.WriteFile(fleetFile, []byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: stop}
groups: [{name: all}]
clusters:
  - {name: c1, group: all, context: x, attributes: {color: blue}}
  - {name: c2, group: all, context: x}
  - {name: c3, group: all, context: x, attributes: {color: red}}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: paint}\ndata: {color: '${color}'}\n"
	out, errOut, code := run(t, in, "render", "-F", fleetFile, "-f", "-", "--name", "paint")
	want := "# Cluster: c1\napiVersion: v1\ndata:\n  color: blue\nkind: ConfigMap\nmetadata:\n  name: paint\n# Rendering failed: the output stops before cluster c2.\n"
	if code != 1 || out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}
	for _, s := range []string{"rendering failed: the output stops before cluster c2 (1 of 3 clusters printed)", "cluster c2: app paint: ConfigMap paint: undefined variable ${color}"} {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr does not say %q:\n%s", s, errOut)
		}
	}
}
