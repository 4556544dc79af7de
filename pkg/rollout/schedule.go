package rollout

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// schedule is a fleet rollout: its waves (the fleet's groups in order,
// each with its budget), and what stands between them.
type schedule struct {
	Waves []runner.Wave
	// Parallel bounds the clusters worked on at once.
	Parallel int
	// Brakes hold each wave before it starts, by wave name, asked in
	// order: the first that says no holds it (Engine.brakes).
	Brakes map[string][]Brake
	// Soaks are the waves' soaks, by wave name: each runs once its wave
	// went through, on the clusters that succeeded, the last wave's too.
	Soaks map[string]soakRun
	// Emit, if set, is told when a wave starts and when it ends
	// (WaveEvent).
	Emit Sink
}

// WaveEvent is a wave that started (WaveStarted), ended
// (WaveFinished, with its counts), or did not start, and why: the
// brake's reasons.
type WaveEvent struct {
	Type  string `json:"type"`
	Wave  string `json:"wave"`
	State string `json:"state"`
	// Brake is what held it: promotion, windows, pause or approval.
	Brake   string   `json:"brake,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	// Counts are a finished wave's clusters by state.
	Counts *WaveCounts `json:"counts,omitempty"`
	// Outcomes are a finished wave's clusters' outcomes.
	Outcomes []runner.Outcome `json:"-"`
}

// The states of a WaveEvent that tell a wave's progress, not a brake.
const (
	WaveStarted  = "started"
	WaveFinished = "finished"
)

// WaveCounts are a wave's clusters by state.
type WaveCounts struct {
	Succeeded  int `json:"succeeded"`
	Failed     int `json:"failed"`
	Skipped    int `json:"skipped"`
	NotStarted int `json:"notStarted"`
}

// Progress reports whether e tells a wave's progress (started,
// finished), not a brake that held it.
func (e WaveEvent) Progress() bool { return e.State == WaveStarted || e.State == WaveFinished }

// waveFinished is the event of a wave whose clusters ended as outcomes
// say.
func waveFinished(wave string, outcomes []runner.Outcome) WaveEvent {
	n := runner.Count(outcomes)
	c := WaveCounts{Succeeded: n[runner.Succeeded], Failed: n[runner.Failed], Skipped: n[runner.Skipped], NotStarted: n[runner.NotStarted]}
	return WaveEvent{Type: typeWave, Wave: wave, State: WaveFinished, Counts: &c, Outcomes: outcomes}
}

// Hint is how to get past the brake, if there is a flag for it:
// "--skip-gates promotes anyway".
func (e WaveEvent) Hint() string {
	switch e.Brake {
	case brakePromotion:
		return "--skip-gates promotes anyway"
	case brakePause:
		return "kubectl fleet resume lifts it"
	}
	return "" // windows: said in the reason; approval: said in the error
}

// Where is no cluster: a wave is several.
func (e WaveEvent) Where() string { return "" }

// Text is "production not started: staging-eu runs web r8, not verified
// (…)", "staging started", "staging finished: 2 succeeded, 1 failed, 0
// skipped, 0 not started".
func (e WaveEvent) Text() string {
	switch {
	case e.Counts != nil:
		c := e.Counts
		return fmt.Sprintf("%s %s: %d succeeded, %d failed, %d skipped, %d not started", e.Wave, e.State, c.Succeeded, c.Failed, c.Skipped, c.NotStarted)
	case len(e.Reasons) == 0:
		return e.Wave + " " + e.State
	}
	return e.Wave + " " + e.State + ": " + strings.Join(e.Reasons, "; ")
}

// runWaves rolls out: wave after wave, cluster(ctx, name) for each cluster
// (at most Parallel at once, a wave's maxParallel, stopping past its
// maxFailures), a wave starting only once its brakes let it, and a
// wave's soak after it. It returns every cluster's outcome, in wave
// order.
func runWaves(ctx context.Context, p schedule, cluster func(ctx context.Context, name string) error) []runner.Outcome {
	ws := make([]runner.Wave, len(p.Waves))
	copy(ws, p.Waves)
	for i := range ws {
		w := &ws[i]
		if s, ok := p.Soaks[w.Name]; ok {
			w.After = s.Run
		}
		if p.Emit != nil {
			name := w.Name
			w.Started = func() { p.Emit(WaveEvent{Type: typeWave, Wave: name, State: WaveStarted}) }
			w.Ended = func(outcomes []runner.Outcome) { p.Emit(waveFinished(name, outcomes)) }
		}
		if brakes := p.Brakes[w.Name]; len(brakes) > 0 {
			w.Brake = func() error {
				for _, b := range brakes {
					if err := b.Check(ctx); err != nil {
						return err
					}
				}
				return nil
			}
		}
	}
	return runner.Run(ctx, ws, p.Parallel, cluster)
}
