package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// run is one timed run of a command: its wall time and the peak resident
// memory of its largest process (children included: a shell loop's is its
// largest kustomize or kubectl), 0 where the OS does not say.
type run struct {
	wall   time.Duration
	maxRSS int64
	// cpu is the user and system time of the process and of the children
	// it waited for (a loop's kubectl and kustomize).
	cpu time.Duration
	// serverCPU is what the API servers and etcd used meanwhile.
	serverCPU time.Duration
}

// timed runs cmd (stdout discarded, stderr kept for errors) and times it
// from start to exit.
func timed(ctx context.Context, name string, args []string, env []string) (run, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ownGroup(cmd) // Ctrl-C ends the shell loops' children too
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "…" + msg[len(msg)-2000:]
		}
		return run{}, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, msg)
	}
	ps := cmd.ProcessState
	return run{wall: wall, maxRSS: maxRSS(ps), cpu: ps.UserTime() + ps.SystemTime()}, nil
}

// stats sums up the runs of one tool in one scenario.
type stats struct {
	Median, Min, Max float64 // seconds
	MaxRSS           int64   // bytes, the largest of the runs; 0 if unknown
	CPU              float64 // seconds of CPU, the median of the runs
	ServerCPU        float64 // seconds of the servers' CPU meanwhile, the median
	Runs             int
}

func summarize(runs []run) stats {
	if len(runs) == 0 {
		return stats{}
	}
	s, cpu, server := make([]float64, len(runs)), make([]float64, len(runs)), make([]float64, len(runs))
	var rss int64
	for i, r := range runs {
		s[i], cpu[i], server[i] = r.wall.Seconds(), r.cpu.Seconds(), r.serverCPU.Seconds()
		rss = max(rss, r.maxRSS)
	}
	med := median(s) // sorts s
	return stats{Median: med, Min: s[0], Max: s[len(s)-1], MaxRSS: rss, CPU: median(cpu), ServerCPU: median(server), Runs: len(s)}
}

// median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return m
}
