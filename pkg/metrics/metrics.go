// Package metrics is what the reconcile loop serves over HTTP: Prometheus
// metrics of its passes on /metrics (Reconcile), and whether it is
// healthy on /healthz (Health).
package metrics

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// prefix starts the name of every metric reconcile serves.
const prefix = "kubectl_fleet_reconcile_"

// Reconcile are the Prometheus metrics of the reconcile loop, in a
// registry of their own (with the Go and process collectors). Its methods
// are safe for concurrent use.
type Reconcile struct {
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

// NewReconcile returns the metrics, none recorded yet.
func NewReconcile() *Reconcile {
	app := []string{"cluster", "app"}
	m := &Reconcile{
		reg: prometheus.NewRegistry(),
		lastPass: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: prefix + "last_pass_timestamp_seconds",
			Help: "When the last pass checked or applied the app on the cluster (Unix time)."}, app),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: prefix + "last_pass_success",
			Help: "1 if the last pass went through for the app on the cluster (checked and left alone, or applied with every gate passed), 0 if it failed; drift is in drifted_objects."}, app),
		drifted: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: prefix + "drifted_objects",
			Help: "Objects of the app on the cluster that drifted from the render or are missing, as the last check found them (0 after a successful apply)."}, app),
		revision: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: prefix + "revision",
			Help: "The app's current revision on the cluster, as the last pass saw or recorded it."}, app),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: prefix + "objects_applied_total",
			Help: "Objects applied to the cluster for the app, by outcome (created, configured, unchanged, pruned, failed, ...)."}, append(app, "action")),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: prefix + "pass_duration_seconds",
			Help: "How long passes took, rendering, checking and applying.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 12)}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: prefix + "passes_total",
			Help: "Passes done, by result (succeeded, failed)."}, []string{"result"}),
		seen: map[[2]string]bool{},
	}
	m.reg.MustRegister(m.lastPass, m.lastSuccess, m.drifted, m.revision, m.objects, m.duration, m.passes,
		// The Go collector's defaults and the collector's GC metrics: the
		// heap live after the last collection (go_gc_heap_live_bytes) is
		// what a long-running reconcile holds, without the garbage that
		// go_memstats_heap_alloc_bytes counts until the next collection.
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsGC)), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, r := range []string{"succeeded", "failed"} {
		m.passes.WithLabelValues(r)
	}
	return m
}

// App records a pass's outcome for an app on a cluster; revision 0 leaves
// the revision as it was.
func (m *Reconcile) App(cluster, app string, at time.Time, ok bool, revision int) {
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

// Drift records how many objects of an app drifted.
func (m *Reconcile) Drift(cluster, app string, n int) {
	m.drifted.WithLabelValues(cluster, app).Set(float64(n))
}

// Applied counts an object's apply outcome; health outcomes of --wait
// are not applies.
func (m *Reconcile) Applied(cluster, app, a string) {
	if a == string(apply.Healthy) || a == string(apply.Unhealthy) {
		return
	}
	m.objects.WithLabelValues(cluster, app, a).Inc()
}

// Pass records a pass's duration and result.
func (m *Reconcile) Pass(d time.Duration, ok bool) {
	m.duration.Observe(d.Seconds())
	result := "succeeded"
	if !ok {
		result = "failed"
	}
	m.passes.WithLabelValues(result).Inc()
}

// KeepOnly drops the series of the (cluster, app) pairs that are not
// among results, the last render's.
func (m *Reconcile) KeepOnly(results []render.Result) {
	now := map[[2]string]bool{}
	for _, res := range results {
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

// Serve serves m on /metrics and h on /healthz from ln, until stop.
func Serve(ln net.Listener, m *Reconcile, h *Health) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.Handle("/healthz", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}
