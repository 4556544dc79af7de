package main

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

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

// analysisMeasurements is how many measurements each cluster's analysis
// takes in the analysis scenario.
const analysisMeasurements = 3

// analysisScenario times n clusters' analyses, each measured
// analysisMeasurements times at once against a real Prometheus in its
// own process (hack/controlplane/build.sh prometheus), through
// pkg/analysis against a bare GET and JSON decode: what a measurement
// costs the plugin, in CPU and requests.
func (b *bench) analysisScenario(ctx context.Context, n int) error {
	prom, pid, stop, err := b.startPrometheus(ctx)
	if err != nil {
		return err
	}
	defer stop()
	saved := b.serverCPU
	b.serverCPU = func() time.Duration { return procCPU(pid) }
	defer func() { b.serverCPU = saved }()
	bin := filepath.Join(b.bin, "analyse")
	args := []string{"-prometheus", prom, "-clusters", strconv.Itoa(n), "-measurements", strconv.Itoa(analysisMeasurements)}
	return b.scenario(ctx, fmt.Sprintf("analyse-%d", n), []tool{
		{id: "fleet", command: fmt.Sprintf("%d clusters' analyses at once, %d measurements each, through pkg/analysis (the plugin's: substitution, client_golang's query, CEL)", n, analysisMeasurements), prepare: func(int) (string, []string, error) {
			return bin, args, nil
		}},
		{id: "floor", command: "the same queries as bare GETs, each answer decoded and compared", prepare: func(int) (string, []string, error) {
			return bin, append(args, "-floor"), nil
		}},
	}, nil)
}

// startPrometheus starts Prometheus on loopback with nothing to scrape,
// and returns its URL once it is ready, its process, and how to stop it.
func (b *bench) startPrometheus(ctx context.Context) (string, int, func(), error) {
	dir := filepath.Join(b.work, "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, nil, err
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte("global: {scrape_interval: 15s}\n"), 0o644); err != nil {
		return "", 0, nil, err
	}
	ports, err := testenv.FreePorts(1)
	if err != nil {
		return "", 0, nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	bin := filepath.Join(b.kbin, "prometheus")
	if _, err := os.Stat(bin); err != nil {
		// Not among -bin-dir's: built (once) into the control plane's cache.
		build := exec.CommandContext(ctx, filepath.Join(b.repo, "hack", "controlplane", "build.sh"), "prometheus")
		build.Stderr = os.Stderr
		out, err := build.Output()
		if err != nil {
			return "", 0, nil, fmt.Errorf("building Prometheus: %w", err)
		}
		bin = filepath.Join(strings.TrimSpace(string(out)), "prometheus")
	}
	cmd := exec.CommandContext(ctx, bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return "http://" + addr, cmd.Process.Pid, stop, nil
			}
		}
	}
	stop()
	return "", 0, nil, fmt.Errorf("prometheus was not ready in 60s")
}
