package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// gathered is what a Recorder sent, in order.
type gathered struct {
	mu     sync.Mutex
	events []Event
}

func (g *gathered) send(ev Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, ev)
}

// lines are the events as "seq type wave [cluster gate] counts".
func (g *gathered) lines() []string {
	var out []string
	for _, ev := range g.events {
		line := fmt.Sprintf("%d %s", ev.Seq, ev.Type)
		if ev.Wave != "" {
			line += " " + ev.Wave
		}
		if ev.Failure != nil {
			line += " " + ev.Failure.Cluster + " (" + ev.Failure.Gate + ")"
		}
		if ev.Held != nil {
			line += " [" + ev.Held.Brake + "]"
		}
		if ev.Outcome != "" {
			line += " " + ev.Outcome
		}
		c := ev.Counts
		line += fmt.Sprintf(" %d/%d/%d/%d", c.Succeeded, c.Failed, c.NotStarted, c.Total)
		out = append(out, line)
	}
	return out
}

func waves() []runner.Wave {
	return []runner.Wave{
		{Name: "staging", Group: "staging", Clusters: []string{"stg-1", "stg-2"}},
		{Name: "production", Group: "production", Clusters: []string{"prod-1"}},
	}
}

// A release whose canary fails a check, whose production waits for an
// approval, and that rolls back: every event in order, with the counts
// of its wave (or the release's) at that moment.
func TestRecorderRelease(t *testing.T) {
	var g gathered
	r := NewRecorder("shop", Release{ID: "r1", Verb: "apply", Commit: "abc"}, waves(), g.send)
	r.Started()
	r.Observe(rollout.WaveEvent{Wave: "staging", State: rollout.WaveStarted})
	r.Observe(rollout.CheckEvent{Cluster: "stg-2", Check: "smoke", State: "failed"})
	r.Observe(rollout.EndEvent{Cluster: "stg-1"})
	r.Observe(rollout.EndEvent{Cluster: "stg-2", Err: errors.New("check smoke failed: exit status 1")})
	r.Observe(rollout.WaveEvent{Wave: "staging", State: rollout.WaveFinished, Counts: &rollout.WaveCounts{Succeeded: 1, Failed: 1}, Outcomes: []runner.Outcome{
		{Cluster: "stg-1", State: runner.Succeeded}, {Cluster: "stg-2", State: runner.Failed}}})
	r.Observe(rollout.WaveEvent{Wave: "production", State: "awaiting approval", Brake: "approval", Reasons: []string{"prod-1: web not approved"}})
	r.Observe(rollout.ObjectEvent{Cluster: "stg-1"}) // not a release's event
	r.Finished([]runner.Outcome{{Cluster: "stg-1", State: runner.Succeeded}, {Cluster: "stg-2", State: runner.Failed}, {Cluster: "prod-1", State: runner.NotStarted}}, nil)
	r.RolledBack(rollout.UndoEvent{Automatic: true, Why: "staging failed", Clusters: []string{"stg-1"}}, "")
	want := []string{
		"1 release.started 0/0/3/3",
		"2 wave.started staging 0/0/2/2",
		"3 cluster.failed staging stg-2 (check smoke) 1/1/0/2",
		"4 wave.finished staging 1/1/0/2",
		"5 wave.held production [approval] 0/0/1/1",
		"6 approval.required production [approval] 0/0/1/1",
		"7 release.finished failed 1/1/1/3",
		"8 rollback 1/1/1/3",
	}
	if diff := cmp.Diff(want, g.lines()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	held := g.events[5]
	if !strings.Contains(held.Held.Command, "kubectl fleet approve -g production") || len(held.Clusters) != 1 || held.Clusters[0] != "prod-1" {
		t.Errorf("approval.required: command %q, clusters %v", held.Held.Command, held.Clusters)
	}
	if f := g.events[2].Failure; f.Message != "check smoke failed: exit status 1" {
		t.Errorf("the failure's message: %q", f.Message)
	}
	// Every event says its release, and the table of waves as it was.
	last := g.events[6]
	if last.Release.Commit != "abc" || last.Fleet != "shop" || len(last.Waves) != 2 || last.Waves[0].State != "failed" || last.Waves[1].State != "held" {
		t.Errorf("release.finished: %+v", last)
	}
	if rb := g.events[7].Rollback; rb == nil || !rb.Automatic || rb.Why != "staging failed" {
		t.Errorf("rollback: %+v", rb)
	}
}

// How a release ended: the outcomes decide, Ctrl-C apart.
func TestOutcome(t *testing.T) {
	ok := runner.Outcome{State: runner.Succeeded}
	for _, tc := range []struct {
		name     string
		outcomes []runner.Outcome
		err      error
		held     bool
		want     string
	}{
		{"every cluster succeeded", []runner.Outcome{ok, ok}, nil, false, "succeeded"},
		{"a cluster failed", []runner.Outcome{ok, {State: runner.Failed}}, nil, false, "failed"},
		{"not started: the render failed", nil, errors.New("render failed"), false, "failed"},
		{"a wave held", []runner.Outcome{ok, {State: runner.NotStarted, Err: errors.New("awaits approval")}}, nil, true, "held"},
		{"not confirmed", []runner.Outcome{{State: runner.NotStarted, Err: errors.New("not confirmed")}}, nil, false, "not started"},
		{"Ctrl-C", []runner.Outcome{ok, {State: runner.NotStarted, Err: runner.ErrInterrupted}}, nil, true, "interrupted"},
		{"Ctrl-C during a soak", []runner.Outcome{{State: runner.Failed, Err: fmt.Errorf("interrupted: %w", context.Canceled)}}, nil, false, "interrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outcome(countsOf(tc.outcomes), tc.outcomes, tc.err, tc.held); got != tc.want {
				t.Errorf("%s, want %s", got, tc.want)
			}
		})
	}
}

// Clusters tell their ends at once: every event is numbered once, in
// the order sent.
func TestRecorderConcurrent(t *testing.T) {
	var g gathered
	var ws []runner.Wave
	w := runner.Wave{Name: "all", Group: "all"}
	for i := range 200 {
		w.Clusters = append(w.Clusters, fmt.Sprintf("c%d", i))
	}
	ws = append(ws, w)
	r := NewRecorder("f", Release{ID: "x"}, ws, g.send)
	r.now = func() time.Time { return time.Unix(0, 0) }
	r.Observe(rollout.WaveEvent{Wave: "all", State: rollout.WaveStarted})
	var wg sync.WaitGroup
	for i, c := range w.Clusters {
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				err = errors.New("no")
			}
			r.Observe(rollout.EndEvent{Cluster: c, Err: err})
		})
	}
	wg.Wait()
	if len(g.events) != 101 {
		t.Fatalf("%d events, want the wave's start and 100 failures", len(g.events))
	}
	for i, ev := range g.events {
		if ev.Seq != i+1 {
			t.Fatalf("event %d numbered %d", i, ev.Seq)
		}
	}
	if c := g.events[100].Counts; c.Failed != 100 || c.Total != 200 {
		t.Errorf("the last failure's counts: %+v", c)
	}
}

// The fleet file's event names are the events there are.
func TestTypesAreTheFleetFiles(t *testing.T) {
	var names []string
	for _, typ := range Types {
		names = append(names, string(typ))
	}
	if diff := cmp.Diff(fleet.NotifyEvents, names); diff != "" {
		t.Errorf("fleet.NotifyEvents (-) and notify.Types (+):\n%s", diff)
	}
}

// A failure's message is cut to a chat line, never inside a rune.
func TestClip(t *testing.T) {
	long := strings.Repeat("é", maxMessage)
	got := clip(long)
	if len(got) > maxMessage+len(" …") || !strings.HasSuffix(got, " …") || !utf8.ValidString(got) {
		t.Errorf("clip of %d bytes: %d bytes, valid %v", len(long), len(got), utf8.ValidString(got))
	}
	if clip("short") != "short" {
		t.Error("a short message was cut")
	}
}

// What the run decrypted never leaves in an event: a failure's message,
// a hold's reasons and a rollback's why are masked as the terminal is.
func TestRecorderMasks(t *testing.T) {
	var g gathered
	r := NewRecorder("shop", Release{ID: "r1"}, waves(), g.send)
	r.Mask = func(s string) string { return strings.ReplaceAll(s, "hunter2", "***") }
	r.Observe(rollout.EndEvent{Cluster: "stg-1", Err: errors.New(`Secret "db": password hunter2 refused`)})
	r.Observe(rollout.WaveEvent{Wave: "production", State: "not started", Brake: "promotion", Reasons: []string{"stg-1 runs hunter2"}})
	r.RolledBack(rollout.UndoEvent{Why: "hunter2 failed", Clusters: []string{"stg-1"}}, "")
	b, err := json.Marshal(g.events)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") || strings.Count(string(b), "***") < 3 {
		t.Errorf("the events hold the decrypted value:\n%s", b)
	}
}

// A wave's soak fails a cluster after its work ended: its failure is
// said before the wave's end, at the soak. A release that fails before
// its first wave says no cluster failed: they did not start.
func TestRecorderSoakAndNotStarted(t *testing.T) {
	var g gathered
	r := NewRecorder("shop", Release{ID: "r1"}, waves(), g.send)
	r.Observe(rollout.EndEvent{Cluster: "prod-1", Err: errors.New("publish failed")}) // production never started
	r.Observe(rollout.WaveEvent{Wave: "staging", State: rollout.WaveStarted})
	r.Observe(rollout.EndEvent{Cluster: "stg-1"})
	r.Observe(rollout.EndEvent{Cluster: "stg-2"})
	r.Observe(rollout.SoakEvent{Cluster: "stg-2", State: "failed"})
	r.Observe(rollout.WaveEvent{Wave: "staging", State: rollout.WaveFinished, Outcomes: []runner.Outcome{
		{Cluster: "stg-1", State: runner.Succeeded}, {Cluster: "stg-2", State: runner.Failed, Err: errors.New("soak: web unhealthy")}}})
	want := []string{
		"1 wave.started staging 0/0/2/2",
		"2 cluster.failed staging stg-2 (soak) 1/1/0/2",
		"3 wave.finished staging 1/1/0/2",
	}
	if diff := cmp.Diff(want, g.lines()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// BenchmarkRecorderObjects: an object's event, told by every cluster at
// once, costs the Recorder nothing it must lock for.
func BenchmarkRecorderObjects(b *testing.B) {
	r := NewRecorder("f", Release{ID: "r"}, waves(), func(Event) {})
	ev := rollout.ObjectEvent{Cluster: "stg-1", App: "web", Object: "configmap/a"}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Observe(ev)
		}
	})
}
