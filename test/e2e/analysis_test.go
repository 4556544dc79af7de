package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

// errorRates is a metrics endpoint per cluster, in Prometheus's text
// format: app_error_ratio{cluster="NAME"}, a value the test sets.
type errorRates struct {
	mu    sync.Mutex
	rates map[string]float64
}

func (e *errorRates) set(cluster string, v float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rates[cluster] = v
}

// serve starts cluster's endpoint and returns its host:port.
func (e *errorRates) serve(t *testing.T, cluster string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e.mu.Lock()
		v := e.rates[cluster]
		e.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE app_error_ratio gauge\napp_error_ratio{cluster=%q} %g\n", cluster, v)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// prometheus starts an endpoint for each cluster of e and a real
// Prometheus scraping them every second, until the test ends, once it
// has read each one's ratio.
func (e *errorRates) prometheus(t *testing.T) *testenv.Prometheus {
	t.Helper()
	var targets []string
	for c := range e.rates {
		targets = append(targets, e.serve(t, c))
	}
	p := startPrometheus(t, targets...)
	for c, v := range e.rates {
		waitScraped(t, p, c, v)
	}
	return p
}

// startPrometheus builds (when missing) and starts a real Prometheus
// scraping targets every second, until the test ends.
func startPrometheus(t *testing.T, targets ...string) *testenv.Prometheus {
	t.Helper()
	build := exec.Command(filepath.Join(repo, "hack", "controlplane", "build.sh"), "prometheus")
	build.Stderr = os.Stderr
	out, err := build.Output()
	if err != nil {
		t.Fatalf("building Prometheus: %v", err)
	}
	p, err := testenv.StartPrometheus(stopping, testenv.PrometheusOptions{BinDir: strings.TrimSpace(string(out)), Dir: t.TempDir(), Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// waitScraped waits until Prometheus's answer for cluster's ratio is v.
func waitScraped(t *testing.T, prom *testenv.Prometheus, cluster string, v float64) {
	t.Helper()
	want := fmt.Sprintf(`"%g"]`, v)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(prom.URL + "/api/v1/query?query=" + fmt.Sprintf("app_error_ratio%%7Bcluster=%%22%s%%22%%7D", cluster))
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), want) {
			return
		}
	}
	t.Fatalf("Prometheus did not scrape %s's ratio %g in 30s:\n%s", cluster, v, prom.Logs())
}

// aligned is out with each cluster's prefix followed by one space, as
// the prefixes of a run of one cluster are: "[canary-eu]   x" is "[canary-eu] x".
func aligned(out string) string {
	return regexp.MustCompile(`(?m)^(\[[^\]]+\]) +`).ReplaceAllString(out, "$1 ")
}

// analysisFleet is staging (stg-eu) then production, a canary batch
// (canary-eu) and the rest (prod-eu), each group measuring the error ratio of
// its clusters twice, a second apart, in a real Prometheus.
func analysisFleet(prom, query string) string {
	analysis := fmt.Sprintf(`    analysis:
      - name: error-rate
        prometheus: {address: %q, query: '%s', timeout: 2s}
        successCondition: result < 0.05
        interval: 1s
        count: 2
`, prom, query)
	return `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - name: staging
` + analysis + `  - name: production
    maxFailures: 50%
    batches:
      - {selector: canary=true, name: canary}
` + analysis + `clusters:
  - {name: stg-eu, group: staging, context: fleet-c1}
  - {name: prod-eu, group: production, context: fleet-c3}
  - {name: canary-eu, group: production, context: fleet-c2, labels: {canary: "true"}}
apps:
  - {name: analysed, manifests: app.yaml}
`
}

// A canary whose error ratio, measured in a real Prometheus, fails its
// analysis fails, with the value and the condition, and holds the rest
// of its group; once the ratio is low the release goes everywhere, each
// verdict naming the analysis it passed.
func TestAnalysisHoldsTheGroup(t *testing.T) {
	const ns = "e2e-analysis"
	rates := &errorRates{rates: map[string]float64{"stg-eu": 0.001, "canary-eu": 0.2, "prod-eu": 0.001}}
	prom := rates.prometheus(t)
	dir := workdir(t, analysisFleet(prom.URL, `max(app_error_ratio{cluster="${FLEET_CLUSTER_NAME}"})`), map[string]string{"app.yaml": release(ns, "1")})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })

	out, errOut, code := fleet(t, dir, "apply", "--yes")
	if code != 1 {
		t.Fatalf("apply with a bad canary: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"[stg-eu] soak started: 1 analysis",
		"[stg-eu] analysis error-rate (1/2): 0.001 successful (result < 0.05)",
		"[stg-eu] analysis error-rate (2/2): 0.001 successful (result < 0.05)",
		"[stg-eu] revision 1 verified",
		"[canary-eu] analysis error-rate (1/2): 0.2 failed (result < 0.05)",
		"[canary-eu] soak failed: analysis error-rate failed: 0.2: result < 0.05 does not hold (1 of 1 measurements, failureLimit 0)",
		"[canary-eu] revision 1 failed: soak: analysis error-rate failed: 0.2",
		"production/rest not started: canary-eu runs analysed r1, not verified (failed: soak: analysis error-rate failed: 0.2",
	} {
		if !strings.Contains(aligned(out), want) {
			t.Errorf("apply with a bad canary lacks %q:\n%s%s", want, out, errOut)
		}
	}
	if !absent(t, "fleet-c3", "namespace", ns) {
		t.Fatal("prod-eu got a release its canary's analysis rejected")
	}

	rates.set("canary-eu", 0.002)
	waitScraped(t, prom, "canary-eu", 0.002)
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	if code != 0 || !strings.Contains(aligned(out), "[canary-eu] revision 1 verified") || !strings.Contains(aligned(out), "[prod-eu] revision 1 verified") {
		t.Fatalf("apply with a good canary: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, _ = fleet(t, dir, "history", "-c", "prod-eu", "-o", "json")
	if !strings.Contains(out, `"analysis error-rate"`) {
		t.Errorf("prod-eu's history does not name the analysis it passed:\n%s%s", out, errOut)
	}
}

// An analysis fails closed: no data, a query Prometheus refuses, a
// Prometheus that is down and one that does not answer each fail the
// cluster with a plain message, none passes it.
func TestAnalysisFailsClosed(t *testing.T) {
	const ns = "e2e-analysis-closed"
	rates := &errorRates{rates: map[string]float64{"stg-eu": 0.001}}
	prom := rates.prometheus(t)
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downURL := "http://" + down.Addr().String()
	down.Close()
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(hang)
	query := `max(app_error_ratio{cluster="${FLEET_CLUSTER_NAME}"})`
	for _, tt := range []struct {
		name, address, query, want string
	}{
		{"no data", prom.URL, `max(app_error_ratio{cluster="nowhere"})`, "analysis error-rate inconclusive: no data (1 of 1 measurements, inconclusiveLimit 0)"},
		{"bad PromQL", prom.URL, `max(app_error_ratio{cluster=`, "analysis error-rate failed: prometheus " + prom.URL + " refused the query: "},
		{"down", downURL, query, "analysis error-rate failed: prometheus " + downURL + ": dial tcp " + down.Addr().String() + ": connect: connection refused (1 of 1 measurements, failureLimit 0)"},
		{"slow", slow.URL, query, "analysis error-rate failed: prometheus " + slow.URL + ": no answer in 2s (1 of 1 measurements"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := ns + "-" + strings.ReplaceAll(strings.ToLower(tt.name), " ", "-")
			dir := workdir(t, analysisFleet(tt.address, tt.query), map[string]string{"app.yaml": release(ns, "1")})
			t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes", "-c", "stg-eu") })
			out, errOut, code := fleet(t, dir, "apply", "--yes", "-g", "staging")
			if code != 1 || !strings.Contains(out, "[stg-eu] soak failed: "+tt.want) || !strings.Contains(out, "[stg-eu] revision 1 failed: soak: "+tt.want) {
				t.Errorf("exit %d, want 1 and %q:\n%s%s", code, tt.want, out, errOut)
			}
			if tt.name != "bad PromQL" {
				return
			}
			// vet --server asks Prometheus to parse each cluster's query
			// before anything is applied; vet alone cannot.
			out, errOut, code = fleet(t, dir, "vet", "--server", "-g", "staging")
			if code != 1 || !strings.Contains(out+errOut, "fleet.yaml:7: group staging: analysis[0]: analysis error-rate: prometheus "+prom.URL+" refused the query: ") {
				t.Errorf("vet --server: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// onFailure: rollback: a canary whose analysis fails past its budget
// rolls the release back from every cluster the run changed, in its
// group and the group before it, newest first, to their last verified
// revision, recorded as automatic; the run exits 6. The rest of the
// group never got the release.
func TestAnalysisRollsBack(t *testing.T) {
	const ns = "checkout"
	rates := &errorRates{rates: map[string]float64{"stg-eu": 0.001, "canary-eu": 0.001, "prod-eu": 0.001}}
	prom := rates.prometheus(t)
	fleetYAML := "onFailure: rollback\n" + analysisFleet(prom.URL, `max(app_error_ratio{cluster="${FLEET_CLUSTER_NAME}"})`)
	dir := workdir(t, fleetYAML, map[string]string{"app.yaml": release(ns, "1")})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	if out, errOut, code := fleet(t, dir, "apply", "--yes"); code != 0 {
		t.Fatalf("first release: exit %d\n%s%s", code, out, errOut)
	}

	rates.set("canary-eu", 0.3)
	waitScraped(t, prom, "canary-eu", 0.3)
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(release(ns, "2")), 0o644); err != nil {
		t.Fatal(err)
	}
	// The page's run: the canary fails, it and staging are rolled back,
	// the canary first, each to r1, and the run exits 6.
	newDocChecks(t).check("docs/progressive.md", "$ kubectl fleet apply --yes", func(args ...string) *exec.Cmd {
		cmd := kubectlCmd(t, args...)
		cmd.Dir = dir
		return cmd
	})
	runsEverywhere := func(step, v string) {
		t.Helper()
		for _, context := range []string{"fleet-c1", "fleet-c2", "fleet-c3"} {
			if got := runs(t, context, ns); got != v {
				t.Errorf("%s: %s runs %q, want %q", step, context, got, v)
			}
		}
	}
	runsEverywhere("after the automatic rollback", "1")
	if out, errOut, _ := fleet(t, dir, "status", "-c", "canary-eu"); !strings.Contains(out, "(r3 verified, rolled back automatically)") {
		t.Errorf("status does not say the automatic rollback:\n%s%s", out, errOut)
	}

	// The release it took away is not applied again, by apply or by
	// reconcile, until someone says so.
	held := "revision 3 rolled this release back automatically (apply --retry-rolled-back applies it again)"
	out, errOut, code := fleet(t, dir, "apply", "--yes")
	if code != 1 || !strings.Contains(aligned(out), "[stg-eu] skipped: app analysed: "+held) {
		t.Errorf("apply of the release rolled back: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "reconcile", "--once", "--yes")
	if code != 1 || !strings.Contains(out+errOut, held) {
		t.Errorf("reconcile of the release rolled back: exit %d\n%s%s", code, out, errOut)
	}
	runsEverywhere("after apply and reconcile", "1")
	rates.set("canary-eu", 0.001)
	waitScraped(t, prom, "canary-eu", 0.001)
	if out, errOut, code = fleet(t, dir, "apply", "--yes", "--retry-rolled-back"); code != 0 {
		t.Errorf("apply --retry-rolled-back: exit %d\n%s%s", code, out, errOut)
	}
	runsEverywhere("after --retry-rolled-back", "2")
}

// Delivered clusters are analysed once their Flux applied the release,
// and an automatic rollback moves their tags back: staging written to
// (stg-eu), production delivered through a registry on loopback to Flux
// on fleet-c3 (the canary, dl-canary) and fleet-c2 (dl-rest). A canary
// whose error ratio climbs after Flux applied release 2 has its tag
// moved back to release 1's artifact, and its Flux applies release 1
// again; staging goes back too; dl-rest never got release 2.
func TestAnalysisDelivered(t *testing.T) {
	const ns = "e2e-analysis-dl"
	startFlux(t, "fleet-c3")
	startFlux(t, "fleet-c2")
	r, host := loopbackRegistry(t, nil)
	rates := &errorRates{rates: map[string]float64{"stg-eu": 0.001, "dl-canary": 0.001, "dl-rest": 0.001}}
	prom := rates.prometheus(t)
	analysis := fmt.Sprintf(`    analysis:
      - {name: error-rate, prometheus: {address: %q, query: 'max(app_error_ratio{cluster="${FLEET_CLUSTER_NAME}"})'}, successCondition: result < 0.05, interval: 1s, count: 2}
`, prom.URL)
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
onFailure: rollback
groups:
  - name: staging
`+analysis+`  - name: production
    batches: [{name: canary, selector: canary=true}]
    delivery: {oci: "oci://`+host+`/fleets/e2e", insecure: true, namespace: flux-an, interval: 1s, timeout: 30s, signing: {key: cosign.key}}
`+analysis+`clusters:
  - {name: stg-eu, group: staging, context: fleet-c1}
  - {name: dl-canary, group: production, context: fleet-c3, labels: {canary: "true"}}
  - {name: dl-rest, group: production, context: fleet-c2}
apps:
  - {name: web, manifests: app.yaml}
`, map[string]string{"app.yaml": release(ns, "1"), "cosign.key": signingKey(t)})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes", "-g", "staging") })
	t.Cleanup(func() {
		for _, c := range []string{"fleet-c3", "fleet-c2"} {
			kubectl(t, "", "--context", c, "delete", "namespace", "flux-an", ns, "--wait=false", "--ignore-not-found")
		}
	})
	out := filepath.Join(t.TempDir(), "flux")
	if _, errOut, code := fleet(t, dir, "bootstrap", "-g", "production", "--output-dir", out); code != 0 {
		t.Fatalf("bootstrap: exit %d\n%s", code, errOut)
	}
	for cluster, context := range map[string]string{"dl-canary": "fleet-c3", "dl-rest": "fleet-c2"} {
		data, err := os.ReadFile(filepath.Join(out, cluster+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if out, errOut, code := kubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: flux-an}\n---\n"+string(data), "--context", context, "apply", "-f", "-"); code != 0 {
			t.Fatalf("bootstrapping %s: exit %d\n%s%s", cluster, code, out, errOut)
		}
	}
	tag := func() string {
		t.Helper()
		d, found, err := r.Resolve(context.Background(), "web", "dl-canary")
		if err != nil || !found {
			t.Fatalf("dl-canary's tag: found %v, %v", found, err)
		}
		return d.String()
	}
	if out, errOut, code := fleet(t, dir, "apply", "--yes"); code != 0 || !said(out, "dl-canary", "analysis error-rate (2/2): 0.001 successful") || !said(out, "dl-canary", "revision 1 (") {
		t.Fatalf("release 1: exit %d\n%s%s", code, out, errOut)
	}
	first := tag()

	rates.set("dl-canary", 0.3)
	waitScraped(t, prom, "dl-canary", 0.3)
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(release(ns, "2")), 0o644); err != nil {
		t.Fatal(err)
	}
	run, errOut, code := fleet(t, dir, "apply", "--yes")
	if code != 6 {
		t.Fatalf("release 2 with a bad canary: exit %d, want 6\n%s%s", code, run, errOut)
	}
	applied := strings.Index(run, "Flux applied")
	measured := strings.Index(run, "[dl-canary] analysis error-rate (1/2): 0.3 failed")
	if applied < 0 || measured < applied {
		t.Errorf("dl-canary was measured before its Flux applied release 2:\n%s", run)
	}
	if got := tag(); got != first {
		t.Errorf("dl-canary's tag is at %s after the automatic rollback, want release 1's %s\n%s%s", got, first, run, errOut)
	}
	for _, want := range [][2]string{{"dl-canary", "rollback (automatic) to 1: production/canary failed"}, {"stg-eu", "rollback (automatic) to 1: production/canary failed"}} {
		if !said(run, want[0], want[1]) {
			t.Errorf("[%s] does not say %q:\n%s", want[0], want[1], run)
		}
	}
	for deadline := time.Now().Add(60 * time.Second); runs(t, "fleet-c3", ns) != "1"; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("Flux on fleet-c3 runs %q a minute after the tag moved back, want 1", runs(t, "fleet-c3", ns))
		}
	}
	if v := runs(t, "fleet-c1", ns); v != "1" {
		t.Errorf("stg-eu runs %q, want 1", v)
	}
	if v := runs(t, "fleet-c2", ns); v != "1" {
		t.Errorf("dl-rest runs %q, want 1: it never got release 2", v)
	}
	// The release taken away stays out of the delivered canary too,
	// --skip-gates or not.
	if out, errOut, code := fleet(t, dir, "apply", "--yes", "-c", "dl-canary", "--skip-gates"); code != 1 || !said(out, "dl-canary", "revision 3 rolled this release back automatically") {
		t.Errorf("apply of the release rolled back: exit %d\n%s%s", code, out, errOut)
	}
}
