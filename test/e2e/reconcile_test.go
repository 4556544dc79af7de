package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

// reconcileFleet is three clusters of the test bed in two groups, with one
// app whose ConfigMap carries each cluster's colour.
func reconcileFleet(colorB string) string {
	return `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - {name: staging}
  - {name: production, maxParallel: 2}
clusters:
  - {name: rec-a, group: staging, context: fleet-c1, attributes: {color: blue}}
  - {name: rec-b, group: production, context: fleet-c2, attributes: {color: ` + colorB + `}}
  - {name: rec-c, group: production, context: fleet-c3, attributes: {color: blue}}
apps:
  - {name: reconcile-e2e, manifests: app}
`
}

const reconcileNS = "e2e-reconcile"

// settings reads the app's ConfigMap's colour on a cluster.
func settings(t *testing.T, context string) string {
	t.Helper()
	out, code := get(t, context, "-n", reconcileNS, "configmap", "settings", "-o", "jsonpath={.data.color}")
	if code != 0 {
		t.Fatalf("kubectl get configmap settings on %s: exit %d: %s", context, code, out)
	}
	return out
}

// jsonEvents parses reconcile's --log-format json output.
func jsonEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON line: %v: %s", err, line)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := ev[k]; !ok {
				t.Errorf("no %q in %s", k, line)
			}
		}
		evs = append(evs, ev)
	}
	return evs
}

// waitEvent waits until the run printed an event for which match holds,
// and returns it.
func waitEvent(t *testing.T, r *run, timeout time.Duration, what string, match func(ev map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, errOut := r.output()
		if i := strings.LastIndexByte(out, '\n'); i >= 0 {
			for _, ev := range jsonEvents(t, out[:i+1]) {
				if match(ev) {
					return ev
				}
			}
		}
		select {
		case <-r.done:
			t.Fatalf("exited (%d) before %s\n%s%s", r.code, what, out, errOut)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s\n%s%s", what, timeout, out, errOut)
		}
	}
}

// passDone matches the end of pass n or later.
func passDone(n float64) func(map[string]any) bool {
	return func(ev map[string]any) bool {
		p, _ := ev["pass"].(float64)
		return ev["type"] == "pass" && p >= n
	}
}

// scrapeMetrics reads /metrics and parses it with Prometheus's text
// parser.
func scrapeMetrics(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the Prometheus text parser refuses /metrics: %v", err)
	}
	return fams
}

// gauge is the value of a metric of cluster and app, and whether there is
// one.
func gauge(fams map[string]*dto.MetricFamily, name, cluster, app string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["cluster"] == cluster && labels["app"] == app {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// stopReconcile sends SIGTERM and expects exit 0.
func stopReconcile(t *testing.T, r *run) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !r.exited(60 * time.Second) {
		t.Fatal("still running a minute after SIGTERM")
	}
	if r.code != 0 {
		out, errOut := r.output()
		t.Errorf("exit %d after SIGTERM, want 0\n%s%s", r.code, out, errOut)
	}
}

// TestReconcile: reconcile --once after an apply re-applies only the
// cluster whose render changed (one new revision there, none elsewhere);
// a reconcile --interval loop reports an object edited by hand without
// touching it, and its drift in the metrics, then with --correct-drift
// puts the value back; /metrics parses, /healthz is 200, and SIGTERM ends
// the loop with exit 0.
func TestReconcile(t *testing.T) {
	app := map[string]string{"app/app.yaml": namespaced(reconcileNS, `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: `+reconcileNS+`}
data: {color: '${color}', cluster: '${FLEET_CLUSTER_NAME}'}
`)}
	dir := workdir(t, reconcileFleet("blue"), app)
	var all strings.Builder
	defer func() {
		if t.Failed() {
			t.Log(all.String())
		}
	}()
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })

	// Nothing changed: nothing applied.
	out, errOut, code := fleet(t, dir, "reconcile", "--once")
	all.WriteString(out + errOut)
	if code != 0 {
		t.Fatalf("reconcile --once: exit %d\n%s%s", code, out, errOut)
	}
	for _, c := range []string{"rec-a", "rec-b", "rec-c"} {
		if !strings.Contains(out, "["+c+"] unchanged, skipped (reconcile-e2e r1)") {
			t.Errorf("%s is not said unchanged:\n%s", c, out)
		}
	}
	if strings.Contains(out+errOut, "applying") || strings.Contains(out, "Summary:") {
		t.Errorf("a pass with nothing changed applied something:\n%s%s", out, errOut)
	}

	// rec-b's colour changes: only rec-b is applied.
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(reconcileFleet("green")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "reconcile", "--once")
	all.WriteString(out + errOut)
	if code != 0 {
		t.Fatalf("reconcile --once: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"[rec-b] reconcile-e2e: render changed", "[rec-b] applying", "[rec-b] configmap/settings configured", "[rec-b] revision 2 recorded", "[rec-b] applied",
		"[rec-a] unchanged, skipped", "[rec-c] unchanged, skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[rec-a] applied") || strings.Contains(out, "[rec-c] applied") {
		t.Errorf("an unchanged cluster was applied:\n%s", out)
	}
	if !strings.Contains(errOut, "pass 1 succeeded") || !strings.Contains(errOut, "rolled out to: rec-b;") {
		t.Errorf("the pass's line: %s", errOut)
	}
	revs := historyOf(t, &all, dir, "--app", "reconcile-e2e")
	for c, n := range map[string]int{"rec-a": 1, "rec-b": 2, "rec-c": 1} {
		if len(revs[c]) != n {
			t.Errorf("%s has revisions %v, want %d", c, revs[c], n)
		}
	}
	if got := settings(t, "fleet-c2"); got != "green" {
		t.Errorf("rec-b's colour is %q, want green", got)
	}

	if runtime.GOOS == "windows" {
		t.Skip("the loop is stopped with SIGTERM")
	}

	// The loop, without --correct-drift: a hand edit on rec-c is
	// reported, in the log and the metrics, and left alone.
	loop := func(extra ...string) (*run, string) {
		r := startFleet(t, dir, nil, append([]string{"reconcile", "--interval", "2s", "--metrics-addr", "127.0.0.1:0", "--log-format", "json"}, extra...)...)
		ev := waitEvent(t, r, 30*time.Second, "the metrics address", func(ev map[string]any) bool { return ev["addr"] != nil })
		return r, ev["addr"].(string)
	}
	r, addr := loop()
	waitEvent(t, r, 60*time.Second, "pass 1", passDone(1))
	if _, _, code := kubectl(t, "", "--context", "fleet-c3", "-n", reconcileNS, "patch", "configmap", "settings", "--type", "merge", "-p", `{"data":{"color":"by-hand"}}`); code != 0 {
		t.Fatal("kubectl patch failed")
	}
	drift := waitEvent(t, r, 60*time.Second, "drift reported on rec-c", func(ev map[string]any) bool {
		return ev["type"] == "reconcile" && ev["cluster"] == "rec-c" && ev["decision"] == "drifted" && ev["app"] == "reconcile-e2e"
	})
	if drift["level"] != "warning" || drift["apply"] != false || !strings.Contains(drift["msg"].(string), "configmap/settings -n "+reconcileNS+" drifted: not corrected") {
		t.Errorf("drift event: %v", drift)
	}
	// The pass after the one that saw it: still not corrected.
	seen, _ := drift["pass"].(float64)
	waitEvent(t, r, 60*time.Second, "the next pass", passDone(seen+1))
	if got := settings(t, "fleet-c3"); got != "by-hand" {
		t.Errorf("without --correct-drift, rec-c's colour became %q", got)
	}
	fams := scrapeMetrics(t, addr)
	if v, ok := gauge(fams, "kubectl_fleet_reconcile_drifted_objects", "rec-c", "reconcile-e2e"); !ok || v != 1 {
		t.Errorf("drifted_objects of rec-c = %v (%v), want 1", v, ok)
	}
	if v, ok := gauge(fams, "kubectl_fleet_reconcile_drifted_objects", "rec-a", "reconcile-e2e"); !ok || v != 0 {
		t.Errorf("drifted_objects of rec-a = %v (%v), want 0", v, ok)
	}
	for _, c := range []string{"rec-a", "rec-b", "rec-c"} {
		if v, ok := gauge(fams, "kubectl_fleet_reconcile_last_pass_success", c, "reconcile-e2e"); !ok || v != 1 {
			t.Errorf("last_pass_success of %s = %v (%v), want 1", c, v, ok)
		}
		if v, ok := gauge(fams, "kubectl_fleet_reconcile_last_pass_timestamp_seconds", c, "reconcile-e2e"); !ok || v < float64(time.Now().Add(-time.Hour).Unix()) {
			t.Errorf("last_pass_timestamp_seconds of %s = %v (%v)", c, v, ok)
		}
	}
	if fams["kubectl_fleet_reconcile_pass_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleCount() < 2 {
		t.Error("pass_duration_seconds has fewer samples than passes")
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %s", resp.Status)
	}
	stopReconcile(t, r)
	out, _ = r.output()
	all.WriteString(out)
	for _, ev := range jsonEvents(t, out) {
		if ev["type"] == "cluster" || ev["type"] == "object" {
			t.Errorf("something was applied without a change: %v", ev)
		}
	}

	// With --correct-drift: the value comes back, and stays.
	r, addr = loop("--correct-drift")
	waitEvent(t, r, 60*time.Second, "rec-c applied", func(ev map[string]any) bool {
		return ev["type"] == "cluster" && ev["cluster"] == "rec-c" && ev["state"] == "succeeded"
	})
	if got := settings(t, "fleet-c3"); got != "blue" {
		t.Errorf("with --correct-drift, rec-c's colour is %q, want blue back", got)
	}
	// The next pass finds nothing to do.
	fixed := waitEvent(t, r, 60*time.Second, "a pass after the correction", func(ev map[string]any) bool {
		return ev["type"] == "reconcile" && ev["cluster"] == "rec-c" && ev["decision"] == "unchanged"
	})
	waitEvent(t, r, 60*time.Second, "its end", passDone(fixed["pass"].(float64)))
	fams = scrapeMetrics(t, addr)
	if v, ok := gauge(fams, "kubectl_fleet_reconcile_drifted_objects", "rec-c", "reconcile-e2e"); !ok || v != 0 {
		t.Errorf("drifted_objects of rec-c after the correction = %v (%v), want 0", v, ok)
	}
	stopReconcile(t, r)
	out, _ = r.output()
	all.WriteString(out)
	applied := 0
	for _, ev := range jsonEvents(t, out) {
		if ev["type"] == "cluster" {
			applied++
			if ev["cluster"] != "rec-c" {
				t.Errorf("%v was applied, only rec-c drifted", ev["cluster"])
			}
		}
	}
	if applied != 1 {
		t.Errorf("rec-c was applied %d times, want once", applied)
	}
	if revs := historyOf(t, &all, dir, "--app", "reconcile-e2e", "-c", "rec-c"); len(revs["rec-c"]) != 1 {
		t.Errorf("correcting drift recorded a revision: %v", revs["rec-c"])
	}

	// A hand edit of the field the render changes, on rec-b: without
	// --correct-drift the pass fails on the conflict (and every pass
	// after it would); with it, the change takes the field back.
	if _, _, code := kubectl(t, "", "--context", "fleet-c2", "-n", reconcileNS, "patch", "configmap", "settings", "--type", "merge", "-p", `{"data":{"color":"by-hand"}}`); code != 0 {
		t.Fatal("kubectl patch failed")
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(reconcileFleet("red")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "reconcile", "--once")
	all.WriteString(out + errOut)
	if code == 0 || !strings.Contains(out+errOut, "conflict") {
		t.Errorf("reconcile --once over a hand edit of a changed field: exit %d, want a conflict\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "reconcile", "--once", "--correct-drift")
	all.WriteString(out + errOut)
	if code != 0 {
		t.Errorf("reconcile --once --correct-drift over a hand edit of a changed field: exit %d\n%s%s", code, out, errOut)
	}
	if got := settings(t, "fleet-c2"); got != "red" {
		t.Errorf("rec-b's colour is %q, want red", got)
	}
}

// TestReconcileSignal: SIGTERM while a pass waits on a server lets the
// pass finish, every group included, then the loop exits 0 without
// sleeping; a second SIGTERM during a pass exits 130 at once.
func TestReconcileSignal(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGTERM")
	}
	proxy, kc := faultProxy(t, 1, "slow")
	const ns = "e2e-reconcile-signal"
	dir := interruptFleet(t, kc, map[string]string{"app/all.yaml": manyConfigMaps(ns, "cm", 3)})
	args := []string{"reconcile", "-f", filepath.Join(dir, "app"), "--name", "recsig", "--interval", "1h"}

	// The first object's apply is held: the pass is in flight.
	proxy.After(0, objectsPatched, testenv.Hung)
	r := startFleet(t, dir, nil, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := proxy.WaitHeld(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "signalled: pass 1 finishes", 30*time.Second)
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	if !r.exited(60 * time.Second) {
		out, errOut := r.output()
		t.Fatalf("still running a minute after the pass was let go\n%s%s", out, errOut)
	}
	out, errOut := r.output()
	if r.code != 0 {
		t.Errorf("exit %d, want 0\n%s%s", r.code, out, errOut)
	}
	for _, want := range []string{"[slow]  applied: 4 created", "[later] applied: 4 created"} {
		if !strings.Contains(out, want) {
			t.Errorf("the pass did not finish: no %q\n%s%s", want, out, errOut)
		}
	}
	if !strings.Contains(errOut, "pass 1 succeeded") || !strings.Contains(errOut, "stopping: signalled") || strings.Contains(errOut, "pass 2") {
		t.Errorf("stderr:\n%s", errOut)
	}
	if names, _ := get(t, "fleet-c3", "configmaps", "-n", ns, "-o", "name"); strings.Count(names, "configmap/cm-") != 3 {
		t.Errorf("the second group after the signal: %s", names)
	}

	// Nothing changed: on the wire, the pass only reads (the parents and
	// the objects' metadata): no lock, no inventory, no object, not even
	// a dry run, since every object is at the version the apply left.
	before := len(proxy.Requests())
	out, errOut, code := fleet(t, dir, append(slices.Clone(args[:len(args)-2]), "--once")...)
	if code != 0 || !strings.Contains(out, "[slow]  unchanged, skipped (recsig r1)") {
		t.Fatalf("reconcile --once: exit %d\n%s%s", code, out, errOut)
	}
	reqs := proxy.Requests()[before:]
	var writes []string
	for _, r := range reqs {
		if r.Method != http.MethodGet {
			writes = append(writes, r.String())
		}
	}
	if len(writes) > 0 {
		t.Errorf("an unchanged cluster was sent more than reads:\n%s", strings.Join(writes, "\n"))
	}
	t.Logf("an unchanged cluster with 1 app of 4 objects: %d requests in a pass", len(reqs))

	// A second signal does not wait for the pass.
	if err := os.WriteFile(filepath.Join(dir, "app", "all.yaml"), []byte(manyConfigMaps(ns, "cm", 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy.After(0, objectsPatched, testenv.Hung)
	r = startFleet(t, dir, nil, args...)
	if err := proxy.WaitHeld(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "signalled: pass 1 finishes", 30*time.Second)
	// Until it exits: the first signal may still be on its way to the
	// watcher of the second.
	for !r.exited(200 * time.Millisecond) {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		if ctx.Err() != nil {
			t.Fatal("still running after a second SIGTERM")
		}
	}
	if r.code != 130 {
		out, errOut := r.output()
		t.Errorf("exit %d after a second signal, want 130\n%s%s", r.code, out, errOut)
	}
	_ = proxy.Restore()
}
