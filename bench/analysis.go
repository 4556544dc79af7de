package main

import (
	"context"
	"fmt"
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
	prom, err := b.startPrometheus(ctx)
	if err != nil {
		return err
	}
	defer prom.Stop()
	saved := b.serverCPU
	b.serverCPU = func() time.Duration { return procCPU(prom.PID()) }
	defer func() { b.serverCPU = saved }()
	bin := filepath.Join(b.bin, "analyse")
	args := []string{"-prometheus", prom.URL, "-clusters", strconv.Itoa(n), "-measurements", strconv.Itoa(analysisMeasurements)}
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
// built (once) into the control plane's cache when -bin-dir lacks it.
func (b *bench) startPrometheus(ctx context.Context) (*testenv.Prometheus, error) {
	bin := b.kbin
	if _, err := os.Stat(filepath.Join(bin, "prometheus")); err != nil {
		build := exec.CommandContext(ctx, filepath.Join(b.repo, "hack", "controlplane", "build.sh"), "prometheus")
		build.Stderr = os.Stderr
		out, err := build.Output()
		if err != nil {
			return nil, fmt.Errorf("building Prometheus: %w", err)
		}
		bin = strings.TrimSpace(string(out))
	}
	return testenv.StartPrometheus(ctx, testenv.PrometheusOptions{BinDir: bin, Dir: filepath.Join(b.work, "prometheus"), ScrapeInterval: 15 * time.Second})
}
