package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func states(out []Outcome) map[string]State {
	m := map[string]State{}
	for _, o := range out {
		m[o.Cluster] = o.State
	}
	return m
}

func TestRunStopsAfterFailureBudget(t *testing.T) {
	waves := []Wave{
		{Name: "staging", Clusters: []string{"s1", "s2"}, MaxParallel: 1},
		{Name: "production", Clusters: []string{"p1", "p2"}},
	}
	out := Run(context.Background(), waves, 0, func(_ context.Context, c string) error {
		if c == "s1" {
			return errors.New("boom")
		}
		return nil
	})
	want := map[string]State{"s1": Failed, "s2": NotStarted, "p1": NotStarted, "p2": NotStarted}
	if diff := cmp.Diff(want, states(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if out[0].Err == nil || out[0].Wave != "staging" {
		t.Errorf("first outcome %+v", out[0])
	}
	// Every cluster not started says why, in its wave too.
	for _, o := range out[1:] {
		if o.Err == nil || o.Err.Error() != "staging failed (1 of 2 clusters; maxFailures 0)" {
			t.Errorf("%s not started: %v", o.Cluster, o.Err)
		}
	}
}

func TestRunToleratesFailures(t *testing.T) {
	waves := []Wave{
		{Name: "a", Clusters: []string{"a1", "a2", "a3"}, MaxParallel: 1, MaxFailures: 1},
		{Name: "b", Clusters: []string{"b1"}},
	}
	out := Run(context.Background(), waves, 0, func(_ context.Context, c string) error {
		if c == "a1" {
			return errors.New("boom")
		}
		return nil
	})
	want := map[string]State{"a1": Failed, "a2": Succeeded, "a3": Succeeded, "b1": Succeeded}
	if diff := cmp.Diff(want, states(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestRunSkipIsNotAFailure: a skipped cluster is reported, and does not
// spend its wave's failure budget.
func TestRunSkipIsNotAFailure(t *testing.T) {
	waves := []Wave{
		{Name: "staging", Clusters: []string{"s1", "s2"}, MaxParallel: 1},
		{Name: "production", Clusters: []string{"p1"}},
	}
	out := Run(context.Background(), waves, 0, func(_ context.Context, c string) error {
		if c == "s1" {
			return fmt.Errorf("app web: %w", &SkipError{Reason: "no revision 3 here"})
		}
		return nil
	})
	want := map[string]State{"s1": Skipped, "s2": Succeeded, "p1": Succeeded}
	if diff := cmp.Diff(want, states(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if out[0].Err == nil || out[0].Err.Error() != "app web: no revision 3 here" {
		t.Errorf("skip reason %v", out[0].Err)
	}
}

func TestRunBoundsParallelism(t *testing.T) {
	var inFlight, peak atomic.Int32
	var mu sync.Mutex
	clusters := []string{"1", "2", "3", "4", "5", "6", "7", "8"}
	release := make(chan struct{})
	go func() {
		for range clusters {
			release <- struct{}{}
		}
	}()
	Run(context.Background(), []Wave{{Name: "w", Clusters: clusters, MaxParallel: 5}}, 3, func(context.Context, string) error {
		n := inFlight.Add(1)
		mu.Lock()
		if n > peak.Load() {
			peak.Store(n)
		}
		mu.Unlock()
		<-release
		inFlight.Add(-1)
		return nil
	})
	if p := peak.Load(); p > 3 || p < 1 {
		t.Errorf("peak parallelism %d, want at most 3", p)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := Run(ctx, []Wave{{Name: "w", Clusters: []string{"1", "2", "3"}, MaxParallel: 1}}, 0, func(context.Context, string) error {
		cancel()
		return nil
	})
	want := map[string]State{"1": Succeeded, "2": NotStarted, "3": NotStarted}
	if diff := cmp.Diff(want, states(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, o := range out[1:] {
		if o.Err == nil || o.Err.Error() != "interrupted" {
			t.Errorf("%s not started: %v", o.Cluster, o.Err)
		}
	}
}

func TestRunGate(t *testing.T) {
	refused := errors.New("not confirmed")
	var ran []string
	out := Run(context.Background(), []Wave{
		{Name: "staging", Clusters: []string{"s1"}},
		{Name: "production", Clusters: []string{"p1"}, Brake: func() error { return refused }},
		{Name: "later", Clusters: []string{"l1"}},
	}, 0, func(_ context.Context, c string) error {
		ran = append(ran, c)
		return nil
	})
	want := map[string]State{"s1": Succeeded, "p1": NotStarted, "l1": NotStarted}
	if diff := cmp.Diff(want, states(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !errors.Is(out[1].Err, refused) || len(ran) != 1 {
		t.Errorf("gate error %v, ran %v", out[1].Err, ran)
	}
}

// A wave's After hook (a soak) can fail clusters that had succeeded, and
// stops the rollout when that passes the budget.
func TestAfterFailsClusters(t *testing.T) {
	var sawSucceeded []string
	waves := []Wave{
		{Name: "staging", Clusters: []string{"a", "b", "c"}, MaxFailures: 1, After: func(_ context.Context, succeeded []string) map[string]error {
			sawSucceeded = succeeded
			return map[string]error{"b": errors.New("unhealthy during the soak")}
		}},
		{Name: "production", Clusters: []string{"p"}},
	}
	outcomes := Run(context.Background(), waves, 1, func(_ context.Context, cluster string) error {
		if cluster == "c" {
			return errors.New("failed")
		}
		return nil
	})
	if !cmp.Equal(sawSucceeded, []string{"a", "b"}) {
		t.Errorf("After saw %v, want [a b]", sawSucceeded)
	}
	want := map[string]State{"a": Succeeded, "b": Failed, "c": Failed, "p": NotStarted}
	if diff := cmp.Diff(want, states(outcomes)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	// Within the budget, the rollout goes on.
	waves[0].MaxFailures = 2
	outcomes = Run(context.Background(), waves, 1, func(context.Context, string) error { return nil })
	if outcomes[1].State != Failed || outcomes[3].State != Succeeded {
		t.Errorf("within the budget: %v", outcomes)
	}
}

// TestRunSaysInterrupted: a cluster whose work ends because the run was
// cancelled says so.
func TestRunSaysInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := Run(ctx, []Wave{{Name: "w", Clusters: []string{"a"}}, {Name: "later", Clusters: []string{"b"}}}, 0, func(ctx context.Context, c string) error {
		cancel()
		<-ctx.Done()
		return fmt.Errorf("app web: %w", ctx.Err())
	})
	if out[0].State != Failed || out[0].Err == nil || out[0].Err.Error() != "interrupted: app web: context canceled" {
		t.Errorf("outcome %+v", out[0])
	}
	if out[1].State != NotStarted {
		t.Errorf("later wave %+v", out[1])
	}
}

// TestRunTracks: a wave with Needs waits only for those; a failure in
// one track holds what needs it, directly or not, and nothing else.
func TestRunTracks(t *testing.T) {
	waves := []Wave{
		{Name: "eu-staging", Clusters: []string{"es"}, Needs: []string{}},
		{Name: "eu-prod", Clusters: []string{"ep"}, Needs: []string{"eu-staging"}},
		{Name: "us-staging", Clusters: []string{"us"}, Needs: []string{}},
		{Name: "us-prod", Clusters: []string{"up"}, Needs: []string{"us-staging"}},
		{Name: "global", Clusters: []string{"g"}, Needs: []string{"eu-staging", "eu-prod", "us-staging", "us-prod"}},
	}
	out := Run(context.Background(), waves, 0, func(_ context.Context, c string) error {
		if c == "es" {
			return errors.New("boom")
		}
		return nil
	})
	want := map[string]State{"es": Failed, "ep": NotStarted, "us": Succeeded, "up": Succeeded, "g": NotStarted}
	if diff := cmp.Diff(want, states(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, o := range out {
		if o.State == NotStarted && (o.Err == nil || o.Err.Error() != "eu-staging failed (1 of 1 clusters; maxFailures 0)") {
			t.Errorf("%s not started: %v", o.Cluster, o.Err)
		}
	}
}

// TestRunInterruptedHoldsEveryTrack: after Ctrl-C no wave starts, in
// any track, and none of their gates is asked.
func TestRunInterruptedHoldsEveryTrack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	waves := []Wave{
		{Name: "a", Clusters: []string{"a1"}, Needs: []string{}},
		{Name: "b", Clusters: []string{"b1"}, Needs: []string{}, Brake: func() error { t.Error("gate asked after Ctrl-C"); return nil }},
	}
	out := Run(ctx, waves, 0, func(context.Context, string) error { cancel(); return nil })
	if out[1].State != NotStarted || out[1].Err == nil || out[1].Err.Error() != "interrupted" {
		t.Errorf("b: %+v", out[1])
	}
}

// TestRunTellsWaveStartAndEnd: a wave's Started comes after its brake
// let it go and before its clusters, Ended after its After with the
// outcomes After decided; a held wave is told neither.
func TestRunTellsWaveStartAndEnd(t *testing.T) {
	var said []string
	note := func(s string) { said = append(said, s) }
	waves := []Wave{
		{Name: "staging", Clusters: []string{"s1"}, Brake: func() error { note("brake staging"); return nil },
			Started: func() { note("started staging") },
			After: func(context.Context, []string) map[string]error {
				note("after staging")
				return map[string]error{"s1": errors.New("soak failed")}
			},
			Ended: func(out []Outcome) { note(fmt.Sprintf("ended staging: %s %s", out[0].Cluster, out[0].State)) }},
		{Name: "production", Clusters: []string{"p1"}, Started: func() { note("started production") }, Ended: func([]Outcome) { note("ended production") }},
	}
	Run(context.Background(), waves, 0, func(_ context.Context, c string) error { note("run " + c); return nil })
	want := []string{"brake staging", "started staging", "run s1", "after staging", "ended staging: s1 failed"}
	if diff := cmp.Diff(want, said); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Count counts outcomes by state.
func TestCount(t *testing.T) {
	got := Count([]Outcome{{State: Succeeded}, {State: Failed}, {State: Succeeded}, {State: NotStarted}})
	if diff := cmp.Diff(map[State]int{Succeeded: 2, Failed: 1, NotStarted: 1}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
