package report

import (
	"strings"
	"sync"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
)

// NewCollector gathers a run's apps and diffs for its report.
func NewCollector() *Collector {
	return &Collector{apps: map[string][]App{}, diffs: map[string]*strings.Builder{}, failures: map[string][]string{}, measured: map[string][]string{}}
}

// Collector gathers, per cluster, what a report shows beyond the
// summary: each app's outcome and the diffs, masked. A nil Collector
// gathers nothing. It is safe for concurrent use.
type Collector struct {
	mu    sync.Mutex
	apps  map[string][]App
	diffs map[string]*strings.Builder
	// failures are the objects that failed, by cluster and app.
	failures map[string][]string
	// measured are the analyses' measurements, by cluster, as said.
	measured map[string][]string
}

// Measured records a measurement of an analysis on a cluster, as its
// line says it ("analysis error-rate (3/10): 0.0042 successful (result
// < 0.01)").
func (c *Collector) Measured(cluster, line string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.measured[cluster] = append(c.measured[cluster], line)
}

// MeasurementsOf are a cluster's measurements, in the order taken.
func (c *Collector) MeasurementsOf(cluster string) []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.measured[cluster]
}

// App records an app's outcome on a cluster, with the objects that failed.
func (c *Collector) App(cluster string, a App) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.failures[cluster+"/"+a.Name]; len(f) > 0 {
		a.Error += "\n" + strings.Join(f, "\n")
	}
	c.apps[cluster] = append(c.apps[cluster], a)
}

// Failed records an object of an app that failed on a cluster.
func (c *Collector) Failed(cluster, app, failure string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures[cluster+"/"+app] = append(c.failures[cluster+"/"+app], failure)
}

// Diffs adds diffs to a cluster's; they must be masked (no
// --show-secrets).
func (c *Collector) Diffs(cluster string, diffs []diff.Object) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.diffs[cluster]
	if b == nil {
		b = &strings.Builder{}
		c.diffs[cluster] = b
	}
	for _, d := range diffs {
		diff.Print(b, d, diff.Plain)
	}
}

// Of is a cluster's apps and diff.
func (c *Collector) Of(cluster string) ([]App, string) {
	if c == nil {
		return nil, ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d := ""
	if b := c.diffs[cluster]; b != nil {
		d = b.String()
	}
	return c.apps[cluster], d
}

// Outcome is an app's outcome on a cluster, for a report.
func Outcome(app string, err error) App {
	if err != nil {
		return App{Name: app, State: "failed", Failed: true, Error: err.Error()}
	}
	return App{Name: app, State: "ok"}
}
