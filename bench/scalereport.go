package main

import (
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// scaleHeading starts the scaling run's section of the report.
const scaleHeading = "## Scaling: the same rollout on growing fleets"

// validationTolerance is how far the plugin's CPU and peak RSS against
// the stand-in may be from what they are against real servers.
const validationTolerance = 0.15

func (b *bench) scaleRow(kind string, n int, scenario string) (scaleRow, bool) {
	for _, r := range b.scaleRows {
		if r.Backend == kind && r.Clusters == n && r.Scenario == scenario {
			return r, true
		}
	}
	return scaleRow{}, false
}

// scaleSizes are the sizes run on kind, in order.
func (b *bench) scaleSizes(kind string) []int {
	var out []int
	for _, r := range b.scaleRows {
		if r.Backend == kind && !slices.Contains(out, r.Clusters) {
			out = append(out, r.Clusters)
		}
	}
	slices.Sort(out)
	return out
}

func (b *bench) scaleMarkdown() string {
	o := b.o
	var s strings.Builder
	m := describeMachine()
	fmt.Fprintf(&s, "%s\n\n", scaleHeading)
	fmt.Fprintf(&s, "Taken %s by `make bench` (`go run ./bench -scale %s`), kubectl-fleet %s, on the machine above (%s, %d cores, %s; load average %s at the end).\n\n",
		b.started.Format("2006-01-02 15:04 MST"), joinInts(o.scale), orDash(b.pluginVers), m.CPU, m.Cores, m.Memory, orDash(m.Load))
	fmt.Fprintf(&s, "**What runs:** per fleet size, the same rollout with kubectl fleet, %s up to 100 clusters and %s above (medians): **create** (a new namespace and app of 1 Namespace and %d objects, ConfigMaps and Deployments, per cluster), **no-op** (the steady app again), **change** (a fifth of its objects changed), **diff** (of the unchanged fleet) and **status**. ", times(o.scaleReps), times(max(1, o.scaleReps/3)), o.objects)
	fmt.Fprintf(&s, "Every cluster is %s away (the same TCP latency proxy, %s each way), all at once (`--parallel N`, `--concurrency %d`); the plugin binary runs directly (not through kubectl), with a discovery cache per size warmed by an untimed first apply. ", o.rtt, o.rtt/2, o.concurrency)
	s.WriteString("CPU is the plugin's user+system time (rusage), peak RSS its high-water mark (VmHWM, which the plugin reads at exit: the rusage a parent gets would count the bench's own memory, which serves the stand-in, because a vfork'd child shares it until it execs); fds is the peak of /proc/PID/fd sampled every 10 ms; goroutines the peak of runtime.NumGoroutine() sampled every 5 ms by the plugin itself (`KUBECTL_FLEET_STATS`, pkg/stats); requests/cluster what the servers answered during the run (the stand-in counts them; real servers: `apiserver_request_total` from /metrics before and after, which also counts their own few requests to themselves); servers' CPU is the CPU the clusters used meanwhile (real: kube-apiservers and etcd; stand-in: the bench process, which serves them and their proxies). ")
	s.WriteString("Per cluster: the figure divided by the number of clusters, and its ratio to the 10-cluster figure (`×10`).\n\n")
	fmt.Fprintf(&s, "**The stand-in** (`internal/testenv/standin`) is a measuring tool, not an API server: per cluster an in-memory HTTPS/HTTP2 server on its own loopback port, behind the same latency proxy, with its own context in the kubeconfig, answering exactly what a rollout sends (discovery recorded from kube-apiserver %s, server-side apply through apimachinery's field manager, metadata lists in protobuf, Leases, Secrets, ConfigMaps, Namespaces, SelfSubjectReview) and counting requests. The e2e proofs of behaviour never use it. It stands in where real servers cannot go on this machine, after the validation below.\n\n", b.k8sVersion)

	if b.scaleStopped != "" {
		fmt.Fprintf(&s, "**This run stopped early**, at %s: the sizes before it are below.\n\n", strings.Join(strings.Fields(b.scaleStopped), " "))
	}
	for _, kind := range []string{backendStandin, backendReal} {
		sizes := b.scaleSizes(kind)
		if len(sizes) == 0 {
			continue
		}
		title := "Stand-in clusters"
		if kind == backendReal {
			title = "Real kube-apiservers (one etcd, no controllers)"
		}
		fmt.Fprintf(&s, "**%s:**\n\n", title)
		s.WriteString("| clusters | scenario | wall | CPU | CPU/cluster | ×10 | peak RSS | RSS/cluster | ×10 | fds | goroutines | requests/cluster | servers' CPU |\n| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, sc := range scaleScenarios {
			base, hasBase := b.scaleRow(kind, 10, sc.id)
			for _, n := range sizes {
				r, ok := b.scaleRow(kind, n, sc.id)
				if !ok {
					continue
				}
				cpuX, rssX := "", ""
				if hasBase && base.CPU > 0 && base.RSS > 0 {
					cpuX = fmt.Sprintf("%.2f", (r.CPU/float64(n))/(base.CPU/10))
					rssX = fmt.Sprintf("%.2f", (float64(r.RSS)/float64(n))/(float64(base.RSS)/10))
				}
				fmt.Fprintf(&s, "| %d | %s | %.2f s | %.2f s | %.1f ms | %s | %s | %.2f MiB | %s | %d | %d | %.1f | %.2f s |\n",
					n, sc.id, r.Wall, r.CPU, 1000*r.CPU/float64(n), cpuX, rss(r.RSS), float64(r.RSS)/float64(n)/(1<<20), rssX, r.FDs, r.Goroutines, r.RequestsPerCluster, r.ServerCPU)
			}
		}
		s.WriteString("\n")
	}
	var conn []string
	for _, r := range b.scaleRows {
		if r.ConnErrors > 0 {
			conn = append(conn, fmt.Sprintf("%s at %d clusters: %d", r.Scenario, r.Clusters, r.ConnErrors))
		}
	}
	var failed []string
	for _, r := range b.scaleRows {
		if r.Failed > 0 {
			failed = append(failed, fmt.Sprintf("- %s %s at %d clusters: %d of %d runs; the last: `%s`", r.Backend, r.Scenario, r.Clusters, r.Failed, r.Runs, strings.Join(strings.Fields(r.Failure), " ")))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(&s, "**Runs in which some clusters failed** (the figures above include them):\n\n%s\n\n", strings.Join(failed, "\n"))
	}
	if len(conn) > 0 {
		fmt.Fprintf(&s, "**Connections that failed** (the stand-in's servers saw TLS handshakes abandoned by the plugin, whose client gives up after 10 s; client-go then retries): at most, per run: %s.\n\n", strings.Join(conn, "; "))
	}
	b.scaleDefault(&s)
	b.scaleGrowth(&s)
	b.scaleValidation(&s)
	b.scaleRealLimit(&s)
	s.WriteString("**Goals (issues 22 and 47):**\n\n")
	for _, g := range b.scaleGoals() {
		fmt.Fprintf(&s, "- %s\n", g)
	}
	s.WriteString("\n")
	b.scaleProfiles(&s)
	return s.String()
}

// defaultRows are the largest stand-in size's runs with the plugin's
// default --parallel (scaleDefaultParallel).
func (b *bench) defaultRows() []scaleRow {
	var out []scaleRow
	for _, r := range b.scaleRows {
		if r.Backend == backendStandin && strings.HasSuffix(r.Scenario, defaultParallel) {
			out = append(out, r)
		}
	}
	return out
}

// scaleDefault reports the runs with the default --parallel.
func (b *bench) scaleDefault(s *strings.Builder) {
	rows := b.defaultRows()
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(s, "**With the default `--parallel`** (%d clusters at once, as a user who does not set it runs them), at %d clusters, once each:\n\n", defaultParallelClusters, rows[0].Clusters)
	s.WriteString("| scenario | wall | CPU | peak RSS | Go heap's peak | goroutine stacks' peak | goroutines |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		fmt.Fprintf(s, "| %s | %.2f s | %.2f s | %s | %s | %s | %d |\n", strings.TrimSuffix(r.Scenario, defaultParallel), r.Wall, r.CPU, rss(r.RSS), rss(r.Heap), rss(r.Stacks), r.Goroutines)
	}
	s.WriteString("\n")
}

// defaultParallelClusters is the plugin's default --parallel for apply.
const defaultParallelClusters = 10

// scaleGrowth says what each added cluster costs between the smallest
// and the largest stand-in size: the slope, which fixed costs do not
// flatter as they do a plain per-cluster figure.
func (b *bench) scaleGrowth(s *strings.Builder) {
	sizes := b.scaleSizes(backendStandin)
	if len(sizes) < 2 {
		return
	}
	lo, hi := sizes[0], sizes[len(sizes)-1]
	fmt.Fprintf(s, "**What one more cluster costs** (stand-in, the slope from %d to %d clusters; the fixed cost of a run is in the per-cluster figures above but not here):\n\n", lo, hi)
	s.WriteString("| scenario | CPU per added cluster | RSS per added cluster | fixed CPU | fixed RSS |\n| --- | ---: | ---: | ---: | ---: |\n")
	for _, sc := range scaleScenarios {
		a, ok1 := b.scaleRow(backendStandin, lo, sc.id)
		z, ok2 := b.scaleRow(backendStandin, hi, sc.id)
		if !ok1 || !ok2 {
			continue
		}
		dn := float64(hi - lo)
		cpu := (z.CPU - a.CPU) / dn
		mem := float64(z.RSS-a.RSS) / dn
		fmt.Fprintf(s, "| %s | %.1f ms | %.2f MiB | %.2f s | %s |\n", sc.id, 1000*cpu, mem/(1<<20), a.CPU-cpu*float64(lo), rss(int64(float64(a.RSS)-mem*float64(lo))))
	}
	s.WriteString("\n")
}

// scaleValidation compares the plugin's cost against the stand-in with
// its cost against real servers, at the sizes both ran.
func (b *bench) scaleValidation(s *strings.Builder) {
	var rows []string
	worst := 0.0
	for _, n := range b.scaleSizes(backendReal) {
		for _, sc := range scaleScenarios {
			r, ok1 := b.scaleRow(backendReal, n, sc.id)
			st, ok2 := b.scaleRow(backendStandin, n, sc.id)
			if !ok1 || !ok2 || r.CPU == 0 || r.RSS == 0 {
				continue
			}
			dc, dr := st.CPU/r.CPU-1, float64(st.RSS)/float64(r.RSS)-1
			worst = max(worst, math.Abs(dc), math.Abs(dr))
			verdict := "within 15%"
			if math.Abs(dc) > validationTolerance || math.Abs(dr) > validationTolerance {
				verdict = "**outside 15%**"
			}
			rows = append(rows, fmt.Sprintf("| %d | %s | %.2f s | %.2f s | %+.0f%% | %s | %s | %+.0f%% | %.1f | %.1f | %.2f s | %.2f s | %s |",
				n, sc.id, r.CPU, st.CPU, 100*dc, rss(r.RSS), rss(st.RSS), 100*dr, r.RequestsPerCluster, st.RequestsPerCluster, r.Wall, st.Wall, verdict))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(s, "**Stand-in against real servers** (the sizes both ran; the plugin's CPU and peak RSS must agree within %.0f%%; worst here %.0f%%):\n\n", 100*validationTolerance, 100*worst)
	s.WriteString("| clusters | scenario | CPU real | CPU stand-in | Δ | RSS real | RSS stand-in | Δ | requests/cluster real | stand-in | wall real | wall stand-in | |\n| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	s.WriteString(strings.Join(rows, "\n"))
	s.WriteString("\n\nWall times differ by design: real servers spend more CPU per request than the stand-in on the same 2 cores the plugin runs on. Requests/cluster on real servers include the servers' own requests to themselves during the run.\n\n")
}

// scaleRealLimit says how far real servers went and what they cost.
func (b *bench) scaleRealLimit(s *strings.Builder) {
	var real []scaleSetup
	for _, st := range b.scaleSetups {
		if st.Backend == backendReal {
			real = append(real, st)
		}
	}
	if len(real) == 0 {
		if b.o.scaleReal == 0 {
			s.WriteString("**Real servers:** none in this run (`-scale-real 0`).\n\n")
		}
		return
	}
	top := real[len(real)-1]
	m := describeMachine()
	fmt.Fprintf(s, "**How far real servers go:** at most %d kube-apiservers here (`-scale-real %d`). ", top.Clusters, b.o.scaleReal)
	for _, st := range real {
		fmt.Fprintf(s, "%d started in %.0f s; ", st.Clusters, st.Start)
	}
	if top.APIServerRSS > 0 {
		fmt.Fprintf(s, "each kube-apiserver peaked at %s resident (etcd: %s at %d clusters). ", rss(top.APIServerRSS), rss(top.EtcdRSS), top.Clusters)
		for _, n := range b.o.scale {
			if n > top.Clusters {
				fmt.Fprintf(s, "%d would need ≈ %.1f GiB for the servers alone", n, float64(top.APIServerRSS)*float64(n)/(1<<30))
				break
			}
		}
		fmt.Fprintf(s, ", on a %s machine that two other developers share, and their start and their own CPU (%d cores in all, shared with the plugin) grows with them: the real servers stop there, and the stand-in carries the larger sizes.\n\n", m.Memory, m.Cores)
	} else {
		s.WriteString("\n\n")
	}
}

// scaleGoals judges issue 22's goals on the stand-in's figures.
func (b *bench) scaleGoals() []string {
	var out []string
	verdict := func(ok bool) string {
		if ok {
			return "**met**"
		}
		return "**missed**"
	}
	sizes := b.scaleSizes(backendStandin)
	if len(sizes) == 0 || sizes[0] != 10 {
		return []string{"the goals are judged against the 10-cluster figures: run -scale from 10"}
	}
	hi := sizes[len(sizes)-1]
	for _, sc := range scaleScenarios {
		base, _ := b.scaleRow(backendStandin, 10, sc.id)
		worstCPU, worstRSS := 0.0, 0.0
		for _, n := range sizes[1:] {
			r, _ := b.scaleRow(backendStandin, n, sc.id)
			worstCPU = max(worstCPU, (r.CPU/float64(n))/(base.CPU/10))
			worstRSS = max(worstRSS, (float64(r.RSS)/float64(n))/(float64(base.RSS)/10))
		}
		out = append(out, fmt.Sprintf("%s: CPU and RSS per cluster within 1.5× of the 10-cluster figure up to %d clusters: at worst %.2f× and %.2f×: %s", sc.id, hi, worstCPU, worstRSS, verdict(worstCPU <= 1.5 && worstRSS <= 1.5)))
	}
	if r, ok := b.scaleRow(backendStandin, 1000, "noop"); ok {
		// Bounded by the servers and the network: the plugin computes
		// for less than half the run and less than the servers do.
		out = append(out, fmt.Sprintf("no-op apply of 1,000 clusters bounded by the servers and the network, not the plugin (its CPU under half its wall time, and under the servers' CPU): %.2f s wall, %.2f s plugin CPU, %.2f s servers' CPU: %s", r.Wall, r.CPU, r.ServerCPU, verdict(r.CPU < r.Wall/2 && r.CPU < r.ServerCPU)))
		msPerCluster := r.CPU * 1e3 / float64(r.Clusters)
		out = append(out, fmt.Sprintf("no-op apply at 1,000 clusters in at most 10 ms of plugin CPU per cluster (issue 47): %.1f ms: %s", msPerCluster, verdict(msPerCluster <= 10)))
		var worst scaleRow
		for _, sc := range scaleScenarios {
			if r, ok := b.scaleRow(backendStandin, 1000, sc.id); ok && r.RSS > worst.RSS {
				worst = r
			}
		}
		out = append(out, fmt.Sprintf("peak RSS under 1 GiB at 1,000 clusters (every scenario): %s (%s; the Go heap's objects peaked at %s, goroutine stacks at %s): %s",
			rss(worst.RSS), worst.Scenario, rss(worst.Heap), rss(worst.Stacks), verdict(worst.RSS > 0 && worst.RSS < 1<<30)))
		var dflt scaleRow
		for _, r := range b.defaultRows() {
			if r.Clusters == 1000 && r.RSS > dflt.RSS {
				dflt = r
			}
		}
		if dflt.RSS > 0 {
			out = append(out, fmt.Sprintf("with the default `--parallel` (%d clusters at once), under 400 MiB (issue 47): %s (%s): %s", defaultParallelClusters, rss(dflt.RSS), strings.TrimSuffix(dflt.Scenario, defaultParallel), verdict(dflt.RSS < 400<<20)))
		}
	} else {
		out = append(out, "the 1,000-cluster goals need -scale up to 1000")
	}
	return out
}

// scaleProfiles sums up the CPU profiles of the largest stand-in size
// (-cpuprofile): the functions where the plugin's time went.
func (b *bench) scaleProfiles(s *strings.Builder) {
	sizes := b.scaleSizes(backendStandin)
	if b.o.cpuProfiles == "" || len(sizes) == 0 {
		return
	}
	hi := sizes[len(sizes)-1]
	for _, sc := range []string{"noop", "change"} {
		files, _ := filepath.Glob(filepath.Join(b.o.cpuProfiles, fmt.Sprintf("scale-%s-%d-%s-*.pprof", backendStandin, hi, sc)))
		if len(files) == 0 {
			continue
		}
		out, err := exec.Command("go", append([]string{"tool", "pprof", "-top", "-cum", "-nodecount=25"}, files...)...).Output()
		if err != nil {
			continue
		}
		fmt.Fprintf(s, "**Where the plugin's CPU goes, %s at %d clusters** (`go tool pprof -top -cum` of its %d profiles):\n\n```\n%s```\n\n", sc, hi, len(files), trimPprof(string(out)))
	}
}

// trimPprof keeps pprof's summary lines and table.
func trimPprof(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		if l != "" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n") + "\n"
}

// times says n times in words: "once", "3 times".
func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func joinInts(xs []int) string {
	var ss []string
	for _, x := range xs {
		ss = append(ss, fmt.Sprint(x))
	}
	return strings.Join(ss, ",")
}
