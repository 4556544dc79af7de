// Package stats is make bench's hook into the plugin: with the hidden
// environment variable KUBECTL_FLEET_STATS set to a file, the plugin
// samples its goroutine count every few milliseconds while it runs and
// writes the peak there, as JSON, when it exits. Nothing is sampled or
// written without it. It measures; it changes nothing the plugin does.
package stats

import (
	"encoding/json"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Env is the environment variable naming the file the figures go to.
const Env = "KUBECTL_FLEET_STATS"

// HeapEnv names a file for a heap profile (go tool pprof reads it) taken
// when the live heap peaks: written again each time the heap live after a
// collection grows by a fifth over the last profile's. Sampled only with
// Env set too.
const HeapEnv = "KUBECTL_FLEET_HEAPPROFILE"

// GoroutinesEnv names a file for a goroutine profile taken when the
// goroutines peak: written again each time they grow by a fifth over the
// last profile's. Sampled only with Env set too.
const GoroutinesEnv = "KUBECTL_FLEET_GOROUTINEPROFILE"

// Interval is how often the goroutines are counted.
const Interval = 5 * time.Millisecond

// Figures are what one run writes.
type Figures struct {
	// PeakGoroutines is the most goroutines seen at once.
	PeakGoroutines int `json:"peakGoroutines"`
	// Samples is how many times they were counted.
	Samples int `json:"samples"`
	// PeakRSS is the process's resident high-water mark in bytes (Linux
	// VmHWM, read at exit; 0 elsewhere). Unlike the rusage a parent
	// gets, it never counts the parent's memory, which a vfork'd child
	// carries until it execs.
	PeakRSS int64 `json:"peakRSS"`
	// PeakHeap is the most memory the Go heap's objects held at once
	// (live and not yet collected), in bytes, as sampled.
	PeakHeap uint64 `json:"peakHeap"`
	// PeakStacks is the most memory goroutine stacks held at once, in
	// bytes, as sampled.
	PeakStacks uint64 `json:"peakStacks"`
}

// Start starts sampling when Env names a file, and returns the function
// that stops it and writes the figures (a no-op without Env).
func Start() (stop func()) {
	path := os.Getenv(Env)
	if path == "" {
		return func() {}
	}
	var (
		mu   sync.Mutex
		f    Figures
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	heap, goroutines := peakProfiler(os.Getenv(HeapEnv), "heap"), peakProfiler(os.Getenv(GoroutinesEnv), "goroutine")
	mem := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}, {Name: "/gc/heap/live:bytes"}}
	sample := func() {
		n := runtime.NumGoroutine()
		metrics.Read(mem)
		mu.Lock()
		f.PeakGoroutines, f.Samples = max(f.PeakGoroutines, n), f.Samples+1
		f.PeakHeap, f.PeakStacks = max(f.PeakHeap, mem[0].Value.Uint64()), max(f.PeakStacks, mem[1].Value.Uint64())
		heap(mem[2].Value.Uint64())
		goroutines(uint64(n))
		mu.Unlock()
	}
	sample()
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(Interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() {
		sample()
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		f.PeakRSS = peakRSS()
		if b, err := json.Marshal(f); err == nil {
			_ = os.WriteFile(path, append(b, '\n'), 0o644)
		}
	}
}

// peakRSS is this process's peak resident set.
func peakRSS() int64 { return PeakRSSOf("self") }

// PeakRSSOf is the peak resident set of process pid ("self", or a number),
// VmHWM in /proc/<pid>/status, in bytes; 0 where there is none.
func PeakRSSOf(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// Read reads the figures a run wrote to path.
func Read(path string) (Figures, error) {
	var f Figures
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	return f, json.Unmarshal(b, &f)
}

// peakProfiler returns the sampler's step that writes the runtime's
// profile (pprof.Lookup's: "heap", "goroutine") to path whenever v, the
// figure it follows, grew by a fifth since the last one written (a no-op
// without path).
func peakProfiler(path, profile string) func(v uint64) {
	if path == "" {
		return func(uint64) {}
	}
	var written uint64
	return func(v uint64) {
		if v < written+written/5 || v == 0 {
			return
		}
		written = v
		if out, err := os.Create(path); err == nil {
			_ = pprof.Lookup(profile).WriteTo(out, 0)
			_ = out.Close()
		}
	}
}
