package e2e

import (
	"runtime"
	"strings"
	"testing"
)

// soakReport is what the tests read of a soak's JSON record (bench's
// soakResult).
type soakReport struct {
	Passes []struct {
		Pass       int
		RSS        int64 `json:"peakRSSBytes"`
		Heap       int64 `json:"peakLiveHeapBytes"`
		Goroutines int64 `json:"goroutinesAtRest"`
		FDs        int64 `json:"fdsAtRest"`
		Conns      int64 `json:"connectionsAtRest"`
		Requests   int64 `json:"registryRequests"`
	}
	Growth []struct {
		Metric string
		Grew   bool
	}
	Drifts, Corrected, Changes, Rolled, Flaps int
	Delivered                                 bool
	Failures                                  []string
}

// TestReconcileSoak runs make soak's program at a tiny size (5 stand-in clusters,
// a pass a second, 75 s), so that it cannot rot and so that each make
// test reconciles through drift, render changes and a cluster cut off
// and back: every drift must be corrected by the next pass, every change
// applied, and the plugin's RSS, heap, goroutines, fds and connections
// must stay within their warm-up's levels.
func TestReconcileSoak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the soak reads /proc")
	}
	var got struct{ Soak soakReport }
	stdout := runBench(t, &got, "-compare=false", "-scale", "", "-objects", "10",
		"-soak", "75s", "-soak-clusters", "5", "-soak-interval", "1s", "-soak-warmup", "25s", "-soak-change-every", "5", "-soak-flap-every", "4")
	s := got.Soak
	if len(s.Passes) < 10 {
		t.Errorf("%d passes in 75 s, want at least 10", len(s.Passes))
	}
	for _, p := range s.Passes {
		if p.RSS <= 0 || p.Heap <= 0 || p.Goroutines <= 0 || p.FDs <= 0 || p.Conns <= 0 {
			t.Errorf("pass %d: a figure is missing: %+v", p.Pass, p)
		}
	}
	if len(s.Growth) != 5 {
		t.Errorf("%d figures judged, want 5: %+v", len(s.Growth), s.Growth)
	}
	if s.Drifts == 0 || s.Corrected != s.Drifts || s.Changes < 2 || s.Rolled == 0 || s.Flaps == 0 || len(s.Failures) > 0 {
		t.Errorf("%d drifts, %d corrected; %d changes, %d applies after them; %d flaps; failures %q", s.Drifts, s.Corrected, s.Changes, s.Rolled, s.Flaps, s.Failures)
	}
	for _, want := range []string{"## Soak: reconcile for an hour", "| live Go heap |", "**met**"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
}

// TestReconcileSoakDelivered: make soak-delivered at a tiny size (5
// clusters delivered through a loopback registry, 45 s): every tag moved
// by hand is put back by the next pass, every change published, and the
// registry's requests per pass judged beside the plugin's figures.
func TestReconcileSoakDelivered(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the soak reads /proc")
	}
	var got struct{ Soak soakReport }
	stdout := runBench(t, &got, "-compare=false", "-scale", "", "-objects", "10",
		"-soak", "45s", "-soak-delivered", "-soak-clusters", "5", "-soak-interval", "1s", "-soak-warmup", "15s", "-soak-change-every", "4", "-soak-flap-every", "0")
	s := got.Soak
	if len(s.Passes) < 10 || !s.Delivered {
		t.Errorf("%d passes in 45 s (want at least 10), delivered %v", len(s.Passes), s.Delivered)
	}
	for _, p := range s.Passes {
		if p.Requests <= 0 {
			t.Errorf("pass %d: no registry requests counted", p.Pass)
		}
	}
	if len(s.Growth) != 6 || s.Growth[5].Metric != "registry requests per pass" {
		t.Errorf("figures judged: %+v, want 6, the registry's requests last", s.Growth)
	}
	if s.Drifts == 0 || s.Corrected != s.Drifts || s.Changes < 2 || s.Rolled != 5*s.Changes || len(s.Failures) > 0 {
		t.Errorf("%d tags moved, %d put back; %d changes, %d clusters published after them; failures %q", s.Drifts, s.Corrected, s.Changes, s.Rolled, s.Failures)
	}
	for _, want := range []string{"## Soak: reconcile of delivered clusters for an hour", "| registry requests per pass |", "**met**"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
}
