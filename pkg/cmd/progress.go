package cmd

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// progress tells where each cluster of a long command is. On a terminal
// (stderr) it keeps one live line per cluster at the bottom: stage,
// objects done of total, time elapsed (mpb draws them); elsewhere (CI) it
// prints a plain prefixed line on stderr each time a cluster's stage
// changes. A nil *progress does nothing.
type progress struct {
	live   *mpb.Progress
	plain  io.Writer
	prefix *output.Prefixer

	mu       sync.Mutex
	clusters map[string]*clusterProgress
}

type clusterProgress struct {
	bar   *mpb.Bar
	stage string
	done  int64
	total int64
	start time.Time
}

// newProgress starts the display for clusters; json output gets none.
func (g *GlobalOptions) newProgress(clusters []*fleet.Cluster, json bool) *progress {
	if json {
		return nil
	}
	pr := &progress{prefix: g.prefixer(clusters), clusters: map[string]*clusterProgress{}, plain: output.NewSyncWriter(g.ErrOut)}
	if f, ok := g.ErrOut.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		pr.live = mpb.New(mpb.WithOutput(g.ErrOut), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh())
	}
	for _, c := range clusters {
		cp := &clusterProgress{stage: "waiting", start: time.Now()}
		pr.clusters[c.Name] = cp
		if pr.live != nil {
			name := pr.prefix.Prefix(c.Name)
			cp.bar = pr.live.New(0, mpb.NopStyle(),
				mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return name }),
					decor.Any(func(decor.Statistics) string { return pr.stageOf(c.Name) })),
				mpb.AppendDecorators(decor.Any(func(s decor.Statistics) string {
					return fmt.Sprintf(" %d/%d objects, %s", s.Current, s.Total, time.Since(cp.start).Round(time.Second))
				})),
				mpb.BarRemoveOnComplete())
		}
	}
	return pr
}

// writer returns where stdout's lines go while the live lines are drawn:
// above them when both are the same terminal, else stdout itself.
func (pr *progress) writer(stdout io.Writer) io.Writer {
	if pr == nil || pr.live == nil {
		return stdout
	}
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return pr.live
	}
	return stdout
}

func (pr *progress) stageOf(cluster string) string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.clusters[cluster].stage
}

// stage sets what a cluster is doing.
func (pr *progress) stage(cluster, format string, args ...any) {
	if pr == nil {
		return
	}
	s := fmt.Sprintf(format, args...)
	pr.mu.Lock()
	cp := pr.clusters[cluster]
	changed := cp != nil && cp.stage != s
	if changed {
		cp.stage = s
	}
	pr.mu.Unlock()
	if changed && pr.live == nil {
		fmt.Fprintf(pr.plain, "%s%s (%d/%d objects, %s)\n", pr.prefix.Prefix(cluster), s, cp.done, cp.total, time.Since(cp.start).Round(time.Second))
	}
}

// expect adds objects a cluster will work on.
func (pr *progress) expect(cluster string, n int) {
	if pr == nil {
		return
	}
	pr.mu.Lock()
	cp := pr.clusters[cluster]
	cp.total += int64(n)
	total := cp.total
	pr.mu.Unlock()
	if cp.bar != nil {
		cp.bar.SetTotal(total, false)
	}
}

// did counts one object done.
func (pr *progress) did(cluster string) {
	if pr == nil {
		return
	}
	pr.mu.Lock()
	cp := pr.clusters[cluster]
	cp.done++
	// Work whose size is not known up front (delete) grows as it goes.
	grown := cp.done > cp.total
	if grown {
		cp.total = cp.done
	}
	total := cp.total
	pr.mu.Unlock()
	if cp.bar != nil {
		if grown {
			cp.bar.SetTotal(total, false)
		}
		cp.bar.IncrBy(1)
	}
}

// end closes a cluster's line with its outcome: done, or failed with err.
func (pr *progress) end(cluster string, err error) {
	if pr == nil {
		return
	}
	if err != nil {
		pr.stage(cluster, "failed")
	} else {
		pr.stage(cluster, "done")
	}
	pr.mu.Lock()
	cp := pr.clusters[cluster]
	pr.mu.Unlock()
	if cp.bar != nil {
		cp.bar.SetTotal(-1, true)
	}
}

// finish removes the live lines.
func (pr *progress) finish() {
	if pr == nil || pr.live == nil {
		return
	}
	for _, cp := range pr.clusters {
		if cp.bar != nil && !cp.bar.Completed() {
			cp.bar.Abort(true)
		}
	}
	pr.live.Wait()
}
