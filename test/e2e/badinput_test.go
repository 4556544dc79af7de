package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every bad input of the corpus in testdata/bad, rendered for the test
// bed's clusters beside a good app: each fails with an error that names
// it, and nothing is applied anywhere, the good app included.
func TestBadInputsApplyNothing(t *testing.T) {
	src := filepath.Join(repo, "testdata", "bad")
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The corpus's own cluster becomes the test bed's three, in two groups.
	fleetYAML := strings.Replace(string(raw), `groups:
  - name: test
clusters:
  - name: bad
    group: test
    context: bad
`, `groups:
  - name: test
  - name: later
clusters:
  - {name: bad, group: test, context: fleet-c1}
  - {name: bad-2, group: later, context: fleet-c2}
  - {name: bad-3, group: later, context: fleet-c3}
`, 1)
	if fleetYAML == string(raw) {
		t.Fatal("testdata/bad/fleet.yaml no longer has the cluster this test replaces")
	}
	fleetYAML += "  - name: good\n    manifests: good.yaml\n"
	good := "apiVersion: v1\nkind: Namespace\nmetadata: {name: e2e-bad-good}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok, namespace: e2e-bad-good}\n"
	for name, content := range map[string]string{"fleet.yaml": fleetYAML, "good.yaml": good} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Every app but two: jsonnet that never ends takes the 5-minute time
	// limit, and the huge output 64 MiB at the default limits; pkg/render's
	// TestBadInputs runs them with small limits.
	args := []string{"--app", "good"}
	var bad []string
	_, apps, _ := strings.Cut(fleetYAML, "\napps:\n")
	for _, line := range strings.Split(apps, "\n") {
		name, ok := strings.CutPrefix(line, "  - name: ")
		if !ok || name == "good" || name == "jsonnet-endless" || name == "jsonnet-huge-output" {
			continue
		}
		bad = append(bad, name)
		args = append(args, "--app", name)
	}
	if len(bad) < 10 {
		t.Fatalf("only %d bad apps found in the corpus: %v", len(bad), bad)
	}
	for _, cmd := range [][]string{{"apply", "--yes", "--prune"}, {"diff"}} {
		out, errOut, code := fleet(t, dir, append(cmd, args...)...)
		if code == 0 || !strings.Contains(errOut, "rendering failed, nothing was done") {
			t.Errorf("%s: exit %d\n%s%s", cmd[0], code, out, errOut)
		}
		for _, app := range bad {
			if !strings.Contains(errOut, "app "+app+": ") {
				t.Errorf("%s: the error does not name app %s", cmd[0], app)
			}
		}
		if strings.Contains(out, "created") || strings.Contains(out, "[bad") {
			t.Errorf("%s talked to a cluster:\n%s", cmd[0], out)
		}
	}
	for _, ctx := range []string{"fleet-c1", "fleet-c2", "fleet-c3"} {
		if !absent(t, ctx, "namespace", "e2e-bad-good") {
			t.Errorf("the good app was applied to %s", ctx)
		}
	}
}
