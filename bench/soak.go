package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv/standin"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// The soak (make soak): reconcile, the mode meant to run for weeks,
// against -soak-clusters stand-in clusters for -soak, as a user deploys
// it (--correct-drift, --skip-unreachable, --metrics-addr). Meanwhile
// the soak edits an object on a cluster after every pass (drift, which
// the next pass must find and correct), changes the render every
// -soak-change-every passes (every cluster must be applied), and cuts one
// cluster off and back every -soak-flap-every passes. After every pass it
// records the plugin's peak RSS, Go heap, goroutines and open fds, read
// from the plugin's own /metrics (what an operator graphs), and its open
// connections (sockets in /proc/PID/fd). The soak fails if any of them
// grows past its level during the first -soak-warmup by more than
// -soak-tolerance, or if drift or a change goes unapplied.

// soakOptions are the soak's flags.
type soakOptions struct {
	duration, interval, warmup time.Duration
	clusters                   int
	changeEvery, flapEvery     int
	tolerance                  float64
	// parallel is reconcile's --parallel ("": its default).
	parallel string
	// delivered: the clusters are delivered through a registry.
	delivered bool
}

// flags defines the soak's flags on fs.
func (o *soakOptions) flags(fs *flag.FlagSet) {
	fs.DurationVar(&o.duration, "soak", 0, "run the soak for this long (make soak: 1h): reconcile against -soak-clusters stand-in clusters with drift, render changes and a flapping cluster, failing if the plugin's RSS, heap, goroutines, fds or connections grow; 0: none")
	fs.IntVar(&o.clusters, "soak-clusters", 300, "stand-in clusters the soak reconciles")
	fs.DurationVar(&o.interval, "soak-interval", 10*time.Second, "reconcile's --interval in the soak")
	fs.DurationVar(&o.warmup, "soak-warmup", 0, "the soak's first part, whose peaks are the levels the rest must stay within (default: a sixth of -soak, ten minutes of an hour)")
	fs.Float64Var(&o.tolerance, "soak-tolerance", 0.10, "how far past its warm-up level a figure may grow in the soak (0.10: 10%)")
	fs.IntVar(&o.changeEvery, "soak-change-every", 10, "the soak changes the render after every this many passes")
	fs.IntVar(&o.flapEvery, "soak-flap-every", 5, "the soak cuts the last cluster off, or back, after every this many passes (0: never)")
	fs.StringVar(&o.parallel, "soak-parallel", "", "reconcile's --parallel in the soak (default: reconcile's own default)")
	fs.BoolVar(&o.delivered, "soak-delivered", false, "the soak's clusters are delivered through a loopback registry (bench/registry, a process of its own), published, not observed: reconcile publishes each change, a drift is a cluster's tag moved by hand, no cluster is cut off; the registry's requests per pass must stay flat too")
}

// check completes the options once parsed (the warm-up: a sixth of the
// soak, unless set) and refuses what cannot run.
func (o *soakOptions) check() error {
	if o.duration == 0 {
		return nil
	}
	if o.warmup == 0 {
		o.warmup = o.duration / 6
	}
	if o.clusters < 1 || o.interval <= 0 || o.warmup <= 0 || o.warmup >= o.duration || o.tolerance < 0 || o.changeEvery < 1 || o.flapEvery < 0 {
		return errors.New("-soak-clusters, -soak-interval and -soak-change-every must be at least 1, -soak-warmup within -soak, -soak-tolerance and -soak-flap-every not negative")
	}
	return nil
}

// soakSample is what the plugin holds at one moment, or over a pass: the
// peaks of its RSS and of its Go heap live after a collection, and its
// goroutines, open fds and connections at rest (the fewest seen: between
// passes, what a pass left behind).
type soakSample struct {
	RSS        int64 `json:"peakRSSBytes"`
	Heap       int64 `json:"peakLiveHeapBytes"`
	Goroutines int64 `json:"goroutinesAtRest"`
	FDs        int64 `json:"fdsAtRest"`
	Conns      int64 `json:"connectionsAtRest"`
}

// soakMetrics name the figures a sample holds, in the report's order, and
// the growth each may show at least, beside the tolerance: at the tiny size
// make test runs, 10% of an 11 MiB heap is one pass's render more.
var soakMetrics = []struct {
	name  string
	of    func(soakSample) int64
	unit  func(int64) string
	slack int64
}{
	{"RSS", func(s soakSample) int64 { return s.RSS }, rss, 8 << 20},
	{"live Go heap", func(s soakSample) int64 { return s.Heap }, rss, 8 << 20},
	{"goroutines", func(s soakSample) int64 { return s.Goroutines }, itoa, 2},
	{"open fds", func(s soakSample) int64 { return s.FDs }, itoa, 2},
	{"connections", func(s soakSample) int64 { return s.Conns }, itoa, 2},
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// max is the larger of each figure of s and o: levels over passes.
func (s soakSample) max(o soakSample) soakSample {
	return soakSample{max(s.RSS, o.RSS), max(s.Heap, o.Heap), max(s.Goroutines, o.Goroutines), max(s.FDs, o.FDs), max(s.Conns, o.Conns)}
}

// within is s and o as over one pass: the peaks of the memory, the rest
// of the counts. The zero soakSample is none yet.
func (s soakSample) within(o soakSample) soakSample {
	if s == (soakSample{}) {
		return o
	}
	return soakSample{max(s.RSS, o.RSS), max(s.Heap, o.Heap), min(s.Goroutines, o.Goroutines), min(s.FDs, o.FDs), min(s.Conns, o.Conns)}
}

// soakPass is one pass: when it ended, its result, and the plugin's peaks
// from the end of the pass before to its own end (the sleep between and
// the pass itself).
type soakPass struct {
	Pass    int     `json:"pass"`
	At      float64 `json:"endedAtSeconds"`
	Seconds float64 `json:"seconds"`
	Result  string  `json:"result"`
	// Requests are those the registry answered since the pass before
	// (a delivered soak's).
	Requests int64 `json:"registryRequests,omitempty"`
	soakSample
}

// soakGrowth is one figure's verdict: its level (the peak) during the
// warm-up, its peak after it, and whether that grew past the tolerance.
type soakGrowth struct {
	Metric   string  `json:"metric"`
	Baseline int64   `json:"baseline"`
	After    int64   `json:"after"`
	Ratio    float64 `json:"ratio"`
	Grew     bool    `json:"grew"`
	format   func(int64) string
}

// soakResult is a soak's record.
type soakResult struct {
	Clusters int          `json:"clusters"`
	Objects  int          `json:"objects"`
	Seconds  float64      `json:"seconds"`
	Interval float64      `json:"intervalSeconds"`
	Warmup   float64      `json:"warmupSeconds"`
	Passes   []soakPass   `json:"passes"`
	Growth   []soakGrowth `json:"growth"`
	// Drifts are the objects edited behind the plugin's back; Corrected
	// those the next pass found drifted and applied; Missed the others.
	Drifts    int      `json:"drifts"`
	Corrected int      `json:"corrected"`
	Missed    []string `json:"missed,omitempty"`
	// Changes are the render changes; Rolled the clusters applied in the
	// pass after each; Unrolled the clusters a change did not reach.
	Changes  int      `json:"changes"`
	Rolled   int      `json:"rolled"`
	Unrolled []string `json:"unrolled,omitempty"`
	// Flaps is how many times the flapping cluster was cut off.
	Flaps int `json:"flaps"`
	// Delivered: the clusters were delivered through a registry.
	Delivered bool     `json:"delivered,omitempty"`
	Started   string   `json:"started"`
	Failures  []string `json:"failures,omitempty"`
}

// verdict judges the passes: a figure whose peak after the warm-up is
// more than tolerance over its peak during it grew (and more than its
// slack). Passes that ended
// within warmup of the start are the warm-up's; at least one pass must
// be on each side.
func verdict(passes []soakPass, warmup time.Duration, tolerance float64) ([]soakGrowth, error) {
	var base, after soakSample
	var nBase, nAfter int
	for _, p := range passes {
		if p.At <= warmup.Seconds() {
			base, nBase = base.max(p.soakSample), nBase+1
		} else {
			after, nAfter = after.max(p.soakSample), nAfter+1
		}
	}
	if nBase == 0 || nAfter == 0 {
		return nil, fmt.Errorf("%d passes in the warm-up and %d after it: the soak needs passes on both sides (a longer -soak, or a shorter -soak-interval)", nBase, nAfter)
	}
	var out []soakGrowth
	for _, m := range soakMetrics {
		g := soakGrowth{Metric: m.name, Baseline: m.of(base), After: m.of(after), format: m.unit}
		if g.Baseline > 0 {
			g.Ratio = float64(g.After) / float64(g.Baseline)
		}
		g.Grew = float64(g.After) > max(float64(g.Baseline)*(1+tolerance), float64(g.Baseline+m.slack))
		out = append(out, g)
	}
	return out, nil
}

// soakRun runs the soak and keeps its record for the report.
func (b *bench) soakRun(ctx context.Context) error {
	o := b.o.soak
	dir := filepath.Join(b.work, "soak")
	src := filepath.Join(dir, "src")
	if err := writeSource(src, b.o.objects); err != nil {
		return err
	}
	s := &soaker{o: o, dir: dir, src: src, objects: b.o.objects, bin: filepath.Join(b.bin, "kubectl-fleet"), cs: fleetClusters(o.clusters, 0, "soak-c"),
		res:    &soakResult{Clusters: o.clusters, Objects: b.o.objects, Interval: o.interval.Seconds(), Warmup: o.warmup.Seconds(), Started: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Delivered: o.delivered},
		drifts: map[string]string{}, seen: map[string]soakEvent{}, clients: map[string]dynamic.Interface{}}
	if o.delivered {
		progress("soak: starting a loopback registry for %d delivered clusters", o.clusters)
		reg, err := b.startRegistry(ctx)
		if err != nil {
			return err
		}
		defer reg.stop()
		s.reg = reg
		for i := range s.cs {
			s.cs[i].group = "production"
		}
	} else {
		progress("soak: starting %d stand-in clusters behind a %s RTT proxy", o.clusters, b.o.rtt)
		env, err := standin.Start(ctx, standin.Options{Clusters: o.clusters, ContextPrefix: "soak-c", Dir: dir, Latency: b.o.rtt / 2})
		if err != nil {
			return err
		}
		defer env.Stop()
		s.env = env
	}
	b.soak = s.res
	if err := s.run(ctx); err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	return nil
}

// soaker is one soak under way.
type soaker struct {
	o            soakOptions
	env          *standin.Env  // the stand-in clusters, or
	reg          *registryProc // the registry of delivered ones
	requests     int64         // the registry's requests at the last pass's end
	cs           []cluster
	dir, src     string
	bin          string
	objects, rev int
	res          *soakResult
	sampler      *sampler
	t0           time.Time
	// drifts are the clusters edited since the last pass (cluster →
	// what), changed whether the render changed since; cut whether the
	// flapping cluster is cut off, cutDuring whether it was during the
	// pass under way.
	drifts         map[string]string
	changed        bool
	cut, cutDuring bool
	// seen is what the pass under way said of each cluster.
	seen    map[string]soakEvent
	clients map[string]dynamic.Interface
}

// soakEvent is a line of reconcile's JSON log the soak reads: a cluster's
// decision (type reconcile, with a cluster) or a pass's end (type pass).
type soakEvent struct {
	Type     string  `json:"type"`
	Pass     int     `json:"pass"`
	Cluster  string  `json:"cluster"`
	Decision string  `json:"decision"`
	Apply    bool    `json:"apply"`
	Result   string  `json:"result"`
	Seconds  float64 `json:"seconds"`
	Error    string  `json:"error"`
	// Addr is the metrics server's, said once it listens.
	Addr string `json:"addr"`
}

// run starts reconcile, follows its passes until -soak is over, stops it
// with SIGTERM, and judges.
func (s *soaker) run(ctx context.Context) error {
	cmd, events, err := s.start(ctx)
	if err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	addr, err := metricsAddr(events)
	if err != nil {
		return err
	}
	s.sampler = &sampler{url: "http://" + addr + "/metrics", pid: cmd.Process.Pid, client: &http.Client{Timeout: 10 * time.Second}}
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go s.sampler.run(sctx, min(max(s.o.interval/4, 100*time.Millisecond), 5*time.Second))
	s.t0 = time.Now()
	progress("soak: reconcile every %s on %d clusters for %s (warm-up %s), pid %d, metrics on %s", s.o.interval, s.o.clusters, s.o.duration, s.o.warmup, cmd.Process.Pid, addr)
	if err := s.follow(ctx, events); err != nil {
		return err
	}
	s.res.Seconds = time.Since(s.t0).Seconds()
	growth, err := verdict(s.res.Passes, s.o.warmup, s.o.tolerance)
	if err != nil {
		return err
	}
	if s.reg != nil {
		growth = append(growth, requestsGrowth(s.res.Passes, s.o.warmup, s.o.tolerance))
	}
	s.res.Growth = growth
	s.judge()
	return nil
}

// start starts reconcile as a user deploys it, its JSON log read into
// events.
// requestsGrowth judges a delivered soak's registry requests as verdict
// judges the rest: the most a pass sent after the warm-up against the
// most one sent during it (passes that changed the render, in both).
func requestsGrowth(passes []soakPass, warmup time.Duration, tolerance float64) soakGrowth {
	g := soakGrowth{Metric: "registry requests per pass", format: itoa}
	for _, p := range passes {
		if p.At <= warmup.Seconds() {
			g.Baseline = max(g.Baseline, p.Requests)
		} else {
			g.After = max(g.After, p.Requests)
		}
	}
	if g.Baseline > 0 {
		g.Ratio = float64(g.After) / float64(g.Baseline)
	}
	g.Grew = float64(g.After) > float64(g.Baseline)*(1+tolerance)
	return g
}

func (s *soaker) start(ctx context.Context) (*exec.Cmd, <-chan soakEvent, error) {
	ff := filepath.Join(s.dir, "fleet.yaml")
	fleetFile, kubeconfig := fleetYAML(s.cs, "soak"), filepath.Join(s.dir, "no-kubeconfig")
	if s.reg != nil {
		fleetFile = publishFleet(s.cs, s.reg.addr, "soak", "")
	} else {
		kubeconfig = s.env.Kubeconfig
	}
	if err := os.WriteFile(ff, []byte(fleetFile), 0o644); err != nil {
		return nil, nil, err
	}
	home := filepath.Join(s.dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, nil, err
	}
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+home)
	// The fleet is deployed before reconcile starts, as it is where
	// reconcile is deployed: the warm-up's levels are a steady fleet's,
	// not those of a first apply of every cluster.
	progress("soak: applying the app to %d clusters first", len(s.cs))
	first := exec.CommandContext(ctx, s.bin, "apply", "-F", ff, "-k", s.src, "--name", "soak", "--yes", "--parallel", strconv.Itoa(min(len(s.cs), 100)))
	first.Env = env
	if out, err := first.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("the first apply: %w\n%s", err, out)
	}
	args := []string{"reconcile", "-F", ff, "-k", s.src, "--name", "soak", "--interval", s.o.interval.String(), "--correct-drift", "--yes", "--skip-unreachable", "--metrics-addr", "127.0.0.1:0", "--log-format", "json"}
	if s.o.parallel != "" {
		args = append(args, "--parallel", s.o.parallel)
	}
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = env
	stderr, err := os.Create(filepath.Join(s.dir, "stderr.log"))
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	if s.reg != nil {
		var err error
		if _, s.requests, err = s.reg.counts(); err != nil {
			return nil, nil, err
		}
	}
	log, err := os.Create(filepath.Join(s.dir, "reconcile.log"))
	if err != nil {
		return nil, nil, err
	}
	events := make(chan soakEvent, 1024)
	go readEvents(io.TeeReader(out, log), events)
	return cmd, events, nil
}

// readEvents sends the cluster decisions and pass ends of reconcile's
// JSON log, and closes events at its end.
func readEvents(r io.Reader, events chan<- soakEvent) {
	defer close(events)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		var ev soakEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Type == "pass" || ev.Type == "reconcile" && (ev.Cluster != "" || ev.Addr != "") {
			events <- ev
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// metricsAddr is the address reconcile says its metrics server listens
// on (--metrics-addr 127.0.0.1:0), its first line of the kind.
func metricsAddr(events <-chan soakEvent) (string, error) {
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return "", errors.New("reconcile exited before its metrics server listened")
			}
			if ev.Addr != "" {
				return ev.Addr, nil
			}
		case <-timeout:
			return "", errors.New("reconcile did not say where its metrics server listens within a minute")
		}
	}
}

// follow takes the events until a pass ends after -soak.
func (s *soaker) follow(ctx context.Context, events <-chan soakEvent) error {
	stall := s.o.interval + 10*time.Minute
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(stall):
			return fmt.Errorf("no pass ended for %s", stall)
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("reconcile exited after %d passes (its stderr: %s)", len(s.res.Passes), filepath.Join(s.dir, "stderr.log"))
			}
			if ev.Type != "pass" {
				s.seen[ev.Cluster] = ev
				continue
			}
			s.passEnded(ev)
			if time.Since(s.t0) >= s.o.duration {
				return nil
			}
			if err := s.disturb(ctx, ev.Pass); err != nil {
				return err
			}
		}
	}
}

// passEnded records a pass and settles what the soak did before it: each
// drifted cluster must have been found drifted (or changed) and applied,
// and after a render change every cluster reachable must have been
// applied.
func (s *soaker) passEnded(ev soakEvent) {
	p := soakPass{Pass: ev.Pass, At: time.Since(s.t0).Seconds(), Seconds: ev.Seconds, Result: ev.Result, soakSample: s.sampler.take()}
	if s.reg != nil {
		if _, n, err := s.reg.counts(); err == nil {
			p.Requests, s.requests = n-s.requests, n
		}
	}
	s.res.Passes = append(s.res.Passes, p)
	if n := len(s.res.Passes); n == 1 || n%10 == 0 {
		progress("soak: pass %d %s in %.2fs at %s: RSS %s, heap %s, goroutines %d, fds %d, connections %d, registry requests %d", p.Pass, p.Result, p.Seconds, time.Since(s.t0).Round(time.Second), rss(p.RSS), rss(p.Heap), p.Goroutines, p.FDs, p.Conns, p.Requests)
	}
	if ev.Result != "succeeded" && !s.cutDuring {
		s.res.Failures = append(s.res.Failures, fmt.Sprintf("pass %d %s with every cluster reachable: %s", ev.Pass, ev.Result, ev.Error))
	}
	applied := func(c string) bool {
		d := s.seen[c]
		return d.Apply && (d.Decision == "drifted" || d.Decision == "changed")
	}
	for c, what := range s.drifts {
		if applied(c) {
			s.res.Corrected++
		} else {
			s.res.Missed = append(s.res.Missed, fmt.Sprintf("%s on %s before pass %d: %q, apply %v", what, c, ev.Pass, s.seen[c].Decision, s.seen[c].Apply))
		}
	}
	if s.changed {
		for i, c := range s.cs {
			if s.cutDuring && i == len(s.cs)-1 {
				continue
			}
			if applied(c.name) {
				s.res.Rolled++
			} else {
				s.res.Unrolled = append(s.res.Unrolled, fmt.Sprintf("%s in pass %d: %q, apply %v", c.name, ev.Pass, s.seen[c.name].Decision, s.seen[c.name].Apply))
			}
		}
	}
	clear(s.drifts)
	clear(s.seen)
	s.changed = false
}

// disturb does, after pass n, what the next pass must cope with: an edit
// behind the plugin's back on one cluster, every -soak-change-every passes
// a change of the render, and every -soak-flap-every passes the last
// cluster cut off or back.
func (s *soaker) disturb(ctx context.Context, n int) error {
	if s.o.flapEvery > 0 && len(s.cs) > 1 && n%s.o.flapEvery == 0 && s.env != nil {
		last := s.env.Clusters[len(s.env.Clusters)-1]
		if s.cut {
			last.Restore()
		} else if err := last.Cut(); err != nil {
			return err
		} else {
			s.res.Flaps++
		}
		s.cut = !s.cut
	}
	s.cutDuring = s.cut
	reachable := len(s.cs)
	if s.cut {
		reachable--
	}
	if s.o.changeEvery > 0 && n%s.o.changeEvery == 0 {
		s.rev++
		if _, err := setRevision(s.src, s.objects, s.rev+1); err != nil {
			return err
		}
		s.res.Changes++
		s.changed = true
	}
	i := n % reachable
	what := fmt.Sprintf("ConfigMap soak/%s edited", objectName(0))
	drift := s.drift
	if s.reg != nil {
		what, drift = "its tag moved by hand to another cluster's artifact", s.moveTag
	}
	if err := drift(ctx, i, fmt.Sprintf("drift-%d", n)); err != nil {
		return fmt.Errorf("drifting %s: %w", s.cs[i].name, err)
	}
	s.drifts[s.cs[i].name] = what
	s.res.Drifts++
	return nil
}

// drift edits the first ConfigMap of cluster i as someone with kubectl
// edit would, through the cluster's API (a merge patch by another field
// manager).
func (s *soaker) drift(ctx context.Context, i int, value string) error {
	c := s.env.Clusters[i]
	dyn, ok := s.clients[c.Context]
	if !ok {
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: s.env.Kubeconfig}, &clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
		if err != nil {
			return err
		}
		if dyn, err = dynamic.NewForConfig(cfg); err != nil {
			return err
		}
		s.clients[c.Context] = dyn
	}
	patch := fmt.Sprintf(`{"data":{"region":%q}}`, value)
	_, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("soak").
		Patch(ctx, objectName(0), types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "soak-drift"})
	return err
}

// moveTag moves delivered cluster i's tag to the artifact of the cluster
// after it, as someone with push rights would: the next pass must put it
// back.
func (s *soaker) moveTag(ctx context.Context, i int, _ string) error {
	reg, err := publish.ParseRegistry("oci://"+s.reg.addr+"/soak", true)
	if err != nil {
		return err
	}
	other := s.cs[(i+1)%len(s.cs)].name
	d, found, err := reg.Resolve(ctx, "soak", other)
	if err != nil || !found {
		return fmt.Errorf("%s's tag: %v", other, err)
	}
	return reg.Tag(ctx, "soak", s.cs[i].name, d)
}

// judge lists what failed the soak.
func (s *soaker) judge() {
	r := s.res
	for _, g := range r.Growth {
		if g.Grew {
			r.Failures = append(r.Failures, fmt.Sprintf("%s grew from %s in the warm-up to %s after it (%.2f×, more than %.0f%% over)", g.Metric, g.format(g.Baseline), g.format(g.After), g.Ratio, s.o.tolerance*100))
		}
	}
	if len(r.Missed) > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d of %d drifts not corrected by the next pass, the first: %s", len(r.Missed), r.Drifts, r.Missed[0]))
	}
	if len(r.Unrolled) > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d clusters not applied after a render change, the first: %s", len(r.Unrolled), r.Unrolled[0]))
	}
	if r.Changes == 0 || r.Drifts == 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d render changes and %d drifts: the soak was too short to exercise them", r.Changes, r.Drifts))
	}
}

// sampler reads the plugin's figures from its /metrics and /proc.
type sampler struct {
	url    string
	pid    int
	client *http.Client
	mu     sync.Mutex
	peak   soakSample
}

func (sm *sampler) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			sm.sample(ctx)
		}
	}
}

// sample reads the figures now and keeps the peaks.
func (sm *sampler) sample(ctx context.Context) {
	m := map[string]float64{}
	if err := scrape(ctx, sm.client, sm.url, "", func(series string, v float64) { m[series] = v }); err != nil {
		return
	}
	now := soakSample{RSS: int64(m["process_resident_memory_bytes"]), Heap: int64(m["go_gc_heap_live_bytes"]), Goroutines: int64(m["go_goroutines"]), FDs: int64(m["process_open_fds"]), Conns: sockets(sm.pid)}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.peak = sm.peak.within(now)
}

// take samples once more and returns the peaks since the last take.
func (sm *sampler) take() soakSample {
	sm.sample(context.Background())
	sm.mu.Lock()
	defer sm.mu.Unlock()
	p := sm.peak
	sm.peak = soakSample{}
	return p
}

// sockets counts the sockets process pid holds open (its connections,
// and its listener); 0 where /proc is not.
func sockets(pid int) int64 {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	es, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range es {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

var errSoakFailed = errors.New("the soak failed")
