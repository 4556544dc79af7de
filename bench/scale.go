package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv/standin"
	fleetstats "github.com/kubectl-fleet/kubectl-fleet/pkg/stats"
)

// The scaling run (-scale): the same rollout (create, no-op, a fifth
// changed, diff, status) with kubectl fleet on fleets of growing size,
// on real kube-apiservers as far as the machine carries them (-scale-real)
// and on the stand-in (package testenv/standin) at every size. Per run it
// records the plugin's wall time, CPU (rusage), peak RSS, peak open file
// descriptors (/proc/PID/fd, sampled), peak goroutines (its
// KUBECTL_FLEET_STATS hook) and the requests the clusters answered.

// scaleScenarios are the rollout's steps, in order.
var scaleScenarios = []struct{ id, title string }{
	{"create", "apply, create (a new namespace and app)"},
	{"noop", "apply, no-op"},
	{"noop-batched", "apply, no-op, production in batches [1, 1%, 10%, 100%]"},
	{"change", "apply, a fifth of the objects changed"},
	{"diff", "diff of the unchanged fleet"},
	{"status", "status"},
}

// Backends of the scaling run.
const (
	backendReal    = "real"
	backendStandin = "standin"
)

// scaleRun is one measured kubectl fleet run.
type scaleRun struct {
	wall, cpu, serverCPU time.Duration
	rss                  int64
	// heap and stacks are the plugin's peaks of Go heap objects and of
	// goroutine stacks (its KUBECTL_FLEET_STATS hook): what its RSS is.
	heap, stacks    uint64
	fds, goroutines int
	requests        int64
	// connErrors are connections the stand-in saw fail (TLS handshakes
	// the plugin gave up on, mostly).
	connErrors int64
	// failure is the end of the plugin's stderr when it exited with an
	// unexpected code (some clusters failed), else "".
	failure string
	// warnings are the lines of the plugin's stderr that begin
	// "warning:" (a lock it could not release, say), and the first one.
	warnings     int
	firstWarning string
}

// scaleRow sums up the runs of one scenario at one size on one backend.
type scaleRow struct {
	Backend    string  `json:"backend"`
	Clusters   int     `json:"clusters"`
	Scenario   string  `json:"scenario"`
	Runs       int     `json:"runs"`
	Wall       float64 `json:"wallSeconds"`
	CPU        float64 `json:"cpuSeconds"`
	ServerCPU  float64 `json:"serverCpuSeconds"`
	RSS        int64   `json:"peakRSSBytes"`
	FDs        int     `json:"peakFDs"`
	Goroutines int     `json:"peakGoroutines"`
	// Heap and Stacks are the peaks of the Go heap's objects and of the
	// goroutines' stacks, in bytes (medians).
	Heap   int64 `json:"peakHeapBytes"`
	Stacks int64 `json:"peakStackBytes"`
	// RequestsPerCluster is the median of the requests the clusters
	// answered during a run, divided by their number.
	RequestsPerCluster float64 `json:"requestsPerCluster"`
	// ConnErrors is the most connection errors the stand-in saw in a run.
	ConnErrors int64 `json:"connErrors,omitempty"`
	// Failed counts the runs in which the plugin exited with an error
	// (some clusters failed); Failure is what the last of them said.
	Failed  int    `json:"failed,omitempty"`
	Failure string `json:"failure,omitempty"`
}

// scaleSetup is what one backend cost at one size.
type scaleSetup struct {
	Backend  string  `json:"backend"`
	Clusters int     `json:"clusters"`
	Start    float64 `json:"startSeconds"`
	// APIServerRSS and EtcdRSS are peak resident sets (VmHWM) of the
	// real servers: the mean of the kube-apiservers, and etcd's.
	APIServerRSS int64 `json:"apiserverPeakRSSBytes,omitempty"`
	EtcdRSS      int64 `json:"etcdPeakRSSBytes,omitempty"`
}

// backend is a running set of clusters of either kind.
type backend struct {
	kubeconfig string
	// requests is the number of requests every cluster has answered so
	// far, summed.
	requests func() (int64, error)
	// serverCPU is the CPU the servers have used so far.
	serverCPU func() time.Duration
	// dropNamespace forgets a create run's namespace (stand-in only).
	dropNamespace func(ns string)
	// connErrors counts connection errors so far (stand-in only), and
	// connErrorKinds by what the servers said.
	connErrors     func() int64
	connErrorKinds func() map[string]int64
	stop           func()
	setup          scaleSetup
	pids           func() map[string]int
}

// scaleScenarios runs the rollout at every -scale size.
func (b *bench) scaleRuns(ctx context.Context) error {
	src := filepath.Join(b.work, "scale-src")
	if err := writeSource(src, b.o.objects); err != nil {
		return err
	}
	for _, n := range b.o.scale {
		kinds := []string{backendStandin}
		if n <= b.o.scaleReal {
			kinds = []string{backendReal, backendStandin}
		}
		for _, kind := range kinds {
			if err := b.scaleSize(ctx, kind, n, src); err != nil {
				if len(b.scaleRows) == 0 {
					return fmt.Errorf("scaling, %d clusters on %s: %w", n, kind, err)
				}
				// Report the sizes done (a Ctrl-C during 1,000 clusters
				// keeps the smaller ones).
				b.scaleStopped = fmt.Sprintf("%d clusters on %s: %v", n, kind, err)
				progress("scaling stopped at %s", b.scaleStopped)
				return nil
			}
		}
	}
	return nil
}

// startBackend starts n clusters of kind behind the latency proxy.
func (b *bench) startBackend(ctx context.Context, kind string, n int) (*backend, error) {
	dir := filepath.Join(b.work, fmt.Sprintf("scale-%s-%d", kind, n))
	t0 := time.Now()
	if kind == backendStandin {
		env, err := standin.Start(ctx, standin.Options{Clusters: n, ContextPrefix: "scale-c", Dir: dir, Latency: b.o.rtt / 2})
		if err != nil {
			return nil, err
		}
		return &backend{
			kubeconfig: env.Kubeconfig,
			requests: func() (int64, error) {
				var sum int64
				for _, r := range env.Requests() {
					sum += r
				}
				return sum, nil
			},
			serverCPU: selfCPU,
			dropNamespace: func(ns string) {
				for _, c := range env.Clusters {
					c.DropNamespace(ns)
				}
			},
			connErrors:     env.ServerErrors,
			connErrorKinds: env.ServerErrorKinds,
			stop:           env.Stop,
			setup:          scaleSetup{Backend: kind, Clusters: n, Start: time.Since(t0).Seconds()},
		}, nil
	}
	env, err := testenv.Start(ctx, testenv.Options{BinDir: b.kbin, Clusters: n, ContextPrefix: "scale-c", Dir: dir, Latency: b.o.rtt / 2, Ready: 10 * time.Minute})
	if err != nil {
		return nil, err
	}
	go func() {
		<-ctx.Done()
		env.Stop()
	}()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 2}}
	return &backend{
		kubeconfig: env.Kubeconfig,
		requests: func() (int64, error) {
			return scrapeRequests(ctx, client, env.Clusters, env.Token)
		},
		serverCPU: func() time.Duration {
			var sum time.Duration
			for _, pid := range env.PIDs() {
				sum += procCPU(pid)
			}
			return sum
		},
		dropNamespace: func(string) {},
		connErrors:    func() int64 { return 0 },
		stop:          env.Stop,
		setup:         scaleSetup{Backend: kind, Clusters: n, Start: time.Since(t0).Seconds()},
		pids:          env.PIDs,
	}, nil
}

// scaleSize runs the rollout -scale-reps times on n clusters of kind.
func (b *bench) scaleSize(ctx context.Context, kind string, n int, src string) error {
	progress("scaling: starting %d %s clusters behind a %s RTT proxy", n, kind, b.o.rtt)
	be, err := b.startBackend(ctx, kind, n)
	if err != nil {
		return err
	}
	defer be.stop()
	progress("scaling: %d %s clusters up in %.1fs", n, kind, be.setup.Start)
	sr, err := b.newScaleRunner(be, kind, n, src)
	if err != nil {
		return err
	}
	if _, err := setRevision(src, b.o.objects, 1); err != nil {
		return err
	}
	progress("scaling: applying the initial state on %d %s clusters (untimed, warming discovery caches)", n, kind)
	r, err := b.measured(ctx, be, sr.bin, sr.apply(sr.steady, "scale"), sr.env, "", nil)
	if err != nil {
		return fmt.Errorf("initial state: %w", err)
	}
	progress("scaling: initial state on %d %s clusters: %s", n, kind, r.describe(n))
	runs := map[string][]scaleRun{}
	reps := b.o.scaleReps
	if n > 100 {
		reps = max(1, reps/3) // minutes per run: fewer repetitions
	}
	for rep := range reps {
		if err := b.scaleRep(ctx, sr, rep, reps, runs); err != nil {
			return err
		}
	}
	for _, sc := range scaleScenarios {
		b.scaleRows = append(b.scaleRows, summarizeScale(kind, n, sc.id, runs[sc.id]))
	}
	if kind == backendStandin && n == slices.Max(b.o.scale) && len(b.o.scale) > 1 {
		if err := b.scaleDefaultParallel(ctx, sr); err != nil {
			return err
		}
	}
	if be.connErrorKinds != nil {
		for what, count := range be.connErrorKinds() {
			progress("scaling %s %d: the servers said %d times: %s", kind, n, count, what)
		}
	}
	recordServerRSS(be)
	b.scaleSetups = append(b.scaleSetups, be.setup)
	return nil
}

// scaleRunner is what the runs of one fleet size share: its clusters, the
// plugin's environment (a discovery cache per size), the steady fleet file
// and the plugin's arguments.
type scaleRunner struct {
	be        *backend
	kind, src string
	n         int
	dir, bin  string
	env       []string
	cs        []cluster
	steady    string
	// batched is steady with production in batches.
	batched     string
	par, conc   string
	cpuProfiles string
}

func (b *bench) newScaleRunner(be *backend, kind string, n int, src string) (*scaleRunner, error) {
	sr := &scaleRunner{be: be, kind: kind, n: n, src: src, dir: filepath.Join(b.work, fmt.Sprintf("scale-%s-%d", kind, n)), bin: filepath.Join(b.bin, "kubectl-fleet"),
		cs: fleetClusters(n, 0, "scale-c"), par: strconv.Itoa(n), conc: strconv.Itoa(b.o.concurrency), cpuProfiles: b.o.cpuProfiles}
	home := filepath.Join(sr.dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	sr.env = slices.DeleteFunc(slices.Clone(b.env), func(kv string) bool {
		return strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "HOME=")
	})
	sr.env = append(sr.env, "KUBECONFIG="+be.kubeconfig, "HOME="+home)
	var err error
	if sr.steady, err = sr.fleetFor("scale"); err != nil {
		return nil, err
	}
	sr.batched = filepath.Join(sr.dir, "fleet-batched.yaml")
	return sr, os.WriteFile(sr.batched, []byte(batchedFleetYAML(sr.cs, "scale")), 0o644)
}

// fleetFor writes the fleet file of the size's clusters with app ns.
func (sr *scaleRunner) fleetFor(ns string) (string, error) {
	f := filepath.Join(sr.dir, "fleet-"+ns+".yaml")
	return f, os.WriteFile(f, []byte(fleetYAML(sr.cs, ns)), 0o644)
}

func (sr *scaleRunner) apply(ff, app string) []string { return sr.applyWith(ff, app, true) }

// applyWith is apply's arguments, every cluster at once (--parallel N)
// when all, else with the plugin's default --parallel.
func (sr *scaleRunner) applyWith(ff, app string, all bool) []string {
	args := []string{"apply", "-F", ff, "-k", sr.src, "--name", app, "--concurrency", sr.conc, "--yes"}
	if all {
		args = append(args, "--parallel", sr.par)
	}
	return args
}

func (sr *scaleRunner) read(verb string) []string { return sr.readWith(verb, true) }

// readWith is read's arguments, every cluster at once when all, else
// with the plugin's default --parallel.
func (sr *scaleRunner) readWith(verb string, all bool) []string {
	args := []string{verb, "-F", sr.steady, "-k", sr.src, "--name", "scale", "--concurrency", sr.conc}
	if all {
		args = append(args, "--parallel", sr.par)
	}
	return args
}

// scaleRep runs repetition rep of the rollout, adding each step's run to
// runs.
func (b *bench) scaleRep(ctx context.Context, sr *scaleRunner, rep, reps int, runs map[string][]scaleRun) error {
	ns := fmt.Sprintf("create-%d", rep)
	ff, err := sr.fleetFor(ns)
	if err != nil {
		return err
	}
	steps := []struct {
		id     string
		args   []string
		ok     []int
		before func() error
	}{
		{"create", sr.apply(ff, ns), nil, nil},
		{"noop", sr.apply(sr.steady, "scale"), nil, nil},
		{"noop-batched", sr.apply(sr.batched, "scale"), nil, nil},
		{"change", sr.apply(sr.steady, "scale"), nil, func() error { _, err := setRevision(sr.src, b.o.objects, rep+2); return err }},
		{"diff", sr.read("diff"), nil, nil},
		// Without controllers the Deployments never become available:
		// status exits 1 (not every object Current).
		{"status", sr.read("status"), []int{1}, nil},
	}
	for _, st := range steps {
		if st.before != nil {
			if err := st.before(); err != nil {
				return err
			}
		}
		profile := ""
		if sr.cpuProfiles != "" {
			profile = filepath.Join(sr.cpuProfiles, fmt.Sprintf("scale-%s-%d-%s-%d.pprof", sr.kind, sr.n, st.id, rep))
		}
		r, err := b.measured(ctx, sr.be, sr.bin, st.args, sr.env, profile, st.ok)
		if err != nil {
			return fmt.Errorf("%s: %w", st.id, err)
		}
		runs[st.id] = append(runs[st.id], r)
		progress("scaling %s %d %s %d/%d: %s", sr.kind, sr.n, st.id, rep+1, reps, r.describe(sr.n))
	}
	sr.be.dropNamespace(ns)
	return nil
}

// defaultParallel is the suffix of the scenarios run at the largest size
// with the plugin's default --parallel, as a user who does not set it
// runs them.
const defaultParallel = "-default-parallel"

// scaleDefaultParallel runs create, a no-op and status once more at sr's
// size without --parallel: the plugin's default, not every cluster at
// once.
func (b *bench) scaleDefaultParallel(ctx context.Context, sr *scaleRunner) error {
	ns := "create-default"
	ff, err := sr.fleetFor(ns)
	if err != nil {
		return err
	}
	for _, st := range []struct {
		id   string
		args []string
		ok   []int
	}{{"create", sr.applyWith(ff, ns, false), nil}, {"noop", sr.applyWith(sr.steady, "scale", false), nil}, {"status", sr.readWith("status", false), []int{1}}} {
		profile := ""
		if sr.cpuProfiles != "" {
			profile = filepath.Join(sr.cpuProfiles, fmt.Sprintf("scale-%s-%d-%s%s.pprof", sr.kind, sr.n, st.id, defaultParallel))
		}
		r, err := b.measured(ctx, sr.be, sr.bin, st.args, sr.env, profile, st.ok)
		if err != nil {
			return fmt.Errorf("%s, default --parallel: %w", st.id, err)
		}
		progress("scaling %s %d %s, default --parallel: %s", sr.kind, sr.n, st.id, r.describe(sr.n))
		b.scaleRows = append(b.scaleRows, summarizeScale(sr.kind, sr.n, st.id+defaultParallel, []scaleRun{r}))
	}
	sr.be.dropNamespace(ns)
	return nil
}

// recordServerRSS notes the peak memory of etcd and of the average API
// server in the size's setup (real servers only).
func recordServerRSS(be *backend) {
	if be.pids == nil {
		return
	}
	var sum, n int64
	for name, pid := range be.pids() {
		hwm := fleetstats.PeakRSSOf(strconv.Itoa(pid))
		switch {
		case name == "etcd":
			be.setup.EtcdRSS = hwm
		case strings.HasPrefix(name, "kube-apiserver"):
			sum, n = sum+hwm, n+1
		}
	}
	if n > 0 {
		be.setup.APIServerRSS = sum / n
	}
}

// measured runs the plugin once: wall time, CPU and peak RSS from its
// rusage, peak open file descriptors sampled from /proc every 10 ms, peak
// goroutines from its KUBECTL_FLEET_STATS hook, and the requests the
// clusters answered meanwhile. Exit codes in ok count as success besides 0.
func (b *bench) measured(ctx context.Context, be *backend, bin string, args, env []string, cpuProfile string, ok []int) (scaleRun, error) {
	f, err := os.CreateTemp(b.work, "stats-*.json")
	if err != nil {
		return scaleRun{}, err
	}
	statsFile := f.Name()
	_ = f.Close()
	defer os.Remove(statsFile)
	env = append(slices.Clone(env), fleetstats.Env+"="+statsFile)
	if cpuProfile != "" {
		env = append(env, "KUBECTL_FLEET_CPUPROFILE="+cpuProfile, fleetstats.HeapEnv+"="+strings.TrimSuffix(cpuProfile, ".pprof")+".heap", fleetstats.GoroutinesEnv+"="+strings.TrimSuffix(cpuProfile, ".pprof")+".goroutines")
	}
	before, err := be.requests()
	if err != nil {
		return scaleRun{}, err
	}
	cpu0, conn0 := be.serverCPU(), be.connErrors()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ownGroup(cmd)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return scaleRun{}, err
	}
	peakFDs := sampleFDs(cmd.Process.Pid)
	err = cmd.Wait()
	wall := time.Since(t0)
	fds := peakFDs()
	if b.o.keep {
		if f, ferr := os.CreateTemp(b.work, "stderr-*.txt"); ferr == nil {
			_, _ = f.Write(stderr.Bytes())
			_ = f.Close()
			progress("%s %s: its stderr is in %s", filepath.Base(bin), strings.Join(args, " "), f.Name())
		}
	}
	warnings, first := countWarnings(stderr.String())
	failure, err := runFailure(ctx, bin, args, err, ok, stderr.String())
	if err != nil {
		return scaleRun{}, err
	}
	serverCPU := be.serverCPU() - cpu0
	after, err := be.requests()
	if err != nil {
		return scaleRun{}, err
	}
	fig, err := fleetstats.Read(statsFile)
	if err != nil {
		return scaleRun{}, fmt.Errorf("reading the plugin's %s: %w", fleetstats.Env, err)
	}
	ps := cmd.ProcessState
	// The plugin's own high-water mark: the rusage a parent gets counts
	// the parent's memory too on Linux (a vfork'd child shares it until
	// it execs), and this parent serves the stand-in's clusters.
	peak := fig.PeakRSS
	if peak <= 0 {
		peak = maxRSS(ps)
	}
	return scaleRun{wall: wall, cpu: ps.UserTime() + ps.SystemTime(), serverCPU: serverCPU, rss: peak, heap: fig.PeakHeap, stacks: fig.PeakStacks, fds: fds, goroutines: fig.PeakGoroutines, requests: after - before, connErrors: be.connErrors() - conn0, failure: failure, warnings: warnings, firstWarning: first}, nil
}

// describe is the run's figures on n clusters, for a progress line.
func (r scaleRun) describe(n int) string {
	return fmt.Sprintf("%6.2fs  cpu %5.2fs  %s (heap %s, stacks %s)  fds %d  goroutines %d  %.1f req/cluster  servers' cpu %.2fs  connection errors %d  warnings %d%s",
		r.wall.Seconds(), r.cpu.Seconds(), rss(r.rss), rss(int64(r.heap)), rss(int64(r.stacks)), r.fds, r.goroutines, float64(r.requests)/float64(n), r.serverCPU.Seconds(), r.connErrors, r.warnings, r.firstWarning)
}

// countWarnings counts the lines of stderr that begin "warning:", and
// returns the first (after ": ", for a progress line).
func countWarnings(stderr string) (n int, first string) {
	for l := range strings.Lines(stderr) {
		if strings.HasPrefix(l, "warning:") {
			if n++; n == 1 {
				first = ", the first: " + strings.TrimSpace(l)
			}
		}
	}
	return n, first
}

// sampleFDs counts process pid's open file descriptors every 10 ms until
// the returned function is called, which returns the peak.
func sampleFDs(pid int) func() int {
	done := make(chan struct{})
	peakFDs := make(chan int, 1)
	go func() {
		peak := 0
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
				peak = max(peak, len(es))
			}
			select {
			case <-done:
				peakFDs <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() int {
		close(done)
		return <-peakFDs
	}
}

// runFailure sorts a run's exit: nil and the exit codes in ok are
// success; an exit code otherwise is some clusters failing, a finding
// returned as failure; anything else (not started, killed, interrupted)
// is an error.
func runFailure(ctx context.Context, bin string, args []string, err error, ok []int, stderr string) (failure string, _ error) {
	var exit *exec.ExitError
	if err == nil || errors.As(err, &exit) && slices.Contains(ok, exit.ExitCode()) {
		return "", nil
	}
	msg := strings.TrimSpace(stderr)
	if exit == nil || ctx.Err() != nil {
		if len(msg) > 2000 {
			msg = "…" + msg[len(msg)-2000:]
		}
		return "", fmt.Errorf("%s %s: %w\n%s", bin, strings.Join(args, " "), err, msg)
	}
	// Some clusters failed: a finding, not the end of the run.
	if len(msg) > 600 {
		msg = "…" + msg[len(msg)-600:]
	}
	failure = fmt.Sprintf("exit %d: %s", exit.ExitCode(), msg)
	progress("kubectl fleet %s failed on some clusters: %s", args[0], failure)
	return failure, nil
}

func summarizeScale(kind string, n int, scenario string, runs []scaleRun) scaleRow {
	r := scaleRow{Backend: kind, Clusters: n, Scenario: scenario, Runs: len(runs)}
	if len(runs) == 0 {
		return r
	}
	med := func(f func(scaleRun) float64) float64 {
		xs := make([]float64, len(runs))
		for i, x := range runs {
			xs[i] = f(x)
		}
		return median(xs)
	}
	r.Wall = med(func(x scaleRun) float64 { return x.wall.Seconds() })
	r.CPU = med(func(x scaleRun) float64 { return x.cpu.Seconds() })
	r.ServerCPU = med(func(x scaleRun) float64 { return x.serverCPU.Seconds() })
	r.RSS = int64(med(func(x scaleRun) float64 { return float64(x.rss) }))
	r.FDs = int(med(func(x scaleRun) float64 { return float64(x.fds) }))
	r.Goroutines = int(med(func(x scaleRun) float64 { return float64(x.goroutines) }))
	r.Heap = int64(med(func(x scaleRun) float64 { return float64(x.heap) }))
	r.Stacks = int64(med(func(x scaleRun) float64 { return float64(x.stacks) }))
	r.RequestsPerCluster = med(func(x scaleRun) float64 { return float64(x.requests) }) / float64(n)
	for _, x := range runs {
		r.ConnErrors = max(r.ConnErrors, x.connErrors)
		if x.failure != "" {
			r.Failed++
			r.Failure = x.failure
		}
	}
	return r
}

// scrapeRequests sums apiserver_request_total over the real clusters'
// /metrics, less the scrape itself: every request they answered so far,
// theirs to themselves included (a few a second at rest: leases,
// endpoints).
func scrapeRequests(ctx context.Context, client *http.Client, cs []testenv.Cluster, token string) (int64, error) {
	var (
		mu    sync.Mutex
		total int64
		wg    sync.WaitGroup
		errs  []error
		sem   = make(chan struct{}, 8)
	)
	for _, c := range cs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			n, err := scrapeOne(ctx, client, c.Direct+"/metrics", token)
			mu.Lock()
			defer mu.Unlock()
			total += n
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return total - int64(len(cs)), errors.Join(errs...)
}

// scrapeOne sums a real cluster's apiserver_request_total series.
func scrapeOne(ctx context.Context, client *http.Client, url, token string) (int64, error) {
	var sum float64
	err := scrape(ctx, client, url, token, func(series string, v float64) {
		if strings.HasPrefix(series, "apiserver_request_total{") {
			sum += v
		}
	})
	return int64(sum), err
}

// scrape reads a Prometheus text page (with token, when set, as the
// bearer) and gives each sample's series (its name and labels) and value
// to each.
func scrape(ctx context.Context, client *http.Client, url, token string, each func(series string, value float64)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			each(line[:i], v)
		}
	}
	return sc.Err()
}

// procCPU is the user and system time of process pid (Linux /proc; 0
// elsewhere).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}
