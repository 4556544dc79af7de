package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestUnchangedObjectsAreNotSent: an apply sends nothing for an object
// whose render and live version are what the last apply sent and got
// back, and a real server-side apply for any doubt: an object edited by
// someone else, one deleted behind our back, a changed render, another
// field manager's apply, --force-conflicts. Each real apply is seen both
// on the wire (the proxy's log) and in the cluster (the render's values
// are back).
func TestUnchangedObjectsAreNotSent(t *testing.T) {
	proxy, kc := faultProxy(t, 1, "watched")
	const ns = "e2e-skip"
	cms := func(b string) string {
		var m manifest
		m.add("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}", ns)
		m.add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: %s}\ndata: {k: one}", ns)
		m.add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: %s}\ndata: {k: %s}", ns, b)
		m.add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: %s}\ndata: {k: one}", ns)
		return m.String()
	}
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups: [{name: g}]
clusters:
  - {name: watched, group: g, context: watched, kubeconfig: `+kc+`}
`, map[string]string{"v1/all.yaml": cms("one"), "v2/all.yaml": cms("two")})
	var out string
	sentExit := func(want int, args ...string) []string {
		t.Helper()
		before := len(proxy.Requests())
		var errOut string
		var code int
		out, errOut, code = fleet(t, dir, append([]string{"apply", "--name", "skip"}, args...)...)
		if code != want {
			t.Fatalf("apply %v: exit %d, want %d\n%s%s", args, code, want, out, errOut)
		}
		var names []string
		for _, r := range proxy.Requests()[before:] {
			if r.Method == http.MethodPatch && !strings.Contains(r.Path, "kubectl-fleet") {
				names = append(names, r.Path[strings.LastIndex(r.Path, "/")+1:])
			}
		}
		sort.Strings(names)
		return names
	}
	sent := func(args ...string) []string { t.Helper(); return sentExit(0, args...) }
	value := func(name string) string {
		v, _ := get(t, "fleet-c2", "configmap", name, "-n", ns, "-o", "jsonpath={.data.k}")
		return v
	}
	v1, v2 := filepath.Join(dir, "v1"), filepath.Join(dir, "v2")
	check := func(step string, got []string, want ...string) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: objects sent %v, want %v", step, got, want)
		}
	}
	check("first apply", sent("-f", v1), "a", "b", "c", ns)
	check("nothing changed", sent("-f", v1))
	check("a changed render", sent("-f", v2), "b")
	if value("b") != "two" {
		t.Errorf("b is %q after the changed render", value("b"))
	}
	if _, errOut, code := kubectl(t, "", "patch", "--context", "fleet-c2", "-n", ns, "configmap", "a", "-p", `{"data":{"k":"by-hand"}}`); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := kubectl(t, "", "delete", "--context", "fleet-c2", "-n", ns, "configmap", "c"); code != 0 {
		t.Fatal(errOut)
	}
	// The edit now owns the field: the real apply of a conflicts.
	check("an edit and a deletion behind our back", sentExit(1, "-f", v2), "a", "c")
	if !strings.Contains(out, `configmap/a failed: Apply failed with 1 conflict: conflict with "kubectl-patch"`) || value("c") != "one" {
		t.Errorf("after the real applies: c %q\n%s", value("c"), out)
	}
	check("--force-conflicts", sent("-f", v2, "--force-conflicts"), "a", "b", "c", ns)
	if value("a") != "one" {
		t.Errorf("a is %q after --force-conflicts", value("a"))
	}
	// Another field manager adds a label: the version moved, so apply
	// sends the object again (and leaves the other manager's field).
	other := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: %s, labels: {team: other}}\n", ns)
	if _, errOut, code := kubectl(t, other, "apply", "--context", "fleet-c2", "--server-side", "--field-manager", "someone-else", "-f", "-"); code != 0 {
		t.Fatal(errOut)
	}
	check("another field manager", sent("-f", v2), "b")
	if v, _ := get(t, "fleet-c2", "configmap", "b", "-n", ns, "-o", "jsonpath={.metadata.labels.team}"); v != "other" || value("b") != "two" {
		t.Errorf("b: team %q, k %q", v, value("b"))
	}
	check("nothing changed again", sent("-f", v2))
}
