package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

// TestUnchangedObjectsAreNotSent: an apply sends nothing for an object
// whose render and live version are what the last apply sent and got
// back, and a real server-side apply for any doubt: an object edited by
// someone else, one deleted behind our back, a changed render, another
// field manager's apply, --force-conflicts. Each real apply is seen both
// on the wire (the proxy's log) and in the cluster (the render's values
// are back).
func TestUnchangedObjectsAreNotSent(t *testing.T) {
	bed := newSkipBed(t, "e2e-skip")
	ns, value := bed.ns, bed.value
	var out string
	sentExit := func(want int, args ...string) []string {
		t.Helper()
		var names []string
		out, names = bed.run(want, append([]string{"apply", "--name", "skip"}, args...)...)
		return names
	}
	sent := func(args ...string) []string { t.Helper(); return sentExit(0, args...) }
	v1, v2, check := bed.v1, bed.v2, bed.check
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

// skipBed is one cluster of the test bed behind a proxy that logs
// requests, and a fleet file for it with two versions of an app of a
// Namespace and three ConfigMaps: v2 changes configmap b.
type skipBed struct {
	t      *testing.T
	proxy  *testenv.FaultProxy
	dir    string
	ns     string
	v1, v2 string
}

func newSkipBed(t *testing.T, ns string) *skipBed {
	proxy, kc := faultProxy(t, 1, "watched")
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
	return &skipBed{t: t, proxy: proxy, dir: dir, ns: ns, v1: filepath.Join(dir, "v1"), v2: filepath.Join(dir, "v2")}
}

// run runs kubectl fleet, wants its exit code, and returns its output and
// the names of the app's objects it sent a PATCH (an apply or, for diff,
// a dry run), sorted.
func (b *skipBed) run(want int, args ...string) (string, []string) {
	b.t.Helper()
	before := len(b.proxy.Requests())
	out, errOut, code := fleet(b.t, b.dir, args...)
	if code != want {
		b.t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errOut)
	}
	var names []string
	for _, r := range b.proxy.Requests()[before:] {
		if r.Method == http.MethodPatch && !strings.Contains(r.Path, "kubectl-fleet") {
			names = append(names, r.Path[strings.LastIndex(r.Path, "/")+1:])
		}
	}
	sort.Strings(names)
	return out, slices.Compact(names)
}

func (b *skipBed) check(step string, got []string, want ...string) {
	b.t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		b.t.Errorf("%s: objects sent %v, want %v", step, got, want)
	}
}

// value is configmap name's data.k on the cluster.
func (b *skipBed) value(name string) string {
	v, _ := get(b.t, "fleet-c2", "configmap", name, "-n", b.ns, "-o", "jsonpath={.data.k}")
	return v
}

// TestDiffSkipsUnchanged: diff dry-runs only what apply would send; an
// object apply would skip is unchanged without a request, and every
// doubt apply has is a dry run that shows the difference.
func TestDiffSkipsUnchanged(t *testing.T) {
	b := newSkipBed(t, "e2e-diff-skip")
	diff := func(want int, args ...string) (string, []string) {
		t.Helper()
		return b.run(want, append([]string{"diff", "--name", "diff-skip"}, args...)...)
	}
	b.run(0, "apply", "--name", "diff-skip", "-f", b.v1)
	out, sent := diff(0, "-f", b.v1)
	b.check("nothing changed", sent)
	if !strings.Contains(out, "0 to create, 0 to change, 0 to prune, 4 unchanged") {
		t.Errorf("diff of what was applied:\n%s", out)
	}
	out, sent = diff(1, "-f", b.v2)
	b.check("a changed render", sent, "b")
	if !strings.Contains(out, "-  k: one\n") || !strings.Contains(out, "+  k: two\n") || !strings.Contains(out, "0 to create, 1 to change, 0 to prune, 3 unchanged") {
		t.Errorf("diff of a changed render:\n%s", out)
	}
	// A plan of skipped objects holds their live versions: an edit after
	// it makes it stale.
	planFile := filepath.Join(t.TempDir(), "plan.json")
	_, sent = diff(0, "-f", b.v1, "--out", planFile)
	b.check("diff --out", sent)
	if _, errOut, code := kubectl(t, "", "patch", "--context", "fleet-c2", "-n", b.ns, "configmap", "a", "-p", `{"data":{"k":"by-hand"}}`); code != 0 {
		t.Fatal(errOut)
	}
	if out, _ := b.run(1, "apply", "--name", "diff-skip", "-f", b.v1, "--plan", planFile, "--yes"); !strings.Contains(out, "configmap/a changed since the plan") {
		t.Errorf("apply --plan after an edit:\n%s", out)
	}
	if _, errOut, code := kubectl(t, "", "delete", "--context", "fleet-c2", "-n", b.ns, "configmap", "c"); code != 0 {
		t.Fatal(errOut)
	}
	out, sent = diff(1, "-f", b.v1)
	b.check("an edit and a deletion behind our back", sent, "a", "c")
	for _, want := range []string{`conflicts with "kubectl-patch" (.data.k)`, "+  k: one\n", "1 to create, 1 to change, 0 to prune, 2 unchanged (apply needs --force-conflicts for 1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff after an edit and a deletion: no %q in\n%s", want, out)
		}
	}
	_, sent = diff(1, "-f", b.v1, "--force-conflicts")
	b.check("--force-conflicts", sent, "a", "b", "c", b.ns)
}

// TestStatusSkipsUnchanged: status sends no dry run, and no read of its
// own, for an object the last apply made and nobody changed since (its
// health comes from the list of the app's members); an object edited by
// hand is still drifted, and one deleted behind our back NotFound.
func TestStatusSkipsUnchanged(t *testing.T) {
	b := newSkipBed(t, "e2e-status-skip")
	b.run(0, "apply", "--name", "status-skip", "-f", b.v1)
	// status returns its output and the app's objects it sent a request
	// of their own (a read or a dry run), sorted.
	status := func(want int) (string, []string) {
		t.Helper()
		before := len(b.proxy.Requests())
		out, _ := b.run(want, "status", "--name", "status-skip", "-f", b.v1, "-o", "wide")
		nsPath := "/api/v1/namespaces/" + b.ns
		var names []string
		for _, r := range b.proxy.Requests()[before:] {
			switch {
			case r.Path == nsPath:
				names = append(names, b.ns)
			case strings.HasPrefix(r.Path, nsPath+"/configmaps/"):
				names = append(names, r.Path[strings.LastIndex(r.Path, "/")+1:])
			}
		}
		sort.Strings(names)
		return out, slices.Compact(names)
	}
	out, sent := status(0)
	b.check("nothing changed", sent)
	if !strings.Contains(out, "4 of 4 Current") {
		t.Errorf("status of what was applied:\n%s", out)
	}
	if _, errOut, code := kubectl(t, "", "patch", "--context", "fleet-c2", "-n", b.ns, "configmap", "a", "-p", `{"data":{"k":"by-hand"}}`); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := kubectl(t, "", "delete", "--context", "fleet-c2", "-n", b.ns, "configmap", "c"); code != 0 {
		t.Fatal(errOut)
	}
	out, sent = status(1)
	b.check("an edit and a deletion behind our back", sent, "a", "c")
	for _, want := range []string{"configmap/a Current (drifted: edited live since the last apply)", "configmap/c NotFound", "configmap/b Current\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("status after an edit and a deletion: no %q in\n%s", want, out)
		}
	}
}
