package progress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// manyFleet is n staging and m production clusters.
func manyFleet(n, m int) []string {
	var names []string
	for i := range n + m {
		if i < n {
			names = append(names, fmt.Sprintf("stg-%03d", i))
		} else {
			names = append(names, fmt.Sprintf("prod-%03d", i-n))
		}
	}
	return names
}

// group is a manyFleet cluster's group.
func group(cluster string) string {
	if strings.HasPrefix(cluster, "stg-") {
		return "staging"
	}
	return "production"
}

// newDisplay starts the display of clusters on w, without colour.
func newDisplay(w io.Writer, clusters []string) *Display {
	return New(w, output.NewPrefixer(clusters, false), clusters, group)
}

// runStaging plays a staging group on pr: every cluster connects and
// applies 4 objects; stg-003 fails after 2. Production never starts.
func runStaging(pr *Display, clusters []string) {
	for _, c := range clusters {
		if group(c) != "staging" {
			continue
		}
		pr.Stage(c, "connecting")
		pr.Expect(c, 4)
		pr.Stage(c, "applying web")
		var err error
		for i := range 4 {
			if c == "stg-003" && i == 2 {
				err = errors.New("boom")
				break
			}
			pr.Did(c)
		}
		pr.End(c, err)
	}
	pr.Finish()
}

// On a pipe, more clusters than manyOnPipe get no line per cluster and
// stage: the failures as they happen, and one line per group.
func TestProgressCompactOnAPipe(t *testing.T) {
	for _, tc := range []struct {
		staging, production int
		want, notWant       []string
	}{{
		staging: 10, production: 30,
		want: []string{
			"[stg-003]  failed (2/4 objects, 0s)\n",
			"[staging] 9 done, 1 failed, 38/40 objects, 0s\n",
			"[production] 30 not started, 0s\n",
		},
		notWant: []string{"connecting", "applying web", "[stg-001]"},
	}, {
		// A handful: a line per stage, as ever.
		staging: 4, production: 2,
		want:    []string{"[stg-001]  connecting (0s elapsed)\n", "[stg-003]  failed (2/4 objects, 0s)\n", "[stg-000]  done (4/4 objects, 0s)\n"},
		notWant: []string{"[staging]", "[production]"},
	}} {
		var errOut bytes.Buffer
		clusters := manyFleet(tc.staging, tc.production)
		runStaging(newDisplay(&errOut, clusters), clusters)
		got := errOut.String()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%d clusters: no %q in\n%s", len(clusters), w, got)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(got, w) {
				t.Errorf("%d clusters: %q in\n%s", len(clusters), w, got)
			}
		}
	}
}

// On a terminal of 24 rows, 300 clusters get a line per group and the
// clusters running or failed, never more lines than the terminal has.
func TestProgressCompactOnATerminal(t *testing.T) {
	control, terminal, err := testenv.OpenPTY()
	if err != nil {
		if runtime.GOOS == "linux" {
			t.Fatal(err) // OpenPTY is implemented there
		}
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer control.Close()
	if err := testenv.SetPTYSize(terminal, 24, 100); err != nil {
		t.Fatal(err)
	}
	read := testenv.ReadPTY(control)
	clusters := manyFleet(100, 200)
	pr := newDisplay(terminal, clusters)
	if !pr.compact || pr.live == nil {
		t.Fatalf("300 clusters on 24 rows: compact %v, live %v", pr.compact, pr.live != nil)
	}
	// 40 clusters running at once, then a refresh or two.
	for _, c := range clusters[:40] {
		pr.Stage(c, "applying web")
		pr.Expect(c, 4)
	}
	pr.End("stg-003", errors.New("boom"))
	time.Sleep(600 * time.Millisecond)
	if got := pr.shown; got > 24 {
		t.Errorf("%d cluster lines shown on a terminal of 24 rows", got)
	}
	for _, c := range clusters[:40] {
		if c != "stg-003" {
			pr.End(c, nil)
		}
	}
	time.Sleep(300 * time.Millisecond)
	pr.Finish()
	_ = terminal.Close()
	_ = control.SetReadDeadline(time.Now().Add(2 * time.Second))
	shown := <-read
	for _, want := range []string{"[staging] 39 running, 1 failed, 60 waiting, 0/160 objects", "[production] 200 waiting, 0s", "[stg-003]  failed", "[stg-015]  applying web   0/4 objects"} {
		if !strings.Contains(shown, want) {
			t.Errorf("no %q on the terminal:\n%q", want, shown)
		}
	}
	// The clusters past the lines the terminal has are counted, not drawn.
	if strings.Contains(shown, "[stg-039]") {
		t.Errorf("a 24-row terminal drew 40 cluster lines:\n%q", shown)
	}
	if n := len(regexp.MustCompile(`\[prod-\d+\]`).FindAllString(shown, -1)); n > 0 {
		t.Errorf("%d lines of production clusters that never started", n)
	}
}

// skipErr is a skip, as runner.SkipError says one.
type skipErr struct{}

func (skipErr) Error() string { return "app web has no revision 3 here" }
func (skipErr) Skipped() bool { return true }

// A cluster skipped ends "skipped", as the summary says, not "failed".
func TestEndSkipped(t *testing.T) {
	var b strings.Builder
	clusters := []string{"stg-001", "stg-002"}
	pr := newDisplay(&b, clusters)
	pr.Stage("stg-001", "connecting")
	pr.End("stg-001", fmt.Errorf("rollback: %w", skipErr{}))
	pr.Stage("stg-002", "connecting")
	pr.End("stg-002", errors.New("boom"))
	pr.Finish()
	if out := b.String(); !strings.Contains(out, "[stg-001] skipped") || strings.Contains(out, "[stg-001] failed") || !strings.Contains(out, "[stg-002] failed") {
		t.Errorf("output:\n%s", out)
	}
}
