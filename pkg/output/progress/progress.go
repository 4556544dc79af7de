// Package progress is the live display of a command that works on many
// clusters, on stderr: a line per cluster (its stage, objects done, time
// elapsed) or, with more clusters than fit, a line per group and the
// clusters running or failed. On a terminal mpb draws the lines; on a
// pipe (CI) they are plain lines, said as they change. A command tells it
// each cluster's stages and objects (Stage, Expect, Did, End).
package progress

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// Display tells where each cluster of a long command is. On a terminal
// (stderr) it keeps one live line per cluster at the bottom: stage,
// objects done of total, time elapsed (mpb draws them); elsewhere (CI) it
// prints a plain prefixed line on stderr each time a cluster's stage
// changes. With more clusters than fit (Many), it is compact: one line
// per group (how many clusters are done, running, failed and waiting,
// objects, elapsed, soak left) and, on a terminal, the clusters running
// or failed; elsewhere the failures as they happen and each group's line
// when it ends (and every plainEvery while it runs). A nil *Display does
// nothing.
type Display struct {
	live    *mpb.Progress
	plain   io.Writer
	prefix  *output.Prefixer
	compact bool
	// lines is how many cluster lines compact live mode shows at most.
	lines int
	stop  chan struct{}

	mu       sync.Mutex
	clusters map[string]*clusterProgress
	groups   []*groupProgress
	shown    int
	// finished: Finish removed the live lines; what is written to the
	// Writer since goes to stdout itself.
	finished bool
}

type clusterProgress struct {
	name   string
	bar    *mpb.Bar
	stage  string
	done   int64
	total  int64
	start  time.Time
	group  *groupProgress
	ended  bool
	failed bool
}

// groupProgress is a group's line in compact mode.
type groupProgress struct {
	name       string
	members    []*clusterProgress
	start, end time.Time
	// ended is how many members have ended.
	ended int
	said  bool
	bar   *mpb.Bar
}

// plainEvery is how often compact plain mode says the running groups'
// lines.
const plainEvery = 15 * time.Second

// Many is how many clusters get a line each on w (stderr): as many as
// the terminal has rows for, or, on a pipe, manyOnPipe. More clusters get
// compact output, and summaries group their identical lines.
func Many(w io.Writer) int {
	if fd, ok := output.Terminal(w); ok {
		if _, rows, err := term.GetSize(fd); err == nil && rows > 0 {
			return max(rows-4, 4)
		}
	}
	return manyOnPipe
}

// manyOnPipe is how many clusters a pipe (a CI log) gets one line each
// for; more get compact output.
const manyOnPipe = 30

// New starts the display on w (stderr) of the clusters named, in order,
// each in its group (group(name)), their names prefixed by prefix.
func New(w io.Writer, prefix *output.Prefixer, names []string, group func(cluster string) string) *Display {
	many := Many(w)
	pr := &Display{prefix: prefix, clusters: map[string]*clusterProgress{}, plain: output.NewSyncWriter(w), compact: len(names) > many, lines: max(many-2, 3)}
	if _, ok := output.Terminal(w); ok {
		pr.live = mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh())
	}
	byGroup := map[string]*groupProgress{}
	for _, name := range names {
		cp := &clusterProgress{name: name, stage: "waiting", start: time.Now()}
		pr.clusters[name] = cp
		g := group(name)
		gp := byGroup[g]
		if gp == nil {
			gp = &groupProgress{name: g}
			byGroup[g] = gp
			pr.groups = append(pr.groups, gp)
		}
		gp.members = append(gp.members, cp)
		cp.group = gp
		if pr.live != nil && !pr.compact {
			cp.bar = pr.clusterBar(cp)
		}
	}
	if pr.compact {
		pr.lines = max(pr.lines-len(pr.groups), 3)
		for _, gp := range pr.groups {
			if pr.live != nil {
				gp.bar = pr.live.New(0, mpb.NopStyle(), mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return pr.groupLine(gp, false) })))
			}
		}
		if pr.live == nil {
			pr.stop = make(chan struct{})
			go pr.tick()
		}
	}
	return pr
}

// clusterBar is a cluster's live line.
func (pr *Display) clusterBar(cp *clusterProgress) *mpb.Bar {
	name := pr.prefix.Prefix(cp.name)
	return pr.live.New(0, mpb.NopStyle(),
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return name }),
			decor.Any(func(decor.Statistics) string { return pr.stageOf(cp.name) })),
		mpb.AppendDecorators(decor.Any(func(s decor.Statistics) string {
			return " " + counted(s.Current, s.Total, cp.start)
		})),
		mpb.BarRemoveOnComplete())
}

// counted is "3/8 objects, 2s", or "2s elapsed" while how many objects there are
// is not known (connecting; a delete, which learns it as it lists them).
func counted(done, total int64, start time.Time) string {
	elapsed := time.Since(start).Round(time.Second)
	if total == 0 {
		return elapsed.String() + " elapsed"
	}
	return fmt.Sprintf("%d/%d objects, %s", done, total, elapsed)
}

// groupLine is a group's compact line: "[staging] 3 done, 2 running, 1
// failed, 4 waiting, 120/400 objects, 12s, soak 25s left". Once the
// command ends (final), the clusters still waiting are "not started".
func (pr *Display) groupLine(gp *groupProgress, final bool) string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var done, running, failed, waiting int
	var objects, total int64
	soak := ""
	for _, cp := range gp.members {
		objects, total = objects+cp.done, total+cp.total
		switch {
		case cp.failed:
			failed++
		case cp.ended:
			done++
		case cp.stage == "waiting":
			waiting++
		default:
			running++
			if left, ok := strings.CutPrefix(cp.stage, "soak, "); ok && soak == "" {
				soak = ", soak " + left
			}
		}
	}
	notRun := "waiting"
	if final {
		notRun = "not started"
	}
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{done, "done"}, {running, "running"}, {failed, "failed"}, {waiting, notRun}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	elapsed := time.Duration(0)
	if !gp.start.IsZero() {
		end := gp.end
		if end.IsZero() {
			end = time.Now()
		}
		elapsed = end.Sub(gp.start).Round(time.Second)
	}
	if total > 0 { // a delete does not know how many there are ahead
		parts = append(parts, fmt.Sprintf("%d/%d objects", objects, total))
	}
	return fmt.Sprintf("[%s] %s, %s%s", gp.name, strings.Join(parts, ", "), elapsed, soak)
}

// tick says the running groups' lines every plainEvery, until Finish.
func (pr *Display) tick() {
	t := time.NewTicker(plainEvery)
	defer t.Stop()
	for {
		select {
		case <-pr.stop:
			return
		case <-t.C:
			for _, gp := range pr.groups {
				pr.mu.Lock()
				running := !gp.start.IsZero() && gp.end.IsZero()
				pr.mu.Unlock()
				if running {
					fmt.Fprintln(pr.plain, pr.groupLine(gp, false))
				}
			}
		}
	}
}

// Writer returns where stdout's lines go while the live lines are drawn:
// above them when both are the same terminal, else stdout itself. Once
// Finish has removed the live lines, its lines (the summary) go to
// stdout.
func (pr *Display) Writer(stdout io.Writer) io.Writer {
	if pr == nil || pr.live == nil {
		return stdout
	}
	if _, ok := output.Terminal(stdout); ok {
		return above{pr, stdout}
	}
	return stdout
}

// above writes above the live lines until they are removed, then to
// stdout: a write to the live display after it stopped is never shown.
type above struct {
	pr     *Display
	stdout io.Writer
}

func (a above) Write(b []byte) (int, error) {
	a.pr.mu.Lock()
	finished := a.pr.finished
	a.pr.mu.Unlock()
	if finished {
		return a.stdout.Write(b)
	}
	return a.pr.live.Write(b)
}

func (pr *Display) stageOf(cluster string) string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.clusters[cluster].stage
}

// Stage sets what a cluster is doing.
func (pr *Display) Stage(cluster, format string, args ...any) {
	if pr == nil {
		return
	}
	s := fmt.Sprintf(format, args...)
	pr.mu.Lock()
	cp := pr.clusters[cluster]
	changed := cp != nil && cp.stage != s
	if changed {
		cp.stage = s
		if gp := cp.group; gp.start.IsZero() {
			gp.start = time.Now()
		}
	}
	// Compact live mode shows a cluster once it runs, lines allowing.
	show := changed && pr.compact && pr.live != nil && cp.bar == nil && !cp.ended && pr.shown < pr.lines
	if show {
		pr.shown++
	}
	done, total := cp.done, cp.total
	pr.mu.Unlock()
	switch {
	case show:
		bar := pr.clusterBar(cp)
		bar.SetTotal(total, false)
		bar.SetCurrent(done)
		pr.mu.Lock()
		cp.bar = bar
		pr.mu.Unlock()
	case changed && pr.live == nil && !pr.compact:
		fmt.Fprintf(pr.plain, "%s%s (%s)\n", pr.prefix.Prefix(cluster), s, counted(done, total, cp.start))
	}
}

// Expect adds objects a cluster will work on.
func (pr *Display) Expect(cluster string, n int) {
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

// Did counts one object done.
func (pr *Display) Did(cluster string) {
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

// End closes a cluster's line with its outcome: done, failed with err,
// or skipped when err says so (a Skipped method, as runner.SkipError's),
// as the summary does. In compact mode a failed cluster's line stays (on
// a terminal) or is said (elsewhere), and a group's line is said when its
// last cluster ends.
func (pr *Display) End(cluster string, err error) {
	if pr == nil {
		return
	}
	outcome := "done"
	var skip interface{ Skipped() bool }
	switch {
	case errors.As(err, &skip) && skip.Skipped():
		outcome, err = "skipped", nil
	case err != nil:
		outcome = "failed"
	}
	if !pr.compact {
		pr.Stage(cluster, "%s", outcome)
	}
	pr.mu.Lock()
	cp := pr.clusters[cluster]
	gp := cp.group
	if !cp.ended {
		gp.ended++
	}
	cp.stage, cp.ended, cp.failed = outcome, true, err != nil
	if gp.ended == len(gp.members) {
		gp.end = time.Now()
	}
	groupEnded := !gp.end.IsZero() && !gp.said
	if pr.compact && pr.live == nil && groupEnded {
		gp.said = true
	}
	bar, keep := cp.bar, pr.compact && err != nil
	if bar != nil && !keep {
		pr.shown--
	}
	done, total := cp.done, cp.total
	pr.mu.Unlock()
	switch {
	case bar != nil && !keep:
		bar.SetTotal(-1, true)
	case pr.compact && pr.live == nil:
		if err != nil {
			fmt.Fprintf(pr.plain, "%sfailed (%s)\n", pr.prefix.Prefix(cluster), counted(done, total, cp.start))
		}
		if groupEnded {
			fmt.Fprintln(pr.plain, pr.groupLine(gp, false))
		}
	}
}

// Finish removes the live lines; in compact plain mode it says the lines
// of the groups not said yet (not started, or cut short).
func (pr *Display) Finish() {
	if pr == nil {
		return
	}
	if pr.stop != nil {
		close(pr.stop)
		for _, gp := range pr.groups {
			pr.mu.Lock()
			said := gp.said
			gp.said = true
			pr.mu.Unlock()
			if !said {
				fmt.Fprintln(pr.plain, pr.groupLine(gp, true))
			}
		}
	}
	if pr.live == nil {
		return
	}
	pr.mu.Lock()
	var bars []*mpb.Bar
	for _, gp := range pr.groups {
		bars = append(bars, gp.bar)
		for _, cp := range gp.members {
			bars = append(bars, cp.bar)
		}
	}
	pr.mu.Unlock()
	for _, bar := range bars {
		if bar != nil && !bar.Completed() {
			bar.Abort(true)
		}
	}
	pr.live.Wait()
	pr.mu.Lock()
	pr.finished = true
	pr.mu.Unlock()
}
