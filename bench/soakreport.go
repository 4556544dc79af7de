package main

import (
	"fmt"
	"strings"
	"time"
)

// soakHeading starts the soak's section of the report, and
// deliveredSoakHeading that of the soak of delivered clusters.
const (
	soakHeading          = "## Soak: reconcile for an hour"
	deliveredSoakHeading = "## Soak: reconcile of delivered clusters for an hour"
)

// soakMarkdown is the soak's section: what ran, each figure's level in
// the warm-up against its peak after, a sample of the passes, and what
// the soak did to the fleet and how the plugin coped.
func (b *bench) soakMarkdown() string {
	r, o := b.soak, b.o.soak
	var s strings.Builder
	heading, target, flags := soakHeading, "make soak", ""
	if r.Delivered {
		heading, target, flags = deliveredSoakHeading, "make soak-delivered", " -soak-delivered"
	}
	fmt.Fprintf(&s, "%s\n\nTaken %s by `%s` (`go run ./bench -compare=false -scale '' -soak %s -soak-clusters %d -soak-interval %s%s`), kubectl-fleet %s, on the machine above.\n\n",
		heading, r.Started, target, o.duration, o.clusters, o.interval, flags, b.pluginVers)
	par := "its default `--parallel`"
	if o.parallel != "" {
		par = "`--parallel " + o.parallel + "`"
	}
	if r.Delivered {
		fmt.Fprintf(&s, "**What runs:** `kubectl fleet reconcile --interval %s --correct-drift --metrics-addr … --log-format json` with %s against %d clusters delivered through a loopback registry (bench/registry, in a process of its own), none with a context (published, not observed), the app of the scaling run (1 Namespace and %d objects) published to every cluster first, for %s. After every pass the soak moves one cluster's tag to another cluster's artifact, as someone with push rights would (the next pass must put it back), and after every %d passes it changes a fifth of the objects (every cluster must be published again). It records what the soak of written-to clusters records, and the requests the registry answered in each pass: a figure, the requests included, fails the soak if its level after the first %s (the warm-up) is more than %.0f%% over its level during it.\n\n",
			o.interval, par, r.Clusters, r.Objects, time.Duration(r.Seconds*float64(time.Second)).Round(time.Second), o.changeEvery, o.warmup, o.tolerance*100)
	} else {
		fmt.Fprintf(&s, "**What runs:** `kubectl fleet reconcile --interval %s --correct-drift --skip-unreachable --metrics-addr … --log-format json` with %s, as a user deploys it, against %d stand-in clusters 50ms away, with the app of the scaling run (1 Namespace and %d objects) applied to every cluster first, for %s. After every pass the soak edits a ConfigMap on one cluster with another field manager (drift the next pass must find and correct), after every %d passes it changes a fifth of the objects (every reachable cluster must be applied), and after every %d passes it cuts the last cluster off or back (its proxy closes every connection). After every pass it records, since the pass before, the plugin's peak RSS and peak live Go heap (after a collection), and its goroutines, open fds and connections at rest (the fewest seen: what a pass left behind), from the plugin's own `/metrics` (the Go and process collectors an operator graphs) and, for connections, the sockets in /proc/PID/fd. A figure fails the soak if its level after the first %s (the warm-up) is more than %.0f%% over its level during it (and more than 8 MiB or 2).\n\n",
			o.interval, par, r.Clusters, r.Objects, time.Duration(r.Seconds*float64(time.Second)).Round(time.Second), o.changeEvery, o.flapEvery, o.warmup, o.tolerance*100)
	}
	s.WriteString("| figure | warm-up level | peak after | ratio | |\n| --- | ---: | ---: | ---: | --- |\n")
	for _, g := range r.Growth {
		verdict := "flat"
		if g.Grew {
			verdict = "**grew**"
		}
		fmt.Fprintf(&s, "| %s | %s | %s | %.2f× | %s |\n", g.Metric, g.format(g.Baseline), g.format(g.After), g.Ratio, verdict)
	}
	s.WriteString("\n**Passes** (a sample, evenly spaced):\n\n| pass | ended at | took | result | RSS | live Go heap | goroutines | fds | connections | registry requests |\n| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, p := range samplePasses(r.Passes, 12) {
		reqs := "-"
		if r.Delivered {
			reqs = itoa(p.Requests)
		}
		fmt.Fprintf(&s, "| %d | %s | %.2f s | %s | %s | %s | %d | %d | %d | %s |\n", p.Pass, time.Duration(p.At*float64(time.Second)).Round(time.Second), p.Seconds, p.Result, rss(p.RSS), rss(p.Heap), p.Goroutines, p.FDs, p.Conns, reqs)
	}
	label, goal := "**Goal (issue 47):**", "RSS, heap, goroutines, fds and connections flat within the tolerance, every drift corrected and every change applied"
	if r.Delivered {
		fmt.Fprintf(&s, "\n**What the fleet went through:** %d passes; %d tags moved by hand, %d put back by the next pass; %d render changes, %d clusters published after them.\n\n",
			len(r.Passes), r.Drifts, r.Corrected, r.Changes, r.Rolled)
		label, goal = "**Goal (issue 64):**", "RSS, heap, goroutines, fds, connections and the registry's requests per pass flat within the tolerance, every moved tag put back and every change published"
	} else {
		fmt.Fprintf(&s, "\n**What the fleet went through:** %d passes; %d drifts injected, %d corrected by the next pass; %d render changes, %d cluster applies after them; the last cluster cut off %d times.\n\n",
			len(r.Passes), r.Drifts, r.Corrected, r.Changes, r.Rolled, r.Flaps)
	}
	if len(r.Failures) == 0 {
		fmt.Fprintf(&s, "%s %s: **met**\n", label, goal)
	} else {
		fmt.Fprintf(&s, "%s **missed**: %s\n", label, strings.Join(r.Failures, "; "))
	}
	return s.String()
}

// samplePasses is at most n of passes, evenly spaced, the first and the
// last among them.
func samplePasses(passes []soakPass, n int) []soakPass {
	if len(passes) <= n {
		return passes
	}
	var out []soakPass
	for i := range n {
		out = append(out, passes[i*(len(passes)-1)/(n-1)])
	}
	return out
}
