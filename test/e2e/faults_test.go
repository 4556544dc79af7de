package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

// The fault suite: each test breaks something on purpose (a server that
// dies or hangs, a user the server forbids things, Ctrl-C) and checks what
// happened on every cluster.

// faultProxy puts a FaultProxy in front of the test bed's cluster i
// (0-based) and returns it with a kubeconfig whose context name points at
// it.
func faultProxy(t *testing.T, i int, name string) (*testenv.FaultProxy, string) {
	t.Helper()
	p, err := testenv.NewFaultProxy(env.Clusters[i].Direct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kc, map[string]testenv.ContextSpec{name: {Server: p.URL}}); err != nil {
		t.Fatal(err)
	}
	return p, kc
}

// objectsPatched matches the server-side applies of an app's objects (not
// of its inventory in the kubectl-fleet namespace).
func objectsPatched(r *http.Request) bool {
	return r.Method == http.MethodPatch && !strings.Contains(r.URL.Path, "kubectl-fleet")
}

// manifest builds a YAML stream.
type manifest struct{ strings.Builder }

func (m *manifest) add(format string, args ...any) {
	if m.Len() > 0 {
		m.WriteString("---\n")
	}
	fmt.Fprintf(m, format+"\n", args...)
}

// liveSet is what the test bed holds of an app on a cluster: its ApplySet
// parent's annotations and its labelled members.
type liveSet struct {
	id         string
	groupKinds []string
	namespaces []string
	// members are kind/namespace/name of every object that carries the
	// set's part-of label.
	members []string
}

// readSet reads an app's set on a context, with the given resource types
// searched for members.
func readSet(t *testing.T, context, app, kinds string, extra ...string) liveSet {
	t.Helper()
	out, code := get(t, context, append([]string{"configmap", "fleet-" + app, "-n", "kubectl-fleet", "-o", "json"}, extra...)...)
	if code != 0 {
		t.Fatalf("%s: no inventory for app %s", context, app)
	}
	var parent struct {
		Metadata struct {
			Labels      map[string]string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal([]byte(out), &parent); err != nil {
		t.Fatal(err)
	}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	s := liveSet{
		id:         parent.Metadata.Labels["applyset.kubernetes.io/id"],
		groupKinds: split(parent.Metadata.Annotations["applyset.kubernetes.io/contains-group-kinds"]),
		namespaces: split(parent.Metadata.Annotations["applyset.kubernetes.io/additional-namespaces"]),
	}
	out, code = get(t, context, append([]string{kinds, "-A", "-l", "applyset.kubernetes.io/part-of=" + s.id, "-o", "json"}, extra...)...)
	if code != 0 {
		t.Fatalf("%s: listing the members of %s", context, app)
	}
	var list struct {
		Items []struct {
			APIVersion string
			Kind       string
			Metadata   struct{ Namespace, Name string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	for _, it := range list.Items {
		gk := it.Kind
		if group, _, ok := strings.Cut(it.APIVersion, "/"); ok {
			gk += "." + group
		}
		s.members = append(s.members, gk+"/"+it.Metadata.Namespace+"/"+it.Metadata.Name)
	}
	sort.Strings(s.members)
	return s
}

// uncovered lists the members the parent does not account for: a kind
// missing from contains-group-kinds, or a namespace missing from
// additional-namespaces. Such a member is forgotten: no prune finds it.
func (s liveSet) uncovered() []string {
	var out []string
	for _, m := range s.members {
		parts := strings.SplitN(m, "/", 3)
		if !slices.Contains(s.groupKinds, parts[0]) || (parts[1] != "" && !slices.Contains(s.namespaces, parts[1])) {
			out = append(out, m)
		}
	}
	return out
}

func (s liveSet) count(prefix string) int {
	n := 0
	for _, m := range s.members {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// TestFaultServerDiesMidApply cuts one cluster's connections (a proxy
// that then refuses connections, as a dead server does) after 80 of the
// 200 objects of an apply --prune: that cluster fails with a clear error,
// the others go on as the group policy says, the inventory still accounts
// for every member, and a re-run once the server is back converges and
// prunes exactly what is no longer rendered.
func TestFaultServerDiesMidApply(t *testing.T) {
	proxy, kc := faultProxy(t, 1, "dying")
	const nsA, nsB = "e2e-die-a", "e2e-die-b"
	var v1, v2 manifest
	v1.add("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}", nsA)
	v1.add("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: e2e-die-old}\nrules: []")
	// A kind and a namespace v2 does not have: the parent must keep them
	// while their members live.
	v1.add("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: e2e-die-old, namespace: %s}\nrules: []", nsA)
	for i := 0; i < 5; i++ {
		v1.add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: e2e-die-old-%d, namespace: default}", i)
	}
	for i := 0; i < 40; i++ {
		v1.add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%03d, namespace: %s}\ndata: {v: \"1\"}", i, nsA)
		v1.add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old-%03d, namespace: %s}", i, nsA)
	}
	// v2: 200 objects over 2 namespaces and 5 kinds, of which 40
	// ConfigMaps v1 had; v1's other 47 objects are dropped.
	v2.add("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}", nsA)
	v2.add("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}", nsB)
	v2.add("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: e2e-die-new}\nrules: []")
	v2.add("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: e2e-die-new2}\nrules: []")
	for i := 0; i < 100; i++ {
		v2.add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%03d, namespace: %s}\ndata: {v: \"2\"}", i, nsA)
	}
	for i := 0; i < 50; i++ {
		v2.add("apiVersion: v1\nkind: Secret\nmetadata: {name: s-%03d, namespace: %s}\nstringData: {k: v}", i, nsB)
	}
	for i := 0; i < 46; i++ {
		v2.add("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa-%03d, namespace: %s}", i, nsB)
	}
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - {name: first, maxFailures: 1}
  - {name: second}
clusters:
  - {name: dying, group: first, context: dying, kubeconfig: `+kc+`}
  - {name: steady, group: first, context: fleet-c3}
  - {name: later, group: second, context: fleet-c1}
`, map[string]string{"v1/all.yaml": v1.String(), "v2/all.yaml": v2.String()})
	const kinds = "namespaces,clusterroles,roles,configmaps,secrets,serviceaccounts"
	v1Dir, v2Dir := filepath.Join(dir, "v1"), filepath.Join(dir, "v2")

	if out, errOut, code := fleet(t, dir, "apply", "-f", v1Dir, "--name", "die"); code != 0 {
		t.Fatalf("apply v1: exit %d\n%s%s", code, out, errOut)
	}
	// The cut: 80 objects are applied, the 81st request finds the server
	// gone, and so does every later one.
	proxy.After(80, objectsPatched, testenv.Down)
	start := time.Now()
	out, errOut, code := fleet(t, dir, "apply", "-f", v2Dir, "--name", "die", "--prune")
	took := time.Since(start)
	t.Logf("apply with the cut: exit %d after %s", code, took.Round(time.Millisecond))
	if code != 1 || proxy.Mode() != testenv.Down {
		t.Fatalf("exit %d, proxy %s\n%s%s", code, proxy.Mode(), out, errOut)
	}
	summary := out[strings.LastIndex(out, "Summary:"):]
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\[dying\]\s+failed: .*\d+ skipped, \d+ failed: app die: the cluster stopped answering, \d+ of 198 objects not attempted: \S+/\S+: .*(connection refused|EOF|connection reset by peer|broken pipe|closed network connection|connection lost|client connection force closed via ClientConn.Close)$`),
		regexp.MustCompile(`(?m)^\[steady\]\s+applied: 159 created, 40 configured, 1 unchanged, 47 pruned$`),
		regexp.MustCompile(`(?m)^\[later\]\s+applied: 159 created, 40 configured, 1 unchanged, 47 pruned$`),
	} {
		if !want.MatchString(summary) {
			t.Errorf("summary does not match %s:\n%s", want, summary)
		}
	}
	if strings.Contains(out, "[dying] ") && regexp.MustCompile(`(?m)^\[dying\].* pruned$`).MatchString(out) {
		t.Errorf("the dying cluster pruned:\n%s", out)
	}
	if strings.Contains(errOut, "panic") {
		t.Errorf("stderr: %s", errOut)
	}
	t.Logf("the dying cluster's summary: %s", regexp.MustCompile(`(?m)^\[dying\].*$`).FindString(summary))

	// What the dying cluster holds: v1 intact (nothing pruned), part of
	// v2, and every labelled member accounted for by the parent.
	live := readSet(t, "fleet-c2", "die", kinds)
	if u := live.uncovered(); len(u) > 0 {
		t.Errorf("members the inventory forgot (kinds %v, namespaces %v): %v", live.groupKinds, live.namespaces, u)
	}
	if n := live.count("ConfigMap/" + nsA + "/old-"); n != 40 {
		t.Errorf("%d of v1's 40 old ConfigMaps left after the cut", n)
	}
	if n := live.count("ClusterRole.rbac.authorization.k8s.io//e2e-die-old") + live.count("Role.rbac.authorization.k8s.io/"+nsA+"/e2e-die-old") + live.count("ConfigMap/default/e2e-die-old-"); n != 7 {
		t.Errorf("%d of v1's 7 other dropped objects left after the cut", n)
	}
	t.Logf("after the cut: %d labelled members, kinds %v, namespaces %v", len(live.members), live.groupKinds, live.namespaces)

	// The server is back: the same command converges.
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "-f", v2Dir, "--name", "die", "--prune", "-c", "dying")
	if code != 0 {
		t.Fatalf("re-run: exit %d\n%s%s", code, out, errOut)
	}
	pruned := regexp.MustCompile(`(?m)^\[dying\]\s+(\S+) pruned$`).FindAllStringSubmatch(out, -1)
	if len(pruned) != 47 {
		t.Errorf("re-run pruned %d objects, want v1's 47:\n%s", len(pruned), out)
	}
	for _, m := range pruned {
		if !strings.HasPrefix(m[1], "configmap/old-") && !strings.HasPrefix(m[1], "configmap/e2e-die-old-") && !strings.HasSuffix(m[1], ".rbac.authorization.k8s.io/e2e-die-old") {
			t.Errorf("pruned %s, which is rendered", m[1])
		}
	}
	live = readSet(t, "fleet-c2", "die", kinds)
	if len(live.members) != 200 || len(live.uncovered()) > 0 {
		t.Errorf("after the re-run: %d members (want 200), uncovered %v", len(live.members), live.uncovered())
	}
	if got := strings.Join(live.groupKinds, ","); got != "ClusterRole.rbac.authorization.k8s.io,ConfigMap,Namespace,Secret,ServiceAccount" {
		t.Errorf("contains-group-kinds %q", got)
	}
	if got := strings.Join(live.namespaces, ","); got != nsA+","+nsB {
		t.Errorf("additional-namespaces %q", got)
	}
	// And a diff finds nothing left to do.
	if out, errOut, code := fleet(t, dir, "diff", "-f", v2Dir, "--name", "die", "-c", "dying"); code != 0 {
		t.Errorf("diff after the re-run: exit %d\n%s%s", code, out, errOut)
	}
}

// TestFaultServerKilledMidApply kills the API server process (SIGKILL) of
// a cluster of its own in the middle of an apply --prune of 200 objects
// (50 ms away, 4 requests at once, killed once 40 objects are created),
// then starts it again on the same port: the cluster fails with the
// connection error and nothing more is sent to it, the other cluster
// applies, the inventory accounts for every member, and a re-run
// converges with exactly the dropped objects pruned.
func TestFaultServerKilledMidApply(t *testing.T) {
	ctx := context.Background()
	c, err := env.AddCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kill(c) })
	far, err := testenv.NewProxy(strings.TrimPrefix(c.Direct, "https://"), 25*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(far.Close)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kc, map[string]testenv.ContextSpec{"killed": {Server: "https://" + far.Addr}, "killed-direct": {Server: c.Direct}}); err != nil {
		t.Fatal(err)
	}
	const ns = "e2e-kill"
	var v1 manifest
	v1.add("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}", ns)
	v1.add("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: e2e-kill-old, namespace: %s}\nrules: []", ns)
	for i := 0; i < 10; i++ {
		v1.add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: e2e-kill-old-%d, namespace: default}", i)
	}
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - {name: g, maxFailures: 1}
clusters:
  - {name: killed, group: g, context: killed, kubeconfig: `+kc+`}
  - {name: steady, group: g, context: fleet-c3}
`, map[string]string{"v1/all.yaml": v1.String(), "v2/all.yaml": manyConfigMaps(ns, "cm", 199)})
	if out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "v1"), "--name", "kill"); code != 0 {
		t.Fatalf("apply v1: exit %d\n%s%s", code, out, errOut)
	}
	r := startFleet(t, dir, nil, "apply", "-f", filepath.Join(dir, "v2"), "--name", "kill", "--prune", "--concurrency", "4")
	created := regexp.MustCompile(`(?m)^\[killed\] configmap/cm-\d+ created$`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, errOut := r.output()
		if len(created.FindAllString(out, -1)) >= 40 {
			break
		}
		if time.Now().After(deadline) || r.exited(0) {
			t.Fatalf("40 objects not created in time\n%s%s", out, errOut)
		}
		time.Sleep(5 * time.Millisecond)
	}
	killed := time.Now()
	if err := env.Kill(c); err != nil {
		t.Fatal(err)
	}
	if !r.exited(30 * time.Second) {
		t.Fatal("still running 30s after the server was killed")
	}
	out, errOut := r.output()
	t.Logf("exit %d %s after the kill; %d objects created", r.code, time.Since(killed).Round(time.Millisecond), len(created.FindAllString(out, -1)))
	summary := out[strings.LastIndex(out, "Summary:"):]
	if r.code != 1 || !regexp.MustCompile(`(?m)^\[killed\] failed: \d+ created, .*\d+ skipped.*: app kill: the cluster stopped answering, \d+ of 199 objects not attempted: configmap/cm-\d+: `).MatchString(summary) ||
		!regexp.MustCompile(`(?m)^\[steady\] applied: 199 created, 1 unchanged, 11 pruned$`).MatchString(summary) || regexp.MustCompile(`(?m)^\[killed\].* pruned$`).MatchString(out) {
		t.Errorf("exit %d\n%s%s", r.code, out, errOut)
	}
	t.Logf("%s", regexp.MustCompile(`(?m)^\[killed\] failed.*$`).FindString(summary))

	if err := env.Restart(ctx, c); err != nil {
		t.Fatal(err)
	}
	const kinds = "namespaces,roles,configmaps"
	live := readSet(t, "killed-direct", "kill", kinds, "--kubeconfig", kc)
	if u := live.uncovered(); len(u) > 0 || live.count("ConfigMap/default/e2e-kill-old-")+live.count("Role.rbac.authorization.k8s.io/"+ns+"/e2e-kill-old") != 11 {
		t.Errorf("after the kill: uncovered %v, members %v", u, live.members)
	}
	out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "v2"), "--name", "kill", "--prune", "-c", "killed")
	pruned := regexp.MustCompile(`(?m)^\[killed\] (\S+) pruned$`).FindAllStringSubmatch(out, -1)
	if code != 0 || len(pruned) != 11 {
		t.Fatalf("re-run: exit %d, %d pruned\n%s%s", code, len(pruned), out, errOut)
	}
	for _, m := range pruned {
		if !strings.Contains(m[1], "/e2e-kill-old") {
			t.Errorf("pruned %s, which is rendered", m[1])
		}
	}
	if live := readSet(t, "killed-direct", "kill", kinds, "--kubeconfig", kc); len(live.members) != 200 || len(live.uncovered()) > 0 {
		t.Errorf("after the re-run: %d members, uncovered %v", len(live.members), live.uncovered())
	}
}

// TestFaultHungServerBounded: a cluster accepts connections and never
// answers. Every command ends within --request-timeout (a few requests
// in a row), reports that cluster as failed, and finishes the others.
func TestFaultHungServerBounded(t *testing.T) {
	proxy, kc := faultProxy(t, 1, "hung")
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - {name: g, maxFailures: 1}
clusters:
  - {name: hung, group: g, context: hung, kubeconfig: `+kc+`}
  - {name: fine, group: g, context: fleet-c3}
`, map[string]string{"hang/cm.yaml": namespaced("e2e-hang", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: h, namespace: e2e-hang}\n")})
	app := filepath.Join(dir, "hang")
	proxy.Hang()
	const bound = 2 * time.Second
	for _, tc := range []struct {
		args []string
		code int
		fine *regexp.Regexp
	}{
		{[]string{"clusters", "--check"}, 1, regexp.MustCompile(`(?m)^fine .* ok$`)},
		{[]string{"apply", "-f", app, "--yes", "--wait", "--timeout", "20s"}, 1, regexp.MustCompile(`(?m)^\[fine\]\s+applied: `)},
		{[]string{"diff", "-f", app}, 2, regexp.MustCompile(`(?m)^\[fine\]\s+\d+ to create, `)},
		{[]string{"status", "-f", app}, 1, regexp.MustCompile(`(?m)^fine\s+g\s+2 of 2 Current \(r\d+ verified\)$`)},
		{[]string{"delete", "-f", app, "--yes"}, 1, regexp.MustCompile(`(?m)^\[fine\]\s+(applied|done)`)},
	} {
		start := time.Now()
		out, errOut, code := fleet(t, dir, append(tc.args, "--request-timeout", bound.String())...)
		took := time.Since(start)
		t.Logf("%s: exit %d after %s", tc.args[0], code, took.Round(time.Millisecond))
		all := out + errOut
		if code != tc.code || !tc.fine.MatchString(all) || !regexp.MustCompile(`(?i)timeout|deadline exceeded`).MatchString(all) {
			t.Errorf("%s: exit %d (want %d)\n%s", strings.Join(tc.args, " "), code, tc.code, all)
		}
		// A handful of requests in a row, each bounded.
		if took > 8*bound {
			t.Errorf("%s took %s with --request-timeout %s", tc.args[0], took, bound)
		}
	}
	if n := len(proxy.Requests()); n == 0 {
		t.Error("no request reached the hung cluster")
	}

	// The server hangs in the middle of an apply of 200 objects: the
	// requests in flight time out together, and no further object is
	// sent to a cluster that stopped answering.
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(big, "all.yaml"), []byte(manyConfigMaps("e2e-hang-big", "cm", 199)), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy.After(50, objectsPatched, testenv.Hung)
	start := time.Now()
	out, errOut, code := fleet(t, dir, "apply", "-f", big, "--yes", "--request-timeout", bound.String())
	took := time.Since(start)
	t.Logf("apply of 200 objects, hung after 50: exit %d after %s", code, took.Round(time.Millisecond))
	if code != 1 || !regexp.MustCompile(`(?m)^\[hung\]\s+failed: .* skipped, \d+ failed: app big: the cluster stopped answering, \d+ of 199 objects not attempted: configmap/cm-\d+: Patch .*(Timeout|deadline)`).MatchString(out) || !strings.Contains(out, "[fine] applied: 200 created") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	if took > 3*bound {
		t.Errorf("took %s with --request-timeout %s", took, bound)
	}

	// The server hangs while apply --wait polls the object's health: the
	// wait ends at --timeout, however long --request-timeout is.
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	wait := filepath.Join(dir, "wait")
	if err := os.MkdirAll(wait, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wait, "cm.yaml"), []byte(namespaced("e2e-hang-wait", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: w, namespace: e2e-hang-wait}\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy.After(0, func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/configmaps/w")
	}, testenv.Hung)
	start = time.Now()
	out, errOut, code = fleet(t, dir, "apply", "-f", wait, "--yes", "--wait", "--timeout", "4s", "--request-timeout", "1m")
	took = time.Since(start)
	t.Logf("apply --wait --timeout 4s, hung while waiting: exit %d after %s", code, took.Round(time.Millisecond))
	if code != 1 || !regexp.MustCompile(`(?m)^\[hung\]\s+failed: .*: app wait: \d objects? not healthy after 4s \(waited for: --wait\)$`).MatchString(out) || !strings.Contains(out, "[fine] applied: 2 created, 2 healthy") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	// 4s, then at most 3s to record the failed verdict and 3s to
	// release the lock, both bounded.
	if took > 14*time.Second {
		t.Errorf("took %s with --timeout 4s", took)
	}
}

// run is a kubectl fleet process running in the background.
type run struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	err  bytes.Buffer
	done chan struct{}
	code int
}

// startFleet starts kubectl fleet in the background; stdin, when not nil,
// is its standard input.
func startFleet(t *testing.T, dir string, stdin *os.File, args ...string) *run {
	t.Helper()
	cmd := kubectlCmd(t, append([]string{"fleet", "-F", filepath.Join(dir, "fleet.yaml")}, args...)...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	return startCmd(t, cmd)
}

// startCmd starts cmd in the background.
func startCmd(t *testing.T, cmd *exec.Cmd) *run {
	t.Helper()
	r := &run{cmd: cmd, done: make(chan struct{})}
	r.cmd.Stdout, r.cmd.Stderr = lockedWriter{r, &r.out}, lockedWriter{r, &r.err}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = r.cmd.Wait()
		r.code = r.cmd.ProcessState.ExitCode()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

type lockedWriter struct {
	r *run
	w io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	return l.w.Write(p)
}

func (r *run) output() (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String(), r.err.String()
}

// waitFor waits until stdout or stderr contains s.
func (r *run) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		out, errOut := r.output()
		if strings.Contains(out+errOut, s) {
			return
		}
		select {
		case <-r.done:
			t.Fatalf("exited (%d) before printing %q\n%s%s", r.code, s, out, errOut)
		case <-time.After(20 * time.Millisecond):
		}
	}
	out, errOut := r.output()
	t.Fatalf("no %q after %s\n%s%s", s, timeout, out, errOut)
}

// exited waits up to timeout for the process to end.
func (r *run) exited(timeout time.Duration) bool {
	select {
	case <-r.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// interruptFleet is a fleet of one cluster behind a proxy, then one more
// group.
func interruptFleet(t *testing.T, kc string, files map[string]string) string {
	return workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - {name: first}
  - {name: second}
clusters:
  - {name: slow, group: first, context: slow, kubeconfig: `+kc+`}
  - {name: later, group: second, context: fleet-c3}
`, files)
}

func manyConfigMaps(ns, prefix string, n int) string {
	var m manifest
	m.add("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}", ns)
	for i := 0; i < n; i++ {
		m.add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s-%03d, namespace: %s}", prefix, i, ns)
	}
	return m.String()
}

// TestFaultInterruptStopsRequests: Ctrl-C while requests hang. The
// requests in flight end at --request-timeout; not one request starts
// after the Ctrl-C (no further object, no prune, no inventory write), the
// summary says what happened where, and the exit code is 130.
func TestFaultInterruptStopsRequests(t *testing.T) {
	proxy, kc := faultProxy(t, 1, "slow")
	const ns = "e2e-int-stop"
	dir := interruptFleet(t, kc, map[string]string{
		"v1/all.yaml": manyConfigMaps(ns, "old", 3),
		"v2/all.yaml": manyConfigMaps(ns, "new", 200),
	})
	if out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "v1"), "--name", "intstop", "-c", "slow"); code != 0 {
		t.Fatalf("apply v1: exit %d\n%s%s", code, out, errOut)
	}
	proxy.After(20, objectsPatched, testenv.Hung) // 20 new ConfigMaps; the unchanged Namespace is not sent
	r := startFleet(t, dir, nil, "apply", "-f", filepath.Join(dir, "v2"), "--name", "intstop", "--prune", "--concurrency", "4", "--request-timeout", "3s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := proxy.WaitHeld(ctx, 4); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // nothing else is in transit: every slot is held
	interrupted := time.Now()
	_ = r.cmd.Process.Signal(os.Interrupt)
	if !r.exited(15 * time.Second) {
		out, errOut := r.output()
		t.Fatalf("still running 15s after Ctrl-C\n%s%s", out, errOut)
	}
	took := time.Since(interrupted)
	out, errOut := r.output()
	t.Logf("exit %d %s after Ctrl-C", r.code, took.Round(time.Millisecond))
	if r.code != 130 {
		t.Errorf("exit %d\n%s%s", r.code, out, errOut)
	}
	var after []string
	for _, req := range proxy.Requests() {
		if req.At.After(interrupted) {
			after = append(after, req.String())
		}
	}
	if len(after) > 0 {
		t.Errorf("requests started after Ctrl-C:\n%s", strings.Join(after, "\n"))
	}
	for _, want := range []string{"Summary:", "[slow]  failed: 20 created, 1 unchanged, 4 failed: interrupted: app intstop: context canceled", "[later] not started"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pruned") {
		t.Errorf("pruned after Ctrl-C:\n%s", out)
	}
	if names, _ := get(t, "fleet-c2", "configmaps", "-n", ns, "-o", "name"); strings.Count(names, "configmap/old-") != 3 {
		t.Errorf("old objects after Ctrl-C: %s", names)
	}
	if !absent(t, "fleet-c3", "namespace", ns) {
		t.Error("the second group was written to after Ctrl-C")
	}
}

// TestFaultInterruptDuringPrune: Ctrl-C while apply --prune deletes: the
// delete in flight ends at --request-timeout, no further one starts, the
// inventory still covers every member left, and a re-run finishes the job.
func TestFaultInterruptDuringPrune(t *testing.T) {
	proxy, kc := faultProxy(t, 1, "slow")
	const ns = "e2e-int-prune"
	dir := interruptFleet(t, kc, map[string]string{
		"v1/all.yaml": manyConfigMaps(ns, "old", 40),
		"v2/all.yaml": manyConfigMaps(ns, "new", 1),
	})
	if out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "v1"), "--name", "intprune", "-c", "slow"); code != 0 {
		t.Fatalf("apply v1: exit %d\n%s%s", code, out, errOut)
	}
	proxy.After(5, func(r *http.Request) bool { return r.Method == http.MethodDelete }, testenv.Hung)
	r := startFleet(t, dir, nil, "apply", "-f", filepath.Join(dir, "v2"), "--name", "intprune", "--prune", "--request-timeout", "3s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := proxy.WaitHeld(ctx, 1); err != nil {
		t.Fatal(err)
	}
	interrupted := time.Now()
	_ = r.cmd.Process.Signal(os.Interrupt)
	if !r.exited(15 * time.Second) {
		out, errOut := r.output()
		t.Fatalf("still running 15s after Ctrl-C\n%s%s", out, errOut)
	}
	out, errOut := r.output()
	t.Logf("exit %d %s after Ctrl-C during prune", r.code, time.Since(interrupted).Round(time.Millisecond))
	if r.code != 130 {
		t.Errorf("exit %d\n%s%s", r.code, out, errOut)
	}
	var after []string
	for _, req := range proxy.Requests() {
		if req.At.After(interrupted) {
			after = append(after, req.String())
		}
	}
	if len(after) > 0 {
		t.Errorf("requests started after Ctrl-C:\n%s", strings.Join(after, "\n"))
	}
	if !regexp.MustCompile(`(?m)^\[slow\]  failed: 1 created, 1 unchanged, 5 pruned, 1 failed: interrupted: app intprune: context canceled$`).MatchString(out) || !strings.Contains(out, "[later] not started") {
		t.Errorf("summary:\n%s", out)
	}
	live := readSet(t, "fleet-c2", "intprune", "namespaces,configmaps")
	if n := live.count("ConfigMap/" + ns + "/old-"); n < 34 || len(live.uncovered()) > 0 {
		t.Errorf("%d old members left (want 34 or 35), uncovered %v", n, live.uncovered())
	}
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "v2"), "--name", "intprune", "--prune", "-c", "slow")
	if code != 0 {
		t.Fatalf("re-run: exit %d\n%s%s", code, out, errOut)
	}
	if live := readSet(t, "fleet-c2", "intprune", "namespaces,configmaps"); strings.Join(live.members, " ") != "ConfigMap/"+ns+"/new-000 Namespace//"+ns {
		t.Errorf("after the re-run: %v", live.members)
	}
}

// TestFaultInterruptTwice: without --request-timeout, requests in flight
// to a hung server are waited for after Ctrl-C (up to the default request
// timeout); a second Ctrl-C exits at once.
func TestFaultInterruptTwice(t *testing.T) {
	proxy, kc := faultProxy(t, 1, "slow")
	dir := interruptFleet(t, kc, map[string]string{"app/all.yaml": manyConfigMaps("e2e-int-twice", "cm", 50)})
	proxy.After(5, objectsPatched, testenv.Hung)
	r := startFleet(t, dir, nil, "apply", "-f", filepath.Join(dir, "app"), "--concurrency", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := proxy.WaitHeld(ctx, 4); err != nil {
		t.Fatal(err)
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	if r.exited(time.Second) {
		out, errOut := r.output()
		t.Fatalf("exited (%d) before the requests in flight ended\n%s%s", r.code, out, errOut)
	}
	second := time.Now()
	_ = r.cmd.Process.Signal(os.Interrupt)
	if !r.exited(2 * time.Second) {
		out, errOut := r.output()
		t.Fatalf("still running 2s after a second Ctrl-C\n%s%s", out, errOut)
	}
	out, errOut := r.output()
	t.Logf("exit %d %s after the second Ctrl-C; stderr: %s", r.code, time.Since(second).Round(time.Millisecond), strings.TrimSpace(errOut))
	if r.code != 130 || !strings.Contains(errOut, "interrupted again") {
		t.Errorf("exit %d\n%s%s", r.code, out, errOut)
	}
}

// TestFaultInterruptPrompt: Ctrl-C at the confirmation of a protected
// group (stdin a terminal) ends the command at once: the protected group
// is not started, the summary says so, exit 130.
func TestFaultInterruptPrompt(t *testing.T) {
	r, _ := prompted(t, "e2e-int-prompt")
	asked := time.Now()
	_ = r.cmd.Process.Signal(os.Interrupt)
	if !r.exited(3 * time.Second) {
		out, errOut := r.output()
		t.Fatalf("still asking 3s after Ctrl-C\n%s%s", out, errOut)
	}
	out, errOut := r.output()
	t.Logf("exit %d %s after Ctrl-C at the prompt", r.code, time.Since(asked).Round(time.Millisecond))
	if r.code != 130 {
		t.Errorf("exit %d\n%s%s", r.code, out, errOut)
	}
	for _, want := range []string{"[stg]    applied: 1 created", "[prod-a] not started", "[prod-b] not started"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, ctx := range []string{"fleet-c2", "fleet-c3"} {
		if !absent(t, ctx, "namespace", "e2e-int-prompt") {
			t.Errorf("%s written to after Ctrl-C at the prompt", ctx)
		}
	}
	if _, code := get(t, "fleet-c1", "namespace", "e2e-int-prompt"); code != 0 {
		t.Error("staging was not applied")
	}
}

// rbacSetup creates, as admin on fleet-c3, the namespaces and roles of
// TestFaultRBAC: user fleet-e2e-limited may write in e2e-rbac-rw and only
// read in e2e-rbac-ro; fleet-e2e-nolist may read and write objects in
// e2e-rbac-rw but list nothing there. Both may keep inventories.
const rbacSetup = `apiVersion: v1
kind: Namespace
metadata: {name: e2e-rbac-rw}
---
apiVersion: v1
kind: Namespace
metadata: {name: e2e-rbac-ro}
---
apiVersion: v1
kind: Namespace
metadata: {name: kubectl-fleet}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-rbac-inventory-ns}
rules:
  - {apiGroups: [""], resources: [namespaces], resourceNames: [kubectl-fleet], verbs: [get, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-rbac-inventory-ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-rbac-inventory-ns}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: fleet-e2e-limited}
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: fleet-e2e-nolist}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-rbac-write}
rules:
  - {apiGroups: [""], resources: [configmaps], verbs: [get, list, create, patch, update, delete]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-rbac-write-nolist}
rules:
  - {apiGroups: [""], resources: [configmaps], verbs: [get, create, patch, update, delete]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-rbac-read}
rules:
  - {apiGroups: [""], resources: [configmaps], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: inventory, namespace: kubectl-fleet}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-rbac-write}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: fleet-e2e-limited}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: inventory-nolist, namespace: kubectl-fleet}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-rbac-write-nolist}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: fleet-e2e-nolist}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: limited, namespace: e2e-rbac-rw}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-rbac-write}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: fleet-e2e-limited}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: limited, namespace: e2e-rbac-ro}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-rbac-read}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: fleet-e2e-limited}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: nolist, namespace: e2e-rbac-rw}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-rbac-write-nolist}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: fleet-e2e-nolist}
`

// TestFaultRBAC applies as users (--as, through the admin's
// impersonation) whom RBAC limits: Forbidden objects fail one by one with
// the server's reason and exit 1, the allowed ones are applied; a user who
// may write but not list still gets a working apply.
func TestFaultRBAC(t *testing.T) {
	if _, errOut, code := kubectl(t, rbacSetup, "apply", "--context", "fleet-c3", "-f", "-"); code != 0 {
		t.Fatal(errOut)
	}
	cms := func(ns string, names ...string) string {
		var m manifest
		for _, n := range names {
			m.add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {k: v}", n, ns)
		}
		return m.String()
	}
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups: [{name: g}]
clusters: [{name: rbac, group: g, context: fleet-c3}]
`, map[string]string{
		"limited/all.yaml": cms("e2e-rbac-rw", "w1", "w2", "w3") + "---\n" + cms("e2e-rbac-ro", "r1", "r2", "r3"),
		"nolist/all.yaml":  cms("e2e-rbac-rw", "n1", "n2", "n3"),
	})

	// Not allowed to write in e2e-rbac-ro.
	out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "limited"), "--as", "fleet-e2e-limited")
	if code != 1 || strings.Contains(errOut, "panic") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, n := range []string{"w1", "w2", "w3"} {
		if !strings.Contains(out, "[rbac] configmap/"+n+" created\n") {
			t.Errorf("configmap %s not created:\n%s", n, out)
		}
	}
	for _, n := range []string{"r1", "r2", "r3"} {
		want := fmt.Sprintf(`[rbac] configmap/%s failed: configmaps %q is forbidden: User "fleet-e2e-limited" cannot patch resource "configmaps" in API group "" in the namespace "e2e-rbac-ro"`, n, n)
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^\[rbac\] failed: 3 created, 3 failed: app limited: 3 of 6 objects failed$`).MatchString(out) {
		t.Errorf("summary:\n%s", out)
	}
	if !absent(t, "fleet-c3", "configmap", "r1", "-n", "e2e-rbac-ro") {
		t.Error("r1 exists: --as was not honoured")
	}

	// Allowed to write, not to list: reads instead.
	app := filepath.Join(dir, "nolist")
	out, errOut, code = fleet(t, dir, "apply", "-f", app, "--as", "fleet-e2e-nolist")
	objLines := func(out, action string) int {
		return len(regexp.MustCompile(`(?m)^\[rbac\] configmap/n\d `+action+`$`).FindAllString(out, -1))
	}
	if code != 0 || objLines(out, "created") != 3 {
		t.Fatalf("apply without list: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "apply", "-f", app, "--as", "fleet-e2e-nolist")
	if code != 0 || objLines(out, "unchanged") != 3 {
		t.Fatalf("re-apply without list: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(app, "all.yaml"), []byte(strings.Replace(cms("e2e-rbac-rw", "n1", "n2", "n3"), "k: v", "k: changed", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "-f", app, "--as", "fleet-e2e-nolist")
	if code != 0 || objLines(out, "configured") != 1 || !strings.Contains(out, "[rbac] configmap/n1 configured\n") || objLines(out, "unchanged") != 2 {
		t.Fatalf("change without list: exit %d\n%s%s", code, out, errOut)
	}
	if v, _ := get(t, "fleet-c3", "configmap", "n1", "-n", "e2e-rbac-rw", "-o", "jsonpath={.data.k}"); v != "changed" {
		t.Errorf("n1 has k=%q", v)
	}
}

// TestFaultTwentyClusters: 20 fleet clusters, contexts over the test bed's
// 3 API servers (each cluster its own app and namespace, so none collide),
// worked on all at once (--parallel 20): every output line is whole and
// starts with a known cluster prefix, every cluster's lines are all there,
// and every cluster is in the summary.
func TestFaultTwentyClusters(t *testing.T) {
	const n = 20
	contexts := map[string]testenv.ContextSpec{}
	var f strings.Builder
	f.WriteString("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: e2e}\ngroups: [{name: all}]\nclusters:\n")
	var apps strings.Builder
	var names []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("s%02d", i)
		names = append(names, name)
		contexts["stress-"+name] = testenv.ContextSpec{Server: env.Clusters[i%len(env.Clusters)].Direct}
		// One API server in several entries, on purpose (sameClusterAs):
		// each has an app and a namespace of its own.
		same := ""
		if i > len(env.Clusters) {
			same = fmt.Sprintf(", sameClusterAs: s%02d", (i-1)%len(env.Clusters)+1)
		}
		fmt.Fprintf(&f, "  - {name: %s, group: all, context: stress-%s, kubeconfig: kubeconfig%s}\n", name, name, same)
		fmt.Fprintf(&apps, "  - {name: stress-%s, manifests: app, clusters: [%s]}\n", name, name)
	}
	f.WriteString("apps:\n" + apps.String())
	var m manifest
	m.add("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: e2e-stress-${FLEET_CLUSTER_NAME}")
	long := strings.Repeat("x", 200)
	for i := 0; i < 10; i++ {
		m.add("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d-%s\n  namespace: e2e-stress-${FLEET_CLUSTER_NAME}\ndata:\n  cluster: ${FLEET_CLUSTER_NAME}\n  a: %s\n  b: %s\n  c: %s", i, long[:40], long, long, long)
	}
	dir := workdir(t, f.String(), map[string]string{"app/all.yaml": m.String()})
	if err := env.WriteKubeconfig(filepath.Join(dir, "kubeconfig"), contexts); err != nil {
		t.Fatal(err)
	}
	prefix := regexp.MustCompile(`^\[(s\d\d)\] (.*)$`)
	applysetID := regexp.MustCompile(`applyset-[A-Za-z0-9_-]+-v1`)
	// check splits the output by cluster, checks every line, and returns
	// each cluster's lines with its name replaced by "X"; every cluster
	// must have printed the same lines (in the same order when ordered).
	check := func(what, out string, lineOK *regexp.Regexp, ordered bool) map[string][]string {
		t.Helper()
		by := map[string][]string{}
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if line == "Summary:" {
				continue
			}
			m := prefix.FindStringSubmatch(line)
			if m == nil || !slices.Contains(names, m[1]) || strings.Contains(m[2], "[s") {
				t.Errorf("%s: line %q", what, line)
				continue
			}
			// The same for every cluster but its name and its app's ID.
			rest := applysetID.ReplaceAllString(strings.ReplaceAll(m[2], m[1], "X"), "applyset-ID")
			if !lineOK.MatchString(rest) {
				t.Errorf("%s: line %q", what, line)
				continue
			}
			by[m[1]] = append(by[m[1]], rest)
		}
		same := func(a, b []string) bool {
			if !ordered {
				a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
			}
			return slices.Equal(a, b)
		}
		for _, name := range names {
			if !same(by[name], by[names[0]]) {
				t.Errorf("%s: %s printed\n%s\nbut %s printed\n%s", what, name, strings.Join(by[name], "\n"), names[0], strings.Join(by[names[0]], "\n"))
			}
		}
		return by
	}

	start := time.Now()
	out, errOut, code := fleet(t, dir, "diff", "--parallel", "20")
	t.Logf("diff of %d clusters: %s, %d lines", n, time.Since(start).Round(time.Millisecond), strings.Count(out, "\n"))
	if code != 1 {
		t.Fatalf("diff: exit %d\n%s%s", code, out, errOut)
	}
	by := check("diff", out, regexp.MustCompile(`^(--- |\+\+\+ |@@ |\+|11 to create, 0 to change, 0 to prune, 0 unchanged$)`), true)
	// Each cluster's diff comes whole, in the fleet's order, whatever
	// order the clusters finished in (the summary lines aside).
	var order []string
	for _, line := range strings.Split(out, "\n") {
		if line == "Summary:" {
			break
		}
		if m := prefix.FindStringSubmatch(line); m != nil && !strings.Contains(m[2], " to create, ") && (len(order) == 0 || order[len(order)-1] != m[1]) {
			order = append(order, m[1])
		}
	}
	if !slices.Equal(order, names) {
		t.Errorf("diff: clusters printed in the order %v, not the fleet's", order)
	}
	if len(by[names[0]]) < 11*5 {
		t.Errorf("diff: %d lines per cluster", len(by[names[0]]))
	}

	// Seven at once: the other thirteen clusters' renders are let go
	// from the render on and made again when their turn comes (each
	// namespace below carries its own cluster's name).
	start = time.Now()
	out, errOut, code = fleet(t, dir, "apply", "--parallel", "7")
	t.Logf("apply to %d clusters: %s", n, time.Since(start).Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	by = check("apply", out, regexp.MustCompile(`^ *(namespace/e2e-stress-X created|configmap/cm-\d-x{40} created|revision 1 recorded|revision 1 verified|applied: 11 created)$`), false)
	if len(by[names[0]]) != 14 {
		t.Errorf("apply: %d lines per cluster, want 14", len(by[names[0]]))
	}
	summary := out[strings.Index(out, "Summary:"):]
	if got := strings.Count(summary, "applied: 11 created\n"); got != n {
		t.Errorf("%d clusters in the summary:\n%s", got, summary)
	}
	for i, c := range env.Clusters {
		want := 0
		for j := 1; j <= n; j++ {
			if j%len(env.Clusters) == i {
				want++
			}
		}
		if got, _ := get(t, c.Context, "namespaces", "-o", "name"); strings.Count(got, "namespace/e2e-stress-s") != want {
			t.Errorf("%s holds %d of the namespaces, want %d: %s", c.Context, strings.Count(got, "namespace/e2e-stress-s"), want, got)
		}
	}
	// -o json: one whole object per line, from every cluster.
	out, errOut, code = fleet(t, dir, "apply", "--parallel", "20", "-o", "json")
	if code != 0 {
		t.Fatalf("apply -o json: exit %d\n%s%s", code, out, errOut)
	}
	clusters := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Type, Cluster, Action string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		clusters[ev.Cluster]++
	}
	for _, name := range names {
		if clusters[name] != 14 { // 11 objects, the revision, its verdict, the cluster
			t.Errorf("%s: %d JSON lines, want 14", name, clusters[name])
		}
	}
}

// prompted starts an apply of a Namespace ns to twoGroups with stdin a
// terminal, and waits until it asks to apply to the protected group. It
// returns the run and the terminal's other side, to answer on.
func prompted(t *testing.T, ns string) (*run, *os.File) {
	t.Helper()
	control, terminal, err := testenv.OpenPTY()
	if err != nil {
		if runtime.GOOS == "linux" {
			t.Fatal("no pseudo-terminal on Linux:", err)
		}
		t.Skip("no pseudo-terminal:", err)
	}
	t.Cleanup(func() { _ = control.Close(); _ = terminal.Close() })
	dir := workdir(t, twoGroups, map[string]string{"prompt/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "-f", filepath.Join(dir, "prompt"), "--yes") })
	r := startFleet(t, dir, terminal, "apply", "-f", filepath.Join(dir, "prompt"))
	r.waitFor(t, "Apply to protected group production (prod-a, prod-b)? [y/N]", 30*time.Second)
	return r, control
}

// TestPromptAnsweredNo: "n" at a protected group's confirmation ends the
// rollout there, and says so: aborted, what was not written; not "did
// not apply".
func TestPromptAnsweredNo(t *testing.T) {
	r, control := prompted(t, "e2e-prompt-no")
	if _, err := control.Write([]byte("n\n")); err != nil {
		t.Fatal(err)
	}
	if !r.exited(30 * time.Second) {
		t.Fatal("still running after the answer")
	}
	out, errOut := r.output()
	if r.code != 1 || !strings.Contains(errOut, "error: aborted (not confirmed): 2 of 3 clusters not written") || strings.Contains(errOut, "did not apply") || !strings.Contains(out, "[prod-a] not started: not confirmed") {
		t.Errorf("exit %d\n%s%s", r.code, out, errOut)
	}
	for _, ctx := range []string{"fleet-c2", "fleet-c3"} {
		if !absent(t, ctx, "namespace", "e2e-prompt-no") {
			t.Errorf("%s written to after the answer no", ctx)
		}
	}
}
