package metrics

import (
	"io"
	"net"
	"net/http"
	"reflect"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// scrape gets the metrics and parses them with Prometheus's own text
// parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
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
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the Prometheus text parser refuses /metrics: %v", err)
	}
	return families
}

// value is the value of the family's sample with the given labels.
func value(t *testing.T, families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	f := families[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if !reflect.DeepEqual(got, labels) && !(len(got) == 0 && len(labels) == 0) {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func healthz(t *testing.T, addr string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestReconcile: what a pass records is served on /metrics in a
// form the Prometheus text parser accepts; series of apps gone from the
// render go; /healthz is 200, 503 after 3 passes that reached no cluster,
// 200 again after one that did, 503 once stopped.
func TestReconcile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, h := NewReconcile(), &Health{}
	defer Serve(ln, m, h)()
	addr := ln.Addr().String()

	at := time.Unix(1700000000, 0)
	m.App("c1", "web", at, true, 4)
	m.Drift("c1", "web", 2)
	m.App("c2", "web", at, false, 0)
	m.Applied("c2", "web", string(change.Configured))
	m.Applied("c2", "web", string(change.Configured))
	m.Applied("c2", "web", string(change.Failed))
	m.Applied("c2", "web", string(apply.Healthy)) // not an apply
	m.Pass(1500*time.Millisecond, true)
	m.Pass(time.Second, false)

	fams := scrape(t, addr)
	for _, want := range []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"kubectl_fleet_reconcile_last_pass_timestamp_seconds", map[string]string{"cluster": "c1", "app": "web"}, 1700000000},
		{"kubectl_fleet_reconcile_last_pass_success", map[string]string{"cluster": "c1", "app": "web"}, 1},
		{"kubectl_fleet_reconcile_last_pass_success", map[string]string{"cluster": "c2", "app": "web"}, 0},
		{"kubectl_fleet_reconcile_drifted_objects", map[string]string{"cluster": "c1", "app": "web"}, 2},
		{"kubectl_fleet_reconcile_revision", map[string]string{"cluster": "c1", "app": "web"}, 4},
		{"kubectl_fleet_reconcile_objects_applied_total", map[string]string{"cluster": "c2", "app": "web", "action": "configured"}, 2},
		{"kubectl_fleet_reconcile_objects_applied_total", map[string]string{"cluster": "c2", "app": "web", "action": "failed"}, 1},
		{"kubectl_fleet_reconcile_passes_total", map[string]string{"result": "succeeded"}, 1},
		{"kubectl_fleet_reconcile_passes_total", map[string]string{"result": "failed"}, 1},
		{"kubectl_fleet_reconcile_pass_duration_seconds", nil, 2},
	} {
		got, ok := value(t, fams, want.name, want.labels)
		if !ok || got != want.value {
			t.Errorf("%s%v = %v (found %v), want %v", want.name, want.labels, got, ok, want.value)
		}
	}
	if _, ok := value(t, fams, "kubectl_fleet_reconcile_objects_applied_total", map[string]string{"cluster": "c2", "app": "web", "action": "healthy"}); ok {
		t.Error("health outcomes are counted as applies")
	}
	if fams["go_goroutines"] == nil || fams["process_cpu_seconds_total"] == nil && fams["process_start_time_seconds"] == nil {
		t.Error("no Go or process metrics")
	}
	if fams["go_gc_heap_live_bytes"] == nil {
		t.Error("no go_gc_heap_live_bytes: the heap a long-running reconcile holds")
	}
	if _, ok := value(t, fams, "kubectl_fleet_reconcile_revision", map[string]string{"cluster": "c2", "app": "web"}); ok {
		t.Error("revision 0 is recorded")
	}

	// c2 leaves the render: its series go.
	m.KeepOnly([]render.Result{{Target: render.Target{Cluster: render.Cluster{Name: "c1"}, App: "web"}}})
	fams = scrape(t, addr)
	if _, ok := value(t, fams, "kubectl_fleet_reconcile_last_pass_success", map[string]string{"cluster": "c2", "app": "web"}); ok {
		t.Error("c2's series stay after it left the render")
	}
	if _, ok := value(t, fams, "kubectl_fleet_reconcile_objects_applied_total", map[string]string{"cluster": "c2", "app": "web", "action": "configured"}); ok {
		t.Error("c2's counters stay after it left the render")
	}
	if _, ok := value(t, fams, "kubectl_fleet_reconcile_last_pass_success", map[string]string{"cluster": "c1", "app": "web"}); !ok {
		t.Error("c1's series went")
	}

	if code := healthz(t, addr); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	for i := 0; i < healthFailures; i++ {
		if code := healthz(t, addr); code != http.StatusOK {
			t.Errorf("/healthz after %d failed passes: %d", i, code)
		}
		h.Passed(false)
	}
	if code := healthz(t, addr); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz after %d failed passes: %d", healthFailures, code)
	}
	h.Passed(true)
	if code := healthz(t, addr); code != http.StatusOK {
		t.Errorf("/healthz after a good pass: %d", code)
	}
	h.Stop()
	if code := healthz(t, addr); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz once stopped: %d", code)
	}
}
