package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Prometheus is a real Prometheus on loopback (hack/controlplane/build.sh
// prometheus), scraping the targets a test names every ScrapeInterval:
// what an analysis queries in the e2e suite.
type Prometheus struct {
	// URL is its API's base URL (http://127.0.0.1:PORT).
	URL  string
	env  *Env
	proc *process
}

// PrometheusOptions say where the binary is and what it scrapes.
type PrometheusOptions struct {
	BinDir string
	// Targets are host:port addresses serving /metrics in the text format.
	Targets []string
	// ScrapeInterval defaults to 1s.
	ScrapeInterval time.Duration
}

// StartPrometheus starts Prometheus, with its TSDB in the Env's folder,
// and waits until it is ready; it stops with the Env (or Stop).
func (e *Env) StartPrometheus(ctx context.Context, o PrometheusOptions) (*Prometheus, error) {
	interval := o.ScrapeInterval
	if interval <= 0 {
		interval = time.Second
	}
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(e.opts.Dir, "prometheus-")
	if err != nil {
		return nil, err
	}
	quoted := make([]string, len(o.Targets))
	for i, t := range o.Targets {
		quoted[i] = strconv.Quote(t)
	}
	config := fmt.Sprintf("global: {scrape_interval: %s, evaluation_interval: %s}\nscrape_configs:\n  - job_name: clusters\n    static_configs: [{targets: [%s]}]\n", interval, interval, strings.Join(quoted, ", "))
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	p, err := e.startWith("prometheus-"+filepath.Base(dir), filepath.Join(o.BinDir, "prometheus"), nil,
		"--config.file="+configPath, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	if err != nil {
		return nil, err
	}
	prom := &Prometheus{URL: "http://" + addr, env: e, proc: p}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(prom.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return prom, nil
			}
		}
		select {
		case <-p.done:
			data, _ := os.ReadFile(p.log)
			return nil, fmt.Errorf("prometheus exited:\n%s", data)
		case <-ctx.Done():
			prom.Stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			prom.Stop()
			return nil, fmt.Errorf("prometheus not ready in 60s: %v", err)
		}
	}
}

// Stop stops Prometheus.
func (p *Prometheus) Stop() { p.env.stopOwn(p.proc, 10*time.Second) }

// Logs is Prometheus's log.
func (p *Prometheus) Logs() string {
	data, _ := os.ReadFile(p.proc.log)
	return string(data)
}
