// Command bench is make bench: kubectl fleet side by side with what users
// run instead, on N apiserver-only clusters behind a latency proxy.
//
// It times, alternating the tools and repeating each run:
//
//   - kubectl fleet apply (create, no-op, a change to a fifth of the
//     objects) against the loop users write, kustomize build | envsubst |
//     kubectl apply --server-side --context C, sequential and with & in
//     parallel, and against a minimal client that only sends the apply
//     requests (bench/floor, the floor on this machine);
//   - kubectl fleet diff of an unchanged fleet against kubectl diff in the
//     same loops;
//   - kubectl fleet render of large fleets against a kustomize build |
//     envsubst loop, with peak RSS.
//
// It prints a table of medians, spreads and ratios and, with -out, writes
// it with the machine described (bench/RESULTS.md). -json writes the
// results for tests. Tiny sizes (-clusters 2 -objects 5 -reps 1 -render 3)
// run in the e2e suite so that the benchmark cannot rot.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

type options struct {
	clusters, staging, objects, reps, concurrency int
	rtt, long                                     time.Duration
	render                                        []int
	// publish are the fleet sizes published to a registry; publishLoop
	// the largest the crane loop publishes too.
	publish     []int
	publishLoop int
	// ociRender is the fleet size rendered from an oci:// source.
	ociRender             int
	helmRender            int
	sopsRender, sopsFiles int
	// analyse is how many clusters' analyses are measured (0: none).
	analyse int
	// starts is how many times the start scenario starts each binary
	// (0: none).
	starts                            int
	tools                             []string
	out, jsonOut, binDir, cpuProfiles string
	keep                              bool
	// scale are the fleet sizes of the scaling run; scaleReal the largest
	// of them also run on real kube-apiservers; compare runs the
	// comparison with the loops and the floor (and the renders).
	scale                []int
	scaleReal, scaleReps int
	compare              bool
	// soak is the soak's (soak.go); its duration 0 leaves it out.
	soak soakOptions
}

func main() {
	var o options
	var render, tools, scale, publish string
	flag.IntVar(&o.clusters, "clusters", 10, "clusters to start")
	flag.DurationVar(&o.rtt, "rtt", 50*time.Millisecond, "round trip time the latency proxy adds in front of each cluster")
	flag.IntVar(&o.staging, "staging", 0, "clusters in a staging group that kubectl fleet applies before the rest (0: one group, every cluster at once, as the loops and the floor go)")
	flag.IntVar(&o.objects, "objects", 100, "objects per cluster, besides the Namespace")
	flag.IntVar(&o.reps, "reps", 5, "repetitions of each run")
	flag.IntVar(&o.concurrency, "concurrency", 32, "requests in flight per cluster, for kubectl fleet and the floor alike")
	flag.StringVar(&render, "render", "100,1000", "fleet sizes (clusters) to render, comma-separated; empty for none")
	flag.StringVar(&publish, "publish", "100,1000,10000", "fleet sizes (clusters) to publish to a loopback registry, each cluster's render its own and then shared, comma-separated; empty for none")
	flag.IntVar(&o.ociRender, "oci-render", 100, "clusters rendered from a source in a loopback registry, against the same folder, and a 5 MB artifact pulled against crane export; 0 for none")
	flag.IntVar(&o.publishLoop, "publish-loop", 1000, "the crane loop publishes fleets up to this many clusters (one process per cluster)")
	flag.IntVar(&o.helmRender, "helm-render", 100, "clusters to render a Helm chart for, against a helm template loop (0: none)")
	flag.IntVar(&o.sopsRender, "sops-render", 100, "clusters to render -sops-files SOPS-encrypted Secrets for, against the same in plaintext and a sops -d loop (0: none)")
	flag.IntVar(&o.sopsFiles, "sops-files", 100, "SOPS-encrypted files of the -sops-render app")
	flag.IntVar(&o.analyse, "analyse", 1000, "clusters whose analyses are measured at once against a real Prometheus, through pkg/analysis and a bare GET (0: none)")
	flag.IntVar(&o.starts, "starts", 20, "the start scenario starts kubectl-fleet version and kubectl version --client this many times each run (0: none)")
	flag.StringVar(&tools, "tools", "", "tools to time, comma-separated (fleet, loop, loop-par, floor, folder, crane, kubectl; default all): -tools fleet,floor leaves the slow loops out while working on kubectl fleet")
	flag.DurationVar(&o.long, "long", 20*time.Second, "a tool whose first run of a scenario takes longer is repeated at most 3 times")
	flag.StringVar(&o.out, "out", "", "write the results as Markdown here (make bench: bench/RESULTS.md)")
	flag.StringVar(&o.jsonOut, "json", "", "write the results as JSON here")
	flag.StringVar(&o.binDir, "bin-dir", "", "kube-apiserver, etcd, kubectl, kustomize, envsubst (default: hack/controlplane/build.sh builds them when missing)")
	flag.StringVar(&o.cpuProfiles, "cpuprofile", "", "write a CPU profile of every kubectl fleet run here, as <scenario>-<rep>.pprof (go tool pprof reads several at once); the scaling run adds a heap profile at the live heap's peak, <run>.heap, and a goroutine profile at the goroutines' peak, <run>.goroutines")
	flag.BoolVar(&o.keep, "keep", false, "keep the work folder (sources, scripts, logs)")
	flag.StringVar(&scale, "scale", "10,30,100,300,1000", "fleet sizes of the scaling run (the same rollout, kubectl fleet's cost per size), comma-separated; empty to leave it out")
	flag.IntVar(&o.scaleReal, "scale-real", 30, "scaling sizes up to this many clusters also run on real kube-apiservers (≈ 270 MiB each), the rest only on the stand-in (internal/testenv/standin); 0: stand-in only")
	flag.IntVar(&o.scaleReps, "scale-reps", 3, "repetitions of the rollout per size in the scaling run up to 100 clusters, a third of them above (medians)")
	flag.BoolVar(&o.compare, "compare", true, "run the comparison with the loops and the floor, and the renders; -compare=false runs only the scaling run and, with -out, replaces only its section of the file")
	o.soak.flags(flag.CommandLine)
	flag.Parse()
	var err error
	for _, f := range []struct {
		name, list string
		into       *[]int
	}{{"render", render, &o.render}, {"scale", scale, &o.scale}, {"publish", publish, &o.publish}} {
		if *f.into, err = parseSizes(f.name, f.list); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
	}
	if !o.compare && len(o.scale) == 0 && o.soak.duration == 0 {
		fmt.Fprintln(os.Stderr, "bench: -compare=false with no -scale sizes and no -soak: nothing to run")
		os.Exit(2)
	}
	if o.tools, err = parseTools(tools); err != nil {
		fmt.Fprintln(os.Stderr, "bench: -tools:", err)
		os.Exit(2)
	}
	if o.clusters < 1 || o.staging < 0 || o.staging >= o.clusters || o.objects < 1 || o.reps < 1 || o.concurrency < 1 || o.scaleReps < 1 {
		fmt.Fprintln(os.Stderr, "bench: -clusters, -objects, -reps and -concurrency must be at least 1")
		os.Exit(2)
	}
	if err := o.soak.check(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if o.cpuProfiles != "" {
		dir, err := filepath.Abs(o.cpuProfiles)
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -cpuprofile:", err)
			os.Exit(2)
		}
		o.cpuProfiles = dir
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runBench(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// parseSizes reads the comma-separated fleet sizes of the flag name.
func parseSizes(name, list string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-%s: %q is not a fleet size", name, f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// parseTools reads -tools: a comma-separated list of the tools to time.
func parseTools(list string) ([]string, error) {
	var tools []string
	for _, t := range strings.Split(list, ",") {
		switch t = strings.TrimSpace(t); t {
		case "":
		case "fleet", "loop", "loop-par", "floor", "folder", "crane", "kubectl":
			tools = append(tools, t)
		default:
			return nil, fmt.Errorf("%q is not fleet, loop, loop-par, floor, folder, crane or kubectl", t)
		}
	}
	return tools, nil
}

// bench is one run of the benchmark.
type bench struct {
	o                     options
	repo, work, bin, kbin string
	src, loop, kubeconfig string
	env                   []string
	cs                    []cluster
	clustersFile          string
	fleetFiles            map[string]string
	rows                  []row
	// pushed are the bytes each publish run pushed, by scenario/tool.
	pushed map[string][]int64
	// requests are the requests the registry answered in each publish
	// run, by scenario/tool.
	requests               map[string][]int64
	profiles               []profile
	k8sVersion, pluginVers string
	started                time.Time
	loadStart              string
	// floorRuns numbers the floor's input folders.
	floorRuns int
	// serverCPU is the CPU the API servers and etcd have used so far.
	serverCPU func() time.Duration
	// The scaling run's results (scale.go).
	scaleRows   []scaleRow
	scaleSetups []scaleSetup
	// scaleStopped says where the scaling run stopped early, if it did.
	scaleStopped string
	// soak is the soak's record (soak.go).
	soak *soakResult
}

// row is one tool in one scenario.
type row struct {
	Scenario string `json:"scenario"`
	Tool     string `json:"tool"`
	Command  string `json:"command"`
	stats
}

// tool is one contender of a scenario: prepare does the untimed work of
// a run (sources, namespaces, inputs) and returns the command to time.
type tool struct {
	id, command string
	prepare     func(rep int) (string, []string, error)
	// done, if set, is called after each timed run (untimed).
	done func() error
}

func runBench(ctx context.Context, o options) (err error) {
	b := &bench{o: o, fleetFiles: map[string]string{}, pushed: map[string][]int64{}, requests: map[string][]int64{}, started: time.Now().UTC(), loadStart: loadAverage()}
	if b.repo, err = repoRoot(); err != nil {
		return err
	}
	if b.work, err = os.MkdirTemp("", "fleet-bench-"); err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "work folder:", b.work)
	} else {
		defer os.RemoveAll(b.work)
	}
	if err := b.build(ctx); err != nil {
		return err
	}
	if o.compare {
		if err := b.compareRuns(ctx); err != nil {
			return err
		}
	}
	if len(o.scale) > 0 {
		if err := b.scaleRuns(ctx); err != nil {
			return err
		}
	}
	if o.soak.duration > 0 {
		if err := b.soakRun(ctx); err != nil {
			return err
		}
	}
	if err := b.report(); err != nil {
		return err
	}
	if b.soak != nil && len(b.soak.Failures) > 0 {
		return fmt.Errorf("%w: %s", errSoakFailed, strings.Join(b.soak.Failures, "; "))
	}
	return nil
}

// compareRuns times kubectl fleet against the loops and the floor, on
// -clusters real clusters, and renders.
func (b *bench) compareRuns(ctx context.Context) error {
	o := b.o
	b.src, b.loop = filepath.Join(b.work, "src"), filepath.Join(b.work, "loop.sh")
	if err := writeSource(b.src, o.objects); err != nil {
		return err
	}
	if err := os.WriteFile(b.loop, []byte(loopScript), 0o755); err != nil {
		return err
	}
	// Start and render first, before the API servers take their share
	// of the CPU.
	if err := b.offlineRuns(ctx); err != nil {
		return err
	}
	progress("starting %d clusters behind a %s RTT proxy", o.clusters, o.rtt)
	env, err := testenv.Start(ctx, testenv.Options{BinDir: b.kbin, Clusters: o.clusters, ContextPrefix: "bench-c", Dir: filepath.Join(b.work, "clusters"), Latency: o.rtt / 2})
	if err != nil {
		return fmt.Errorf("starting clusters: %w", err)
	}
	defer env.Stop()
	go func() {
		<-ctx.Done() // Ctrl-C: stop the clusters even if a command hangs.
		env.Stop()
	}()
	b.kubeconfig = env.Kubeconfig
	b.env = append(b.env, "KUBECONFIG="+env.Kubeconfig)
	b.serverCPU = func() time.Duration {
		var sum time.Duration
		for _, pid := range env.PIDs() {
			sum += procCPU(pid)
		}
		return sum
	}
	b.cs = fleetClusters(o.clusters, o.staging, "bench-c")
	b.clustersFile = filepath.Join(b.work, "clusters.txt")
	if err := os.WriteFile(b.clustersFile, []byte(clustersTxt(b.cs)), 0o644); err != nil {
		return err
	}
	if err := b.applyScenarios(ctx); err != nil {
		return err
	}
	env.Stop()
	return nil
}

// offlineRuns are the scenarios that need no cluster: starts, renders,
// OCI sources, publishing to a registry, Helm, SOPS and analysis.
func (b *bench) offlineRuns(ctx context.Context) error {
	o := b.o
	if o.starts > 0 {
		if err := b.startScenario(ctx, o.starts); err != nil {
			return err
		}
	}
	for _, n := range o.render {
		if err := b.renderScenario(ctx, n); err != nil {
			return err
		}
	}
	if o.ociRender > 0 {
		if err := b.ociScenarios(ctx, o.ociRender); err != nil {
			return err
		}
	}
	for _, n := range o.publish {
		for _, shared := range []bool{false, true} {
			for _, signed := range []bool{false, true} {
				if err := b.publishScenario(ctx, n, shared, signed, false); err != nil {
					return err
				}
			}
		}
		for _, signed := range []bool{false, true} {
			if err := b.publishScenario(ctx, n, false, signed, true); err != nil {
				return err
			}
		}
	}
	if o.helmRender > 0 {
		if err := b.helmScenario(ctx, o.helmRender); err != nil {
			return err
		}
	}
	if o.sopsRender > 0 {
		if err := b.sopsScenario(ctx, o.sopsRender, o.sopsFiles); err != nil {
			return err
		}
	}
	if o.analyse > 0 {
		if err := b.analysisScenario(ctx, o.analyse); err != nil {
			return err
		}
	}
	return nil
}

// repoRoot is the folder of the plugin's go.mod, from the working folder up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/kubectl-fleet/kubectl-fleet\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the kubectl-fleet repository")
		}
		dir = parent
	}
}

// build finds (or builds) the test bed's binaries and builds the plugin
// and the floor client.
func (b *bench) build(ctx context.Context) error {
	b.kbin = b.o.binDir
	if !b.o.compare && len(b.o.scale) == 0 {
		// The soak alone: the stand-in, no tools.
		return b.buildPlugins(ctx)
	}
	if b.kbin == "" {
		cmd := exec.CommandContext(ctx, filepath.Join(b.repo, "hack", "controlplane", "build.sh"), "etcd", "kube-apiserver", "kubectl", "kustomize", "envsubst", "helm")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("building the test bed: %w", err)
		}
		b.kbin = strings.TrimSpace(string(out))
	}
	for _, tool := range []string{"etcd", "kube-apiserver", "kubectl", "kustomize", "envsubst", "helm"} {
		if _, err := os.Stat(filepath.Join(b.kbin, tool)); err != nil {
			return fmt.Errorf("%s is missing from %s (make controlplane builds it)", tool, b.kbin)
		}
	}
	b.k8sVersion = filepath.Base(filepath.Dir(b.kbin))
	return b.buildPlugins(ctx)
}

// buildPlugins builds the plugin and the floor client, and sets the
// environment the tools run in.
func (b *bench) buildPlugins(ctx context.Context) error {
	b.bin = filepath.Join(b.work, "bin")
	for pkg, name := range map[string]string{"./cmd/kubectl-fleet": "kubectl-fleet", "./bench/floor": "floor", "./bench/registry": "registry", "./bench/analyse": "analyse", "github.com/google/go-containerregistry/cmd/crane": "crane"} {
		// Stamped, as make build stamps it: a development build ("dev")
		// never skips an unchanged object.
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-X github.com/kubectl-fleet/kubectl-fleet/pkg/version.Version=v0.0.0-bench", "-o", filepath.Join(b.bin, name), pkg)
		cmd.Dir, cmd.Stdout, cmd.Stderr = b.repo, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %w", pkg, err)
		}
	}
	if out, err := exec.Command("git", "-C", b.repo, "describe", "--tags", "--always", "--dirty").Output(); err == nil {
		b.pluginVers = strings.TrimSpace(string(out))
	}
	home := filepath.Join(b.work, "home") // discovery caches of its own
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "PATH", "HOME", "KUBECONFIG", "KUBECTL_FLEET", "NO_COLOR":
		default:
			b.env = append(b.env, kv)
		}
	}
	b.env = append(b.env, "PATH="+b.bin+string(os.PathListSeparator)+b.kbin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+home, "NO_COLOR=1")
	return nil
}

// fleetFile writes (once) a fleet file of cs whose app goes to ns.
func (b *bench) fleetFile(cs []cluster, ns string) (string, error) {
	key := fmt.Sprintf("%d/%s", len(cs), ns)
	if f, ok := b.fleetFiles[key]; ok {
		return f, nil
	}
	f := filepath.Join(b.work, fmt.Sprintf("fleet-%d-%s.yaml", len(cs), ns))
	if err := os.WriteFile(f, []byte(fleetYAML(cs, ns)), 0o644); err != nil {
		return "", err
	}
	b.fleetFiles[key] = f
	return f, nil
}

// times reports whether the tool id is timed (-tools).
func (b *bench) times(id string) bool { return len(b.o.tools) == 0 || slices.Contains(b.o.tools, id) }

// scenario runs tools reps times each, alternating them in an order that
// rotates every repetition; before runs (untimed) ahead of each
// repetition. A tool whose first run takes longer than -long is repeated
// at most 3 times.
func (b *bench) scenario(ctx context.Context, name string, tools []tool, before func(rep int) error) error {
	tools = slices.DeleteFunc(slices.Clone(tools), func(t tool) bool { return !b.times(t.id) })
	runs := make([][]run, len(tools))
	limit := make([]int, len(tools))
	for i := range limit {
		limit[i] = b.o.reps
	}
	for rep := 0; rep < b.o.reps; rep++ {
		if before != nil {
			if err := before(rep); err != nil {
				return err
			}
		}
		for k := range tools {
			i := (k + rep) % len(tools)
			if rep >= limit[i] {
				continue
			}
			bin, args, err := tools[i].prepare(rep)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", name, tools[i].id, err)
			}
			env := b.env
			if b.o.cpuProfiles != "" && tools[i].id == "fleet" {
				env = append(slices.Clone(env), "KUBECTL_FLEET_CPUPROFILE="+filepath.Join(b.o.cpuProfiles, fmt.Sprintf("%s-%d.pprof", name, rep)))
			}
			var cpu0 time.Duration
			if b.serverCPU != nil {
				cpu0 = b.serverCPU()
			}
			r, err := timed(ctx, bin, args, env)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", name, tools[i].id, err)
			}
			if b.serverCPU != nil {
				r.serverCPU = b.serverCPU() - cpu0
			}
			if rep == 0 && r.wall > b.o.long {
				limit[i] = min(limit[i], 3)
			}
			runs[i] = append(runs[i], r)
			if tools[i].done != nil {
				if err := tools[i].done(); err != nil {
					return fmt.Errorf("%s, %s: %w", name, tools[i].id, err)
				}
			}
			progress("%s %d/%d: %-9s %6.2fs  cpu %5.2fs  servers %5.2fs  %s", name, rep+1, b.o.reps, tools[i].id, r.wall.Seconds(), r.cpu.Seconds(), r.serverCPU.Seconds(), rss(r.maxRSS))
		}
	}
	for i, t := range tools {
		b.rows = append(b.rows, row{Scenario: name, Tool: t.id, Command: t.command, stats: summarize(runs[i])})
	}
	return nil
}

// renderFleet writes the fleet file of n clusters that the render
// scenarios render for, and the loops' list of them.
func (b *bench) renderFleet(n int) (fleetFile, list string, err error) {
	cs := fleetClusters(n, min(b.o.staging, n-1), "ctx-")
	if fleetFile, err = b.fleetFile(cs, "bench"); err != nil {
		return "", "", err
	}
	list = filepath.Join(b.work, fmt.Sprintf("clusters-%d.txt", n))
	return fleetFile, list, os.WriteFile(list, []byte(clustersTxt(cs)), 0o644)
}

// startScenario starts kubectl-fleet version n times, against kubectl
// version --client, the start every kubectl command pays: the package
// inits, the runtime and the binary's pages (docs/benchmarks.md).
func (b *bench) startScenario(ctx context.Context, n int) error {
	starts := func(bin string, args ...string) (string, []string, error) {
		loop := `for i in $(seq "$0"); do "$@" > /dev/null; done`
		return "bash", append([]string{"-c", loop, strconv.Itoa(n), bin}, args...), nil
	}
	return b.scenario(ctx, "start", []tool{
		{id: "fleet", command: fmt.Sprintf("%d × kubectl-fleet version", n), prepare: func(int) (string, []string, error) {
			return starts(filepath.Join(b.bin, "kubectl-fleet"), "version")
		}},
		{id: "kubectl", command: fmt.Sprintf("%d × kubectl version --client", n), prepare: func(int) (string, []string, error) {
			return starts(filepath.Join(b.kbin, "kubectl"), "version", "--client")
		}},
	}, nil)
}

// renderScenario renders a fleet of n clusters with kubectl fleet and
// with the loop.
func (b *bench) renderScenario(ctx context.Context, n int) error {
	ff, list, err := b.renderFleet(n)
	if err != nil {
		return err
	}
	return b.scenario(ctx, fmt.Sprintf("render-%d", n), []tool{
		{id: "fleet", command: "kubectl-fleet render -F fleet.yaml -k src > /dev/null", prepare: func(int) (string, []string, error) {
			return filepath.Join(b.bin, "kubectl-fleet"), []string{"render", "-F", ff, "-k", b.src}, nil
		}},
		{id: "loop", command: "for each cluster: kustomize build | envsubst > /dev/null", prepare: func(int) (string, []string, error) {
			return "bash", []string{b.loop, "bench", "render", "seq", list}, nil
		}},
	}, nil)
}

// helmScenario renders one Helm chart (the render tests' chart: a
// Deployment, ConfigMaps, an Ingress, a CRD, hooks and a subchart) with
// a values file per group for a fleet of n clusters: with kubectl fleet,
// which loads the chart once and templates it per cluster, and with the
// loop users write, one helm template per cluster.
func (b *bench) helmScenario(ctx context.Context, n int) error {
	ff, list, err := b.renderFleet(n)
	if err != nil {
		return err
	}
	chart := filepath.Join(b.repo, "pkg", "render", "testdata", "charts", "web")
	values := filepath.Join(b.work, "helm-values")
	for _, g := range groups {
		if err := writeFile(filepath.Join(values, g+".yaml"), "image: nginx:1.29\nregion: "+g+"\ncache: {enabled: true}\n"); err != nil {
			return err
		}
	}
	script := filepath.Join(b.work, "helm-loop.sh")
	if err := os.WriteFile(script, []byte(helmLoopScript), 0o755); err != nil {
		return err
	}
	return b.scenario(ctx, fmt.Sprintf("helm-render-%d", n), []tool{
		{id: "fleet", command: "kubectl-fleet render -F fleet.yaml --chart CHART --values values/${FLEET_CLUSTER_GROUP}.yaml > /dev/null", prepare: func(int) (string, []string, error) {
			return filepath.Join(b.bin, "kubectl-fleet"), []string{"render", "-F", ff, "--chart", chart, "--name", "web", "-n", "web", "--values", filepath.Join(values, "${FLEET_CLUSTER_GROUP}.yaml")}, nil
		}},
		{id: "loop", command: "for each cluster: helm template web CHART -n web -f values/GROUP.yaml > /dev/null", prepare: func(int) (string, []string, error) {
			return "bash", []string{script, chart, values, list}, nil
		}},
	}, nil)
}

// fleetApply is the kubectl fleet apply of app into namespace ns.
func (b *bench) fleetApply(ns, app string) (string, []string, error) {
	ff, err := b.fleetFile(b.cs, ns)
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(b.kbin, "kubectl"), []string{"fleet", "apply", "-F", ff, "-k", b.src, "--name", app, "--parallel", strconv.Itoa(b.o.clusters), "--concurrency", strconv.Itoa(b.o.concurrency), "--yes"}, nil
}

// loopOf is the shell loop's verb (apply, diff) into ns, seq or par.
func (b *bench) loopOf(ns, verb, mode string) (string, []string, error) {
	return "bash", []string{b.loop, ns, verb, mode, b.clustersFile}, nil
}

// floor renders the app for ns with kubectl fleet (untimed) and returns
// the floor client's command for the objects named in only (all when
// nil).
func (b *bench) floor(ctx context.Context, ns string, only []string) (string, []string, error) {
	b.floorRuns++
	ff, err := b.fleetFile(b.cs, ns)
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(b.work, "floor", strconv.Itoa(b.floorRuns))
	cmd := exec.CommandContext(ctx, filepath.Join(b.bin, "kubectl-fleet"), "render", "-F", ff, "-k", b.src, "--output-dir", dir)
	cmd.Env = b.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("rendering the floor's input: %w\n%s", err, out)
	}
	args := []string{"-kubeconfig", b.kubeconfig, "-concurrency", strconv.Itoa(b.o.concurrency)}
	for _, c := range b.cs {
		d := filepath.Join(dir, c.name)
		if only != nil {
			if err := keepOnly(d, only); err != nil {
				return "", nil, err
			}
		}
		args = append(args, c.context+"="+d)
	}
	return filepath.Join(b.bin, "floor"), args, nil
}

// applyTools are the contenders of an apply scenario: each works in the
// namespace nsOf gives it, kubectl fleet on the app appOf names, the
// floor sending only the objects only names (all when nil).
func (b *bench) applyTools(ctx context.Context, nsOf func(id string, rep int) string, appOf func(rep int) string, only *[]string) []tool {
	return []tool{
		{id: "fleet", command: "kubectl fleet apply -F fleet.yaml -k src --parallel N", prepare: func(rep int) (string, []string, error) { return b.fleetApply(nsOf("fleet", rep), appOf(rep)) }},
		{id: "loop", command: "for each cluster: kustomize build | envsubst | kubectl apply --server-side --context C -f -", prepare: func(rep int) (string, []string, error) {
			return b.loopOf(nsOf("loop", rep), "apply", "seq")
		}},
		{id: "loop-par", command: "the same loop, each cluster in the background (&), then wait", prepare: func(rep int) (string, []string, error) {
			return b.loopOf(nsOf("looppar", rep), "apply", "par")
		}},
		{id: "floor", command: "bench/floor: only the apply PATCHes, every cluster at once, --concurrency per cluster", prepare: func(rep int) (string, []string, error) {
			var names []string
			if only != nil {
				names = *only
			}
			return b.floor(ctx, nsOf("floor", rep), names)
		}},
	}
}

// diffTools are the contenders of the diff scenario, on the initial state.
func (b *bench) diffTools() ([]tool, error) {
	ff, err := b.fleetFile(b.cs, "bench-fleet")
	if err != nil {
		return nil, err
	}
	return []tool{
		{id: "fleet", command: "kubectl fleet diff -F fleet.yaml -k src --parallel N", prepare: func(int) (string, []string, error) {
			return filepath.Join(b.kbin, "kubectl"), []string{"fleet", "diff", "-F", ff, "-k", b.src, "--name", "bench", "--parallel", strconv.Itoa(b.o.clusters)}, nil
		}},
		{id: "loop", command: "for each cluster: kustomize build | envsubst | kubectl diff --server-side --context C -f -", prepare: func(int) (string, []string, error) {
			return b.loopOf("bench-loop", "diff", "seq")
		}},
		{id: "loop-par", command: "the same kubectl diff loop, each cluster in the background (&), then wait", prepare: func(int) (string, []string, error) {
			return b.loopOf("bench-looppar", "diff", "par")
		}},
	}, nil
}

// applyScenarios runs create, no-op, diff and change on the clusters.
func (b *bench) applyScenarios(ctx context.Context) error {
	state := func(id string, _ int) string { return "bench-" + id }
	app := func(int) string { return "bench" }

	// The state every tool then works on: its app applied once (untimed,
	// also warming discovery caches).
	progress("applying the initial state with each tool (untimed)")
	for _, t := range b.applyTools(ctx, state, app, nil) {
		if !b.times(t.id) {
			continue
		}
		bin, args, err := t.prepare(0)
		if err != nil {
			return err
		}
		if _, err := timed(ctx, bin, args, b.env); err != nil {
			return fmt.Errorf("initial state, %s: %w", t.id, err)
		}
	}
	fresh := func(id string, rep int) string { return fmt.Sprintf("create-%s-%d", id, rep) }
	if err := b.scenario(ctx, "apply-create", b.applyTools(ctx, fresh, func(rep int) string { return fmt.Sprintf("create-%d", rep) }, nil), nil); err != nil {
		return err
	}
	if err := b.profile(ctx, "apply-create", "create-profile", "createprofile", b.fleetApply); err != nil {
		return err
	}
	if err := b.scenario(ctx, "apply-noop", b.applyTools(ctx, state, app, nil), nil); err != nil {
		return err
	}
	if err := b.profile(ctx, "apply-noop", "bench-fleet", "bench", b.fleetApply); err != nil {
		return err
	}
	diffTools, err := b.diffTools()
	if err != nil {
		return err
	}
	if err := b.scenario(ctx, "diff-noop", diffTools, nil); err != nil {
		return err
	}
	var changed []string
	if err := b.scenario(ctx, "apply-change", b.applyTools(ctx, state, app, &changed), func(rep int) error {
		changed, err = setRevision(b.src, b.o.objects, rep+2)
		return err
	}); err != nil {
		return err
	}
	if _, err := setRevision(b.src, b.o.objects, b.o.reps+2); err != nil {
		return err
	}
	return b.profile(ctx, "apply-change", "bench-fleet", "bench", b.fleetApply)
}

// profile runs kubectl fleet apply once more (untimed) on the first
// cluster with --v=6, of app into namespace ns, and records the
// requests it sent.
func (b *bench) profile(ctx context.Context, scenario, ns, app string, fleetApply func(ns, app string) (string, []string, error)) error {
	bin, args, err := fleetApply(ns, app)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, append(args, "--cluster", b.cs[0].name, "--v=6")...)
	cmd.Env = b.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("profiling %s: %w\n%s", scenario, err, stderr.String())
	}
	end := time.Now()
	p := parseProfile(scenario, stderr.String(), ns)
	if p.Requests == 0 {
		return fmt.Errorf("profiling %s: no request in kubectl fleet's --v=6 log", scenario)
	}
	// klog's times are of the day, in the local zone.
	ofDay := func(t time.Time) time.Time {
		d, _ := time.Parse("15:04:05.000000", t.Format("15:04:05.000000"))
		return d
	}
	p.BeforeMS, p.AfterMS = int(p.first.Sub(ofDay(start)).Milliseconds()), int(ofDay(end).Sub(p.last).Milliseconds())
	b.profiles = append(b.profiles, p)
	progress("%s on %s: %d requests in %d waits: %s; %d ms before the first, waits of %v ms, %d ms after the last", scenario, b.cs[0].name, p.Requests, p.Waits, strings.Join(p.Steps, ", "), p.BeforeMS, p.WaitMS, p.AfterMS)
	return nil
}

// keepOnly removes from dir the object files of objects not named.
func keepOnly(dir string, names []string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".yaml")
		name := base[strings.LastIndex(base, "_")+1:]
		if !slices.Contains(names, name) {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *bench) report() error {
	// The file's sections, in order: the comparison, the scaling run,
	// the soak and the soak of delivered clusters. A section this run did not make keeps the file's.
	sections := []string{"", "", "", ""}
	ran := []bool{b.o.compare, len(b.o.scale) > 0, b.soak != nil && !b.o.soak.delivered, b.soak != nil && b.o.soak.delivered}
	if ran[0] {
		sections[0] = b.markdown()
	}
	if ran[1] {
		sections[1] = b.scaleMarkdown()
	}
	for i := 2; i < 4; i++ {
		if ran[i] {
			sections[i] = b.soakMarkdown()
		}
	}
	fmt.Print(strings.Join(sections, ""))
	if b.o.out != "" {
		old, err := os.ReadFile(b.o.out)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		var md string
		for i, prev := range splitResults(string(old)) {
			if !ran[i] {
				sections[i] = prev
			}
			if sections[i] == "" {
				continue
			}
			if md != "" && !strings.HasSuffix(md, "\n\n") {
				md += "\n"
			}
			md += sections[i]
		}
		if err := os.WriteFile(b.o.out, []byte(md), 0o644); err != nil {
			return err
		}
		progress("wrote %s", b.o.out)
	}
	if b.o.jsonOut != "" {
		j, err := json.MarshalIndent(struct {
			Rows        []row        `json:"rows"`
			Profiles    []profile    `json:"profiles"`
			Scale       []scaleRow   `json:"scale,omitempty"`
			ScaleSetups []scaleSetup `json:"scaleSetups,omitempty"`
			Soak        *soakResult  `json:"soak,omitempty"`
		}{b.rows, b.profiles, b.scaleRows, b.scaleSetups, b.soak}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(b.o.jsonOut, append(j, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// splitResults cuts a results file into its comparison, its scaling
// run and its soak, each "" where the file has none.
func splitResults(md string) []string {
	out := make([]string, 1+len(resultHeadings))
	for i := len(resultHeadings) - 1; i >= 0; i-- {
		heading := resultHeadings[i]
		if j := strings.Index(md, "\n"+heading); j >= 0 {
			out[i+1], md = md[j+1:], md[:j+1]
		} else if strings.HasPrefix(md, heading) {
			out[i+1], md = md, ""
		}
	}
	out[0] = md
	return out
}

// resultHeadings start the report's sections after the comparison, in
// their order.
var resultHeadings = []string{scaleHeading, soakHeading, deliveredSoakHeading}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// rss formats a peak resident set size; "-" when unknown.
func rss(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}
