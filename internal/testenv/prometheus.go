package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Prometheus is a real Prometheus on loopback (hack/controlplane/build.sh
// prometheus), scraping the targets it was given every ScrapeInterval:
// what an analysis queries in the e2e suite and make bench.
type Prometheus struct {
	// URL is its API's base URL (http://127.0.0.1:PORT).
	URL  string
	cmd  *exec.Cmd
	done chan struct{} // closed once it exited
	log  string
}

// PrometheusOptions say where the binary is, where it keeps its TSDB and
// log, and what it scrapes.
type PrometheusOptions struct {
	BinDir, Dir string
	// Targets are host:port addresses serving /metrics in the text format.
	Targets []string
	// ScrapeInterval defaults to 1s.
	ScrapeInterval time.Duration
}

// StartPrometheus starts Prometheus and waits until it is ready; the
// caller stops it (Stop).
func StartPrometheus(ctx context.Context, o PrometheusOptions) (*Prometheus, error) {
	interval := o.ScrapeInterval
	if interval <= 0 {
		interval = time.Second
	}
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	quoted := make([]string, len(o.Targets))
	for i, t := range o.Targets {
		quoted[i] = strconv.Quote(t)
	}
	config := fmt.Sprintf("global: {scrape_interval: %s, evaluation_interval: %s}\nscrape_configs:\n  - job_name: clusters\n    static_configs: [{targets: [%s]}]\n", interval, interval, strings.Join(quoted, ", "))
	configPath := filepath.Join(o.Dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(o.Dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close() // the process has its own descriptor
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	cmd := exec.Command(filepath.Join(o.BinDir, "prometheus"),
		"--config.file="+configPath, "--storage.tsdb.path="+filepath.Join(o.Dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting prometheus: %w", err)
	}
	p := &Prometheus{URL: "http://" + addr, cmd: cmd, done: make(chan struct{}), log: log.Name()}
	go func() { _ = cmd.Wait(); close(p.done) }()
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := http.Get(p.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("prometheus exited:\n%s", p.Logs())
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("prometheus not ready in 60s: %v", err)
		}
	}
}

// PID is its process's.
func (p *Prometheus) PID() int { return p.cmd.Process.Pid }

// Stop stops Prometheus (SIGKILL: its TSDB is a throwaway).
func (p *Prometheus) Stop() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Logs is Prometheus's log.
func (p *Prometheus) Logs() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}
