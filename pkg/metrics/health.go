package metrics

import (
	"fmt"
	"net/http"
	"sync"
)

// healthFailures is how many passes in a row may fail before reaching a
// cluster until /healthz says 503.
const healthFailures = 3

// Health is what /healthz answers: the loop runs, and its passes reach
// the clusters. The zero Health is healthy.
type Health struct {
	mu       sync.Mutex
	stopped  bool
	failures int
}

// Passed records whether a pass got as far as the clusters (fleet file
// read, render done, not refused).
func (h *Health) Passed(ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ok {
		h.failures = 0
	} else {
		h.failures++
	}
}

// Stop says the loop is stopping: /healthz says 503 from now on.
func (h *Health) Stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
}

// ServeHTTP answers 200 "ok", or 503 and why.
func (h *Health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
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
