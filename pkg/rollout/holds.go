package rollout

import (
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// confirmations sets Confirm as the gate of each protected group's
// first wave, asked once for all the group's clusters of the run (none
// on a dry run).
func (e *Engine) confirmations(ws []runner.Wave) {
	if e.o.Confirm == nil || e.o.DryRun {
		return
	}
	asked := map[string]bool{}
	for i := range ws {
		w := &ws[i]
		if g := e.r.Fleet.Group(w.Group); g == nil || !g.Protected || asked[w.Group] {
			continue
		}
		asked[w.Group] = true
		var clusters []string
		for _, o := range ws[i:] {
			if o.Group == w.Group {
				clusters = append(clusters, o.Clusters...)
			}
		}
		w.Gate = func() error { return e.o.Confirm(w.Group, clusters) }
	}
}

// windows puts a gate before each wave of a group with deploy windows
// (none on a dry run): closed, the wave and those that need it do not
// start, and a WaveEvent says when the windows open next; with
// IgnoreWindows it starts, and its revisions say it was outside them.
// A rollback, the way out of an incident, is not held.
func (e *Engine) windows(ws []runner.Wave) {
	if e.o.DryRun || e.o.Rollback != nil {
		return
	}
	for i := range ws {
		w := &ws[i]
		g := e.r.Fleet.Group(w.Group)
		if g == nil || len(g.Windows) == 0 {
			continue
		}
		e.hold(w.Name, func() error { return e.windowOpen(w.Name, g) })
	}
}

// hold adds check to what holds wave before it starts (Schedule.Hold):
// its deploy windows, pauses upstream.
func (e *Engine) hold(wave string, check func() error) {
	if e.holds == nil {
		e.holds = map[string][]func() error{}
	}
	e.holds[wave] = append(e.holds[wave], check)
}

// held runs the checks that hold wave, and returns the first error.
func (e *Engine) held(wave string) error {
	for _, check := range e.holds[wave] {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
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
	e.emit(WaveEvent{Type: "wave", Wave: wave, State: "not started", Brake: brakeWindows, Reasons: []string{reason}})
	return &BlockedError{Wave: wave, Reasons: []string{reason}}
}
