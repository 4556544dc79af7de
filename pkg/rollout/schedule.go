package rollout

import (
	"context"
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
}

// WaveEvent is a wave that did not start, and why: the promotion rule's
// reasons.
type WaveEvent struct {
	Type  string `json:"type"`
	Wave  string `json:"wave"`
	State string `json:"state"`
	// Brake is what held it: promotion, windows, pause or approval.
	Brake   string   `json:"brake"`
	Reasons []string `json:"reasons,omitempty"`
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
// (…)".
func (e WaveEvent) Text() string {
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
