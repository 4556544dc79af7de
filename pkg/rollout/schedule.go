package rollout

import (
	"context"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Schedule is a fleet rollout: its waves (the fleet's groups in order, each
// with its budget and, for protected groups, a confirmation as Gate),
// and what stands between them.
type Schedule struct {
	Waves []runner.Wave
	// Parallel bounds the clusters worked on at once.
	Parallel int
	// Apps are the apps each wave deploys, by wave name: what the
	// promotion rule looks at.
	Apps map[string][]string
	// Promotion, when set, holds each wave back until the earlier groups
	// verified what it deploys (nil in dry runs, rollbacks and with
	// --skip-gates).
	Promotion *Promotion
	// Soaks are the waves' soaks, by wave name: each runs once its wave
	// went through, on the clusters that succeeded, the last wave's too.
	Soaks map[string]Soak
	// Emit gets the rollout's own events (a wave held back).
	Emit Sink
	// Hold, when set, is asked first before a wave starts (its deploy
	// windows, pauses): an error holds it, said by Hold itself. Approved,
	// when set, is asked once the promotion rule let the wave start: a
	// human's approval of what the earlier waves verified.
	Hold, Approved func(wave string) error
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

// The brakes that hold a wave (WaveEvent.Brake).
const (
	brakePromotion = "promotion"
	brakeWindows   = "windows"
	brakePause     = "pause"
	brakeApproval  = "approval"
)

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

// Run rolls out: wave after wave, cluster(ctx, name) for each cluster
// (at most Parallel at once, a wave's maxParallel, stopping past its
// maxFailures), a wave starting only once the promotion rule lets it and
// its confirmation (the wave's own Gate) said yes, and a wave's soak after
// it. It returns every cluster's outcome, in wave order.
func Run(ctx context.Context, p Schedule, cluster func(ctx context.Context, name string) error) []runner.Outcome {
	ws := make([]runner.Wave, len(p.Waves))
	copy(ws, p.Waves)
	for i := range ws {
		w := &ws[i]
		if s, ok := p.Soaks[w.Name]; ok {
			w.After = s.Run
		}
		if p.Promotion != nil || p.Hold != nil || p.Approved != nil {
			confirm, name := w.Gate, w.Name
			w.Gate = func() error { return p.gate(ctx, name, confirm) }
		}
	}
	return runner.Run(ctx, ws, p.Parallel, cluster)
}

// gate is what a wave asks before it starts, in order: what holds it
// (Hold: windows, pauses), the promotion rule, its approvals, then its
// confirmation.
func (p Schedule) gate(ctx context.Context, wave string, confirm func() error) error {
	if p.Hold != nil {
		if err := p.Hold(wave); err != nil {
			return err
		}
	}
	if p.Promotion != nil {
		if err := p.Promotion.Check(ctx, wave, p.Apps[wave]); err != nil {
			if blocked, ok := err.(*BlockedError); ok && p.Emit != nil {
				p.Emit(WaveEvent{Type: "wave", Wave: wave, State: "not started", Brake: brakePromotion, Reasons: blocked.Reasons})
			}
			return err
		}
	}
	if p.Approved != nil {
		if err := p.Approved(wave); err != nil {
			return err
		}
	}
	if confirm != nil {
		return confirm()
	}
	return nil
}
