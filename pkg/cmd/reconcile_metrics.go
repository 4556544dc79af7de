package cmd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
)

// metricsPrefix starts the name of every metric reconcile serves.
const metricsPrefix = "kubectl_fleet_reconcile_"

// reconcileMetrics are the Prometheus metrics of the reconcile loop, in a
// registry of their own (with the Go and process collectors).
type reconcileMetrics struct {
	reg *prometheus.Registry

	lastPass    *prometheus.GaugeVec
	lastSuccess *prometheus.GaugeVec
	drifted     *prometheus.GaugeVec
	revision    *prometheus.GaugeVec
	objects     *prometheus.CounterVec
	duration    prometheus.Histogram
	passes      *prometheus.CounterVec

	mu sync.Mutex
	// seen are the (cluster, app) pairs with series, so that pairs gone
	// from the fleet file lose theirs.
	seen map[[2]string]bool
}

func newReconcileMetrics() *reconcileMetrics {
	app := []string{"cluster", "app"}
	m := &reconcileMetrics{
		reg: prometheus.NewRegistry(),
		lastPass: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricsPrefix + "last_pass_timestamp_seconds",
			Help: "When the last pass checked or applied the app on the cluster (Unix time)."}, app),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricsPrefix + "last_pass_success",
			Help: "1 if the last pass went through for the app on the cluster (checked and left alone, or applied with every gate passed), 0 if it failed; drift is in drifted_objects."}, app),
		drifted: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricsPrefix + "drifted_objects",
			Help: "Objects of the app on the cluster that drifted from the render or are missing, as the last check found them (0 after a successful apply)."}, app),
		revision: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricsPrefix + "revision",
			Help: "The app's current revision on the cluster, as the last pass saw or recorded it."}, app),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricsPrefix + "objects_applied_total",
			Help: "Objects applied to the cluster for the app, by outcome (created, configured, unchanged, pruned, failed, ...)."}, append(app, "action")),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricsPrefix + "pass_duration_seconds",
			Help: "How long passes took, rendering, checking and applying.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 12)}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricsPrefix + "passes_total",
			Help: "Passes done, by result (succeeded, failed)."}, []string{"result"}),
		seen: map[[2]string]bool{},
	}
	m.reg.MustRegister(m.lastPass, m.lastSuccess, m.drifted, m.revision, m.objects, m.duration, m.passes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, r := range []string{"succeeded", "failed"} {
		m.passes.WithLabelValues(r)
	}
	return m
}

// app records a pass's outcome for an app on a cluster; revision 0 leaves
// the revision as it was.
func (m *reconcileMetrics) app(cluster, app string, at time.Time, ok bool, revision int) {
	m.mu.Lock()
	m.seen[[2]string{cluster, app}] = true
	m.mu.Unlock()
	m.lastPass.WithLabelValues(cluster, app).Set(float64(at.UnixNano()) / 1e9)
	success := 0.0
	if ok {
		success = 1
	}
	m.lastSuccess.WithLabelValues(cluster, app).Set(success)
	if revision > 0 {
		m.revision.WithLabelValues(cluster, app).Set(float64(revision))
	}
}

// drift records how many objects of an app drifted.
func (m *reconcileMetrics) drift(cluster, app string, n int) {
	m.drifted.WithLabelValues(cluster, app).Set(float64(n))
}

// applied counts an object's apply outcome; health outcomes of --wait
// are not applies.
func (m *reconcileMetrics) applied(cluster, app string, a apply.Action) {
	if a == apply.Healthy || a == apply.Unhealthy {
		return
	}
	m.objects.WithLabelValues(cluster, app, string(a)).Inc()
}

// pass records a pass's duration and result.
func (m *reconcileMetrics) pass(d time.Duration, ok bool) {
	m.duration.Observe(d.Seconds())
	result := "succeeded"
	if !ok {
		result = "failed"
	}
	m.passes.WithLabelValues(result).Inc()
}

// keepOnly drops the series of (cluster, app) pairs r no longer renders.
func (m *reconcileMetrics) keepOnly(r *rendered) {
	now := map[[2]string]bool{}
	for _, res := range r.results {
		now[[2]string{res.Cluster.Name, res.App}] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.seen {
		if now[k] {
			continue
		}
		delete(m.seen, k)
		labels := prometheus.Labels{"cluster": k[0], "app": k[1]}
		for _, v := range []*prometheus.GaugeVec{m.lastPass, m.lastSuccess, m.drifted, m.revision} {
			v.Delete(labels)
		}
		m.objects.DeletePartialMatch(labels)
	}
}

// healthFailures is how many passes in a row may fail before reaching a
// cluster until /healthz says 503.
const healthFailures = 3

// health is what /healthz answers: the loop runs, and passes reach the
// clusters.
type health struct {
	mu       sync.Mutex
	stopped  bool
	failures int
}

// passed records whether a pass got as far as the clusters (fleet file
// read, render done, not refused).
func (h *health) passed(ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ok {
		h.failures = 0
	} else {
		h.failures++
	}
}

func (h *health) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
}

func (h *health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	stopped, failures := h.stopped, h.failures
	h.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch {
	case stopped:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "stopping")
	case failures >= healthFailures:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "the last %d passes failed before reaching any cluster (fleet file, render, protected group); see the logs\n", failures)
	default:
		fmt.Fprintln(w, "ok")
	}
}

// serve starts the metrics server on addr; stop shuts it down.
func (o *ReconcileOptions) serve(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(o.metrics.reg, promhttp.HandlerOpts{Registry: o.metrics.reg}))
	mux.Handle("/healthz", o.health)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	msg := fmt.Sprintf("serving metrics on http://%s/metrics and health on /healthz", ln.Addr())
	if o.LogFormat == "json" {
		writeEvent(o.apply.Out, LoopEvent{Type: "reconcile", Msg: msg, Addr: ln.Addr().String()})
	} else {
		fmt.Fprintln(o.apply.ErrOut, msg)
	}
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
