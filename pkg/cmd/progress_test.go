package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/testenv"
)

// manyFleet is n staging and m production clusters.
func manyFleet(n, m int) []*fleet.Cluster {
	var cs []*fleet.Cluster
	for i := range n + m {
		c := &fleet.Cluster{Name: fmt.Sprintf("stg-%03d", i), Group: "staging"}
		if i >= n {
			c = &fleet.Cluster{Name: fmt.Sprintf("prod-%03d", i-n), Group: "production"}
		}
		cs = append(cs, c)
	}
	return cs
}

// runStaging plays a staging group on pr: every cluster connects and
// applies 4 objects; stg-003 fails after 2. Production never starts.
func runStaging(pr *progress, clusters []*fleet.Cluster) {
	for _, c := range clusters {
		if c.Group != "staging" {
			continue
		}
		pr.stage(c.Name, "connecting")
		pr.expect(c.Name, 4)
		pr.stage(c.Name, "applying web")
		var err error
		for i := range 4 {
			if c.Name == "stg-003" && i == 2 {
				err = errors.New("boom")
				break
			}
			pr.did(c.Name)
		}
		pr.end(c.Name, err)
	}
	pr.finish()
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
			"[production] 30 not started, 0/0 objects, 0s\n",
		},
		notWant: []string{"connecting", "applying web", "[stg-001]"},
	}, {
		// A handful: a line per stage, as ever.
		staging: 4, production: 2,
		want:    []string{"[stg-001]  connecting (0/0 objects, 0s)\n", "[stg-003]  failed (2/4 objects, 0s)\n", "[stg-000]  done (4/4 objects, 0s)\n"},
		notWant: []string{"[staging]", "[production]"},
	}} {
		var errOut bytes.Buffer
		g := &GlobalOptions{IOStreams: genericiooptions.IOStreams{Out: &bytes.Buffer{}, ErrOut: &errOut}, NoColor: true}
		clusters := manyFleet(tc.staging, tc.production)
		runStaging(g.newProgress(clusters, false), clusters)
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
	g := &GlobalOptions{IOStreams: genericiooptions.IOStreams{Out: &bytes.Buffer{}, ErrOut: terminal}, NoColor: true}
	clusters := manyFleet(100, 200)
	pr := g.newProgress(clusters, false)
	if !pr.compact || pr.live == nil {
		t.Fatalf("300 clusters on 24 rows: compact %v, live %v", pr.compact, pr.live != nil)
	}
	// 40 clusters running at once, then a refresh or two.
	for _, c := range clusters[:40] {
		pr.stage(c.Name, "applying web")
		pr.expect(c.Name, 4)
	}
	pr.end("stg-003", errors.New("boom"))
	time.Sleep(600 * time.Millisecond)
	if got := pr.shown; got > 24 {
		t.Errorf("%d cluster lines shown on a terminal of 24 rows", got)
	}
	for _, c := range clusters[:40] {
		if c.Name != "stg-003" {
			pr.end(c.Name, nil)
		}
	}
	time.Sleep(300 * time.Millisecond)
	pr.finish()
	_ = terminal.Close()
	_ = control.SetReadDeadline(time.Now().Add(2 * time.Second))
	shown := <-read
	for _, want := range []string{"[staging] 39 running, 1 failed, 60 waiting, 0/160 objects", "[production] 200 waiting, 0/0 objects, 0s", "[stg-003]  failed", "[stg-015]  applying web   0/4 objects"} {
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

// With many clusters the summary says identical outcomes once and names
// only the clusters that differ; -o json stays per cluster.
func TestSummaryGroupsIdenticalOutcomes(t *testing.T) {
	clusters := manyFleet(2, 38)
	byName := map[string]*fleet.Cluster{}
	var outcomes []runner.Outcome
	var tally counts
	for _, c := range clusters {
		byName[c.Name] = c
		oc := runner.Outcome{Cluster: c.Name, State: runner.Succeeded}
		switch c.Name {
		case "stg-001":
			oc.State, oc.Err = runner.Failed, errors.New("boom")
		case "prod-000", "prod-001", "prod-002":
			oc.State, oc.Err = runner.NotStarted, errors.New("staging failed")
		}
		for range 40 {
			tally.add(c.Name, apply.Unchanged)
		}
		outcomes = append(outcomes, oc)
	}
	for _, tc := range []struct {
		many      int
		json      bool
		want      []string
		lines     int
		notWanted string
	}{
		{many: 30, want: []string{"36 clusters applied: 40 unchanged\n", "[stg-001]  failed: 40 unchanged: boom\n", "3 clusters not started: 40 unchanged: staging failed\n"}, lines: 4, notWanted: "[prod-010]"},
		{many: 100, want: []string{"[prod-010] applied: 40 unchanged\n"}, lines: 41},
		{many: 30, json: true, want: []string{`"cluster":"prod-010"`}, lines: 40},
	} {
		var out bytes.Buffer
		g := &GlobalOptions{IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}, NoColor: true}
		p := g.newPrinter(clusters, tc.json)
		p.many = tc.many
		if failed := printSummary(p, outcomes, &tally, byName, false, "applied"); failed != 4 {
			t.Errorf("%d failed, want 4", failed)
		}
		got := out.String()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("many %d, json %v: no %q in\n%s", tc.many, tc.json, w, got)
			}
		}
		if n := strings.Count(got, "\n"); n != tc.lines {
			t.Errorf("many %d, json %v: %d lines, want %d:\n%s", tc.many, tc.json, n, tc.lines, got)
		}
		if tc.notWanted != "" && strings.Contains(got, tc.notWanted) {
			t.Errorf("many %d: %q in\n%s", tc.many, tc.notWanted, got)
		}
	}
}
