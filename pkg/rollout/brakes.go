package rollout

import (
	"context"
	"slices"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// A Brake holds a wave before it starts: one check, with a name. Check
// returns nil to let the wave start, or why it does not, which it says
// itself (a WaveEvent) when there is something to say.
type Brake struct {
	// Name is what WaveEvent.Brake says held the wave: windows, pause,
	// promotion, approval or confirmation.
	Name  string
	Check func(ctx context.Context) error
}

// The brakes that hold a wave (Brake.Name, WaveEvent.Brake).
const (
	brakeWindows      = "windows"
	brakePause        = "pause"
	brakePromotion    = "promotion"
	brakeApproval     = "approval"
	brakeConfirmation = "confirmation"
)

// brakes are what holds each wave before it starts, by wave, in the
// order they are asked (each made by one function below): its group's
// deploy windows, pauses of its apps upstream, the promotion rule, its
// group's approvals, then a protected group's confirmation, asked last
// so that nobody says yes to a wave that would not start. A brake that
// does not apply to a wave (a group without windows, a dry run, a
// rollback) is not in its list.
func (e *Engine) brakes(ws []runner.Wave) map[string][]Brake {
	apps := appsByWave(e.r, ws)
	kinds := []func(ws []runner.Wave, i int) Brake{e.windows, e.pauses(apps), e.promotes(apps), e.requiresApproval, e.confirmation}
	out := map[string][]Brake{}
	for i := range ws {
		for _, kind := range kinds {
			if b := kind(ws, i); b.Check != nil {
				out[ws[i].Name] = append(out[ws[i].Name], b)
			}
		}
	}
	return out
}

// promotes is the promotion rule's brake on each wave: held until the
// earlier groups verified what it deploys (apps, by wave); none in dry
// runs, rollbacks and with --skip-gates (Engine.promotion is nil then).
func (e *Engine) promotes(apps map[string][]string) func(ws []runner.Wave, i int) Brake {
	return func(ws []runner.Wave, i int) Brake {
		if e.promotion == nil {
			return Brake{}
		}
		return e.promotion.Brake(ws[i].Name, apps[ws[i].Name], e.emit)
	}
}

// confirmation is the Confirm of a protected group's first wave, asked
// once for all the group's clusters of the run (none on a dry run).
func (e *Engine) confirmation(ws []runner.Wave, i int) Brake {
	w := ws[i]
	g := e.r.Fleet.Group(w.Group)
	if e.o.Confirm == nil || e.o.DryRun || g == nil || !g.Protected || slices.ContainsFunc(ws[:i], func(o runner.Wave) bool { return o.Group == w.Group }) {
		return Brake{}
	}
	var clusters []string
	for _, o := range ws[i:] {
		if o.Group == w.Group {
			clusters = append(clusters, o.Clusters...)
		}
	}
	return Brake{Name: brakeConfirmation, Check: func(context.Context) error { return e.o.Confirm(w.Group, clusters) }}
}

// windows holds each wave of a group with deploy windows (not on a dry
// run): closed, the wave and those that need it do not start, and a
// WaveEvent says when the windows open next; with IgnoreWindows it
// starts, and its revisions say it was outside them. A rollback, the
// way out of an incident, is not held.
func (e *Engine) windows(ws []runner.Wave, i int) Brake {
	w := ws[i]
	g := e.r.Fleet.Group(w.Group)
	if e.o.DryRun || e.o.Rollback != nil || g == nil || len(g.Windows) == 0 {
		return Brake{}
	}
	return Brake{Name: brakeWindows, Check: func(context.Context) error { return e.windowOpen(w.Name, g) }}
}

// windowOpen is nil when g's windows let wave start now, or when they
// are ignored (noted for its revisions); else why not, said as a
// WaveEvent.
func (e *Engine) windowOpen(wave string, g *fleet.Group) error {
	now := time.Now
	if e.o.Now != nil {
		now = e.o.Now
	}
	open, next, why := g.Open(now())
	switch {
	case open:
		return nil
	case e.o.IgnoreWindows:
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.outside == nil {
			e.outside = map[string]bool{}
		}
		e.outside[g.Name] = true
		return nil
	}
	reason := "outside its deploy windows: " + why
	if !next.IsZero() {
		reason += "; they open next at " + next.Format(time.RFC3339)
	}
	reason += " (--ignore-windows for an emergency)"
	e.emit(WaveEvent{Type: typeWave, Wave: wave, State: "not started", Brake: brakeWindows, Reasons: []string{reason}})
	return &BlockedError{Wave: wave, Reasons: []string{reason}}
}
