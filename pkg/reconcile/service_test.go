package reconcile

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/metrics"
)

// TestServiceServes: --metrics-addr's server says its address and
// serves /metrics and /healthz while the passes run; once Run returns,
// /healthz says the loop stopped.
func TestServiceServes(t *testing.T) {
	var out bytes.Buffer
	s := Service{Interval: time.Hour, Once: true, MetricsAddr: "127.0.0.1:0", Metrics: metrics.NewReconcile(), Health: &metrics.Health{}, Log: Log{W: &out}}
	var addr string
	s.Ready = func(a string) { addr = a }
	passes := 0
	err := s.Run(context.Background(), func(context.Context, int) error {
		passes++
		if !strings.Contains(out.String(), "serving metrics on http://"+addr+"/metrics and health on /healthz") {
			t.Errorf("the address is not said: %q", out.String())
		}
		for _, path := range []string{"/metrics", "/healthz"} {
			resp, err := http.Get("http://" + addr + path)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s during the pass: %s", path, resp.Status)
			}
		}
		return nil
	})
	if err != nil || passes != 1 {
		t.Fatalf("err %v after %d passes, want nil after 1", err, passes)
	}
	rec := httptest.NewRecorder()
	s.Health.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/healthz after Run: %d, want 503", rec.Code)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("the metrics server still serves after Run")
	}
}

// TestServiceNoMetricsAddr: without --metrics-addr nothing listens and
// nothing is said of it; an address that cannot be listened on ends Run
// before any pass, with the flag's name.
func TestServiceNoMetricsAddr(t *testing.T) {
	var out bytes.Buffer
	s := Service{Interval: time.Hour, Once: true, Metrics: metrics.NewReconcile(), Health: &metrics.Health{}, Log: Log{W: &out}}
	s.Ready = func(a string) { t.Errorf("a metrics server on %s", a) }
	if err := s.Run(context.Background(), func(context.Context, int) error { return nil }); err != nil || strings.Contains(out.String(), "serving metrics") {
		t.Errorf("err %v, said %q", err, out.String())
	}
	s.MetricsAddr = "127.0.0.1:no-port"
	passes := 0
	err := s.Run(context.Background(), func(context.Context, int) error { passes++; return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "--metrics-addr: ") || passes != 0 {
		t.Errorf("err %v after %d passes, want --metrics-addr's before any", err, passes)
	}
}
