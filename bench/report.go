package main

import (
	"fmt"
	"slices"
	"strings"
)

// titles describe the scenarios, in the order of the table.
var titles = []struct{ id, title string }{
	{"apply-create", "apply, create: a new Namespace and its objects on every cluster"},
	{"apply-noop", "apply, no-op: the same app again, nothing changed"},
	{"apply-change", "apply, rollout: a fifth of the objects changed (the floor sends only those)"},
	{"diff-noop", "diff of an unchanged fleet"},
}

func (b *bench) find(scenario, tool string) (row, bool) {
	for _, r := range b.rows {
		if r.Scenario == scenario && r.Tool == tool {
			return r, true
		}
	}
	return row{}, false
}

// ratio says how a row compares with kubectl fleet's in its scenario.
func (b *bench) ratio(r row) string {
	f, ok := b.find(r.Scenario, "fleet")
	if !ok || r.Tool == "fleet" || f.Median == 0 || r.Median == 0 {
		return ""
	}
	if r.Tool == "floor" {
		return fmt.Sprintf("fleet takes %.2f× the floor", f.Median/r.Median)
	}
	if r.Tool == "plain" {
		return fmt.Sprintf("decrypting costs %.2f s of CPU (fleet takes %.2f× plaintext)", f.CPU-r.CPU, f.Median/r.Median)
	}
	x := r.Median / f.Median
	if x >= 1 {
		return fmt.Sprintf("fleet %.1f× faster", x)
	}
	return fmt.Sprintf("fleet %.1f× slower", 1/x)
}

// note is what a row's last column says: its ratio, and the bytes a
// publish run pushed.
func (b *bench) note(r row) string {
	parts := []string{b.ratio(r)}
	if n, reqs, ok := b.pushedOf(r); ok {
		parts = append(parts, fmt.Sprintf("%s pushed, %d requests", bytesOf(n), reqs))
	}
	return strings.Trim(strings.Join(parts, "; "), "; ")
}

func (b *bench) markdown() string {
	o := b.o
	var s strings.Builder
	m := describeMachine()
	fmt.Fprintf(&s, "# make bench: kubectl fleet against what users run instead\n\n")
	fmt.Fprintf(&s, "Taken %s by `make bench` (`go run ./bench`), kubectl-fleet %s.\n\n", b.started.Format("2006-01-02 15:04 MST"), b.pluginVers)
	fmt.Fprintf(&s, "**Machine:** %s, %d cores, %s memory, %s, %s; Kubernetes %s (kube-apiserver, etcd, kubectl built from the module proxy), kustomize and envsubst from the module proxy (`hack/controlplane/build.sh`). ", m.CPU, m.Cores, m.Memory, m.OS, m.Go, b.k8sVersion)
	fmt.Fprintf(&s, "Load average %s at the start, %s at the end", orDash(b.loadStart), orDash(m.Load))
	fmt.Fprintf(&s, ": the API servers, the tools and anything else running share those cores, so medians of alternated runs are the figures to read, and the spread says how noisy the machine was.\n\n")
	groups := fmt.Sprintf("A fleet of one group of %d clusters, applied at once as the loops and the floor go (`-staging N` puts N of them in a staging group that kubectl fleet rolls out first, which adds their apply before the rest)", o.clusters)
	if o.staging > 0 {
		groups = fmt.Sprintf("A fleet of two groups (staging: %d clusters, production: %d), which kubectl fleet rolls out one after the other while the loops and the floor go at once", o.staging, o.clusters-o.staging)
	}
	fmt.Fprintf(&s, "**Setup:** %d kube-apiservers (one etcd, no controllers), each behind a TCP proxy adding %s each way (%s round trip). %s. The app: a kustomize base of 1 Namespace and %d objects (ConfigMaps and Deployments, alternating) with `${VARS}` for each cluster's values, and an overlay per group. ", o.clusters, o.rtt/2, o.rtt, groups, o.objects)
	fmt.Fprintf(&s, "Each tool works in a namespace of its own; create runs get fresh ones. %d repetitions, the tools alternating in an order that rotates every repetition (a tool whose first run takes over %s: 3); median and min–max of wall time, process start included. CPU is the median user and system time of the tool and every process it started (a loop's kustomize, envsubst and kubectl); servers' CPU is what the API servers and etcd used meanwhile. Peak RSS is that of the largest single process (for a loop, its largest kustomize or kubectl).\n\n", o.reps, o.long)
	s.WriteString("| scenario | tool | median | min–max | runs | CPU | servers' CPU | peak RSS | ratio |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	scenarios := append(b.renderTitles(), titles...)
	for _, sc := range scenarios {
		first := true
		for _, r := range b.rows {
			if r.Scenario != sc.id {
				continue
			}
			title := ""
			if first {
				title, first = "**"+sc.title+"**", false
			}
			fmt.Fprintf(&s, "| %s | %s | %.3f s | %.3f–%.3f s | %d | %.2f s | %.2f s | %s | %s |\n", title, r.Tool, r.Median, r.Min, r.Max, r.Runs, r.CPU, r.ServerCPU, rss(r.MaxRSS), b.note(r))
		}
	}
	s.WriteString("\n**Tools:**\n\n")
	seen := map[string]bool{}
	for _, r := range b.rows {
		k := r.Scenario[:strings.Index(r.Scenario+"-", "-")] + "/" + r.Tool
		if seen[k] {
			continue
		}
		seen[k] = true
		fmt.Fprintf(&s, "- %s, `%s`: %s\n", strings.SplitN(r.Scenario, "-", 2)[0], r.Tool, r.Command)
	}
	s.WriteString("\nkubectl fleet apply and diff run through kubectl (`kubectl fleet …`, as users run them); render runs the plugin binary. Every command's output goes to /dev/null.\n\n")
	if len(b.profiles) > 0 {
		fmt.Fprintf(&s, "**Where kubectl fleet's time goes:** the requests one more apply sent the first cluster (`--cluster %s --v=6`), in order; requests in flight together count as one wait, and at %s a wait is a round trip. The floor makes 1 + ⌈%d/%d⌉ waits per cluster after its TLS handshake (1 + ⌈%d/%d⌉ in the rollout), and every cluster is at once.\n\n", b.cs[0].name, o.rtt, o.objects, o.concurrency, changedCount(o.objects), o.concurrency)
		for _, p := range b.profiles {
			fmt.Fprintf(&s, "- %s: %d requests (%d for the app's objects) in %d waits: %s\n", p.Scenario, p.Requests, p.Objects, p.Waits, strings.Join(p.Steps, " → "))
		}
		s.WriteString("\n")
		if f, ok := b.find("apply-change", "fleet"); ok {
			if fl, ok := b.find("apply-change", "floor"); ok {
				fmt.Fprintf(&s, "In the rollout kubectl fleet used %.2f s of CPU to the floor's %.2f s, on %d cores that the %d API servers and their etcd share with it: what it computes beyond the floor (rendering, discovery, the digests that let it send less, the revision it stores) and the server work of its reads, its revision and its lock is time the servers' apply requests wait for. `-cpuprofile DIR` writes a CPU profile of every kubectl fleet run (`go tool pprof -top DIR/apply-change-*.pprof`).\n\n", f.CPU, fl.CPU, m.Cores, o.clusters)
			}
		}
	}
	s.WriteString("**Goals:**\n\n")
	for _, g := range b.goals() {
		fmt.Fprintf(&s, "- %s\n", g)
	}
	return s.String()
}

// renderTitles are the titles of the scenarios this run asked for
// besides the apply scenarios (titles), in the report's order: start, renders,
// OCI sources, publishing, Helm, SOPS and analysis.
func (b *bench) renderTitles() []struct{ id, title string } {
	o := b.o
	var renders []struct{ id, title string }
	if o.starts > 0 {
		renders = append(renders, struct{ id, title string }{"start", fmt.Sprintf("start: %d × kubectl-fleet version, against %d × kubectl version --client", o.starts, o.starts)})
	}
	for _, n := range o.render {
		renders = append(renders, struct{ id, title string }{fmt.Sprintf("render-%d", n), fmt.Sprintf("render %d clusters × (1+%d) objects (no cluster contacted)", n, o.objects)})
	}
	if o.ociRender > 0 {
		renders = append(renders,
			struct{ id, title string }{fmt.Sprintf("oci-render-%d", o.ociRender), fmt.Sprintf("render %d clusters from a source in a loopback registry (pulled once, an empty cache each run) against the same folder", o.ociRender)},
			struct{ id, title string }{"oci-pull-5mb", "pull a 5 MB source artifact (resolve, pull, check, unpack)"})
	}
	for _, n := range o.publish {
		renders = append(renders,
			struct{ id, title string }{fmt.Sprintf("publish-%d", n), fmt.Sprintf("publish %d clusters × (1+%d) objects to a loopback registry, each render its own (servers' CPU: the registry's)", n, o.objects)},
			struct{ id, title string }{fmt.Sprintf("publish-%d-signed", n), fmt.Sprintf("publish %d clusters, each render its own, signed at the wave with signed records", n)},
			struct{ id, title string }{fmt.Sprintf("publish-%d-shared", n), fmt.Sprintf("publish %d clusters, two renders shared by all (blobs pushed once)", n)},
			struct{ id, title string }{fmt.Sprintf("publish-%d-shared-signed", n), fmt.Sprintf("publish %d clusters, two renders shared by all, signed at the wave with signed records", n)},
			struct{ id, title string }{fmt.Sprintf("publish-%d-noop", n), fmt.Sprintf("publish %d clusters again, nothing changed (each render its own)", n)},
			struct{ id, title string }{fmt.Sprintf("publish-%d-signed-noop", n), fmt.Sprintf("publish %d clusters again, nothing changed, signed", n)})
	}
	renders = append(renders,
		struct{ id, title string }{fmt.Sprintf("helm-render-%d", o.helmRender), fmt.Sprintf("helm: a chart rendered for %d clusters", o.helmRender)},
		struct{ id, title string }{fmt.Sprintf("sops-render-%d", o.sopsRender), fmt.Sprintf("SOPS: %d encrypted Secrets rendered for %d clusters", o.sopsFiles, o.sopsRender)},
		struct{ id, title string }{fmt.Sprintf("analyse-%d", o.analyse), fmt.Sprintf("analysis: %d clusters measured %d times each, at once, against a real Prometheus (servers' CPU: Prometheus's)", o.analyse, analysisMeasurements)})
	return renders
}

// goals checks the figures the plugin is held to, at the sizes they are
// set for.
func (b *bench) goals() []string {
	o := b.o
	var out []string
	verdict := func(ok bool) string {
		if ok {
			return "**met**"
		}
		return "**missed**"
	}
	if o.clusters == 10 && o.objects == 100 {
		if f, ok := b.find("apply-noop", "fleet"); ok {
			if fl, ok := b.find("apply-noop", "floor"); ok {
				out = append(out, fmt.Sprintf("no-op apply of 10 clusters × 100 objects at most half the floor's time: %.3f s vs %.3f s (%.2f×): %s", f.Median, fl.Median, f.Median/fl.Median, verdict(f.Median <= fl.Median/2)))
			}
		}
		if f, ok := b.find("apply-create", "fleet"); ok {
			if fl, ok := b.find("apply-create", "floor"); ok {
				out = append(out, fmt.Sprintf("create on 10 clusters at most 1.2× the floor (issue 64): %.3f s vs %.3f s (%.2f×): %s", f.Median, fl.Median, f.Median/fl.Median, verdict(f.Median <= 1.2*fl.Median)))
			}
		}
		if f, ok := b.find("apply-change", "fleet"); ok {
			if fl, ok := b.find("apply-change", "floor"); ok {
				out = append(out, fmt.Sprintf("rollout changing 20 of 100 objects per cluster at most 1.2× the floor sending those 20: %.3f s vs %.3f s (%.2f×): %s", f.Median, fl.Median, f.Median/fl.Median, verdict(f.Median <= 1.2*fl.Median)))
			}
		}
	} else {
		out = append(out, fmt.Sprintf("apply goals are set for 10 clusters × 100 objects; not judged at %d × %d", o.clusters, o.objects))
	}
	out = append(out, b.publishGoals(verdict)...)
	if f, ok := b.find("start", "fleet"); ok && o.starts > 0 {
		per := f.CPU / float64(o.starts) * 1000
		out = append(out, fmt.Sprintf("a start (kubectl-fleet version) in at most 30 ms of CPU (issue 64): %.1f ms: %s", per, verdict(per <= 30)))
	}
	if f, ok := b.find(fmt.Sprintf("analyse-%d", o.analyse), "fleet"); ok && o.analyse > 0 {
		// A measurement's CPU (the process's start and each cluster's
		// setup included), taken by 1,000 clusters every 30 s.
		per := f.CPU / float64(o.analyse*analysisMeasurements)
		core := per * 1000 / 30
		out = append(out, fmt.Sprintf("1,000 clusters analysed every 30 s under one core: %.2f ms of CPU per measurement (1 request each), %.1f%% of a core: %s", per*1000, core*100, verdict(core < 1)))
	}
	if o.objects == 100 {
		if f, ok := b.find("render-100", "fleet"); ok {
			out = append(out, fmt.Sprintf("render 100 clusters × 100 objects ≤ 0.35 s: %.3f s: %s", f.Median, verdict(f.Median <= 0.35)))
		}
		if f, ok := b.find("render-1000", "fleet"); ok {
			rssOK := f.MaxRSS > 0 && f.MaxRSS < 150e6
			out = append(out, fmt.Sprintf("render 1000 clusters × 100 objects ≤ 2 s under 150 MB RSS: %.3f s, %s: %s", f.Median, rss(f.MaxRSS), verdict(f.Median <= 2 && rssOK)))
		}
	}
	if len(out) == 0 {
		out = append(out, "none judged at these sizes")
	}
	return out
}

// publishGoals checks issue 64's figures at the largest fleet published:
// plugin CPU and peak RSS of a publish, what a publish that changes nothing
// asks of the registry, and the peak of one whose renders are shared.
func (b *bench) publishGoals(verdict func(bool) string) []string {
	if len(b.o.publish) == 0 {
		return nil
	}
	n := slices.Max(b.o.publish)
	per := func(r row) float64 { return r.CPU / float64(n) * 1000 }
	var out []string
	if r, ok := b.find(publishName(n, false, false, false), "fleet"); ok {
		out = append(out, fmt.Sprintf("publish %d delivered clusters, each render its own, in at most 10 ms of plugin CPU a cluster under 1 GiB (issue 64): %.1f ms, %s: %s", n, per(r), rss(r.MaxRSS), verdict(per(r) <= 10 && r.MaxRSS > 0 && r.MaxRSS < 1<<30)))
	}
	if r, ok := b.find(publishName(n, false, false, true), "fleet"); ok {
		if _, reqs, ok := b.pushedOf(r); ok {
			each := float64(reqs) / float64(n) // one app a cluster
			out = append(out, fmt.Sprintf("the same again, nothing changed, in at most 1 request a cluster and app and 2 ms of plugin CPU a cluster (issue 64): %.1f requests, %.1f ms: %s", each, per(r), verdict(each <= 1 && per(r) <= 2)))
		}
	}
	if r, ok := b.find(publishName(n, true, false, false), "fleet"); ok {
		out = append(out, fmt.Sprintf("publish %d delivered clusters, two renders shared, under 512 MiB (issue 64): %s: %s", n, rss(r.MaxRSS), verdict(r.MaxRSS > 0 && r.MaxRSS < 512<<20)))
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// bytesOf is n bytes in KiB or MiB.
func bytesOf(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
