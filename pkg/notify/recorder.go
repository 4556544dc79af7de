package notify

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Recorder turns a rollout engine's events into a release's events
// (Type), numbered in the order they happened, and hands each to send (a
// Notifier's Notify). It is safe for concurrent use: a rollout's
// clusters tell it their events at once.
type Recorder struct {
	// Mask, when set, masks what the run decrypted in the text an event
	// carries (a failure's message, a hold's reasons, a rollback's why),
	// as the run's streams mask it: an event leaves the machine.
	Mask func(string) string
	// TraceID, when set, is the release's trace, named in every event.
	TraceID string

	fleet   string
	release Release
	send    func(Event)
	now     func() time.Time

	mu    sync.Mutex
	seq   int
	waves []WaveState
	// wave is each cluster's wave (its index in waves), clusters each
	// wave's.
	wave     map[string]int
	clusters [][]string
	// gate is what last failed on each cluster (a check, the soak, the
	// tests, an app's apply), for its ClusterFailed; done how each
	// cluster's work ended (succeeded, skipped, failed).
	gate    map[string]string
	done    map[string]string
	counts  Counts
	started bool
}

// NewRecorder records a rollout of fleet's release over waves (the
// engine's, in order), sending each event to send.
func NewRecorder(fleet string, release Release, waves []runner.Wave, send func(Event)) *Recorder {
	r := &Recorder{fleet: fleet, release: release, send: send, now: time.Now, wave: map[string]int{}, gate: map[string]string{}, done: map[string]string{}}
	for i, w := range waves {
		r.waves = append(r.waves, WaveState{Name: w.Name, Group: w.Group, State: "pending", Counts: Counts{Total: len(w.Clusters), NotStarted: len(w.Clusters)}})
		for _, c := range w.Clusters {
			r.wave[c] = i
		}
		r.clusters = append(r.clusters, w.Clusters)
		r.counts.Total += len(w.Clusters)
	}
	r.counts.NotStarted = r.counts.Total
	return r
}

// Started says the release started; once, however often it is called.
func (r *Recorder) Started() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started = true
	r.emit(Event{Type: ReleaseStarted})
}

// Observe reads one of the engine's events (a rollout.Sink). An
// object's, a phase's or a stage's, the most of a run's, takes no lock.
func (r *Recorder) Observe(ev rollout.Event) {
	switch ev.(type) {
	case rollout.ObjectEvent, rollout.StageEvent, rollout.OutputEvent, rollout.DiffEvent:
		return
	}
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev := ev.(type) {
	case rollout.WaveEvent:
		r.waveEvent(ev)
	case rollout.CheckEvent:
		if ev.State == "failed" {
			r.gate[ev.Cluster] = "check " + ev.Check
		}
	case rollout.SoakEvent:
		if ev.State == "failed" {
			r.gate[ev.Cluster] = "soak"
		}
	case rollout.TestsEvent:
		if ev.Err != nil {
			r.gate[ev.Cluster] = "tests"
		}
	case rollout.AppEvent:
		if ev.Err != nil && r.gate[ev.Cluster] == "" {
			r.gate[ev.Cluster] = "apply " + ev.App
		}
	case rollout.EndEvent:
		r.ended(ev.Cluster, ev.Err)
	}
}

// RolledBack says an automatic rollback began (the command's, after the
// engine's run), or, with outcome ("succeeded", "failed"), that it ended.
func (r *Recorder) RolledBack(ev rollout.UndoEvent, outcome string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emit(Event{Type: Rollback, Clusters: ev.Clusters, Rollback: &RollbackInfo{Automatic: ev.Automatic, Why: r.masked(ev.Why), Clusters: ev.Clusters, Outcome: outcome}})
}

// Finished says the release ended with outcomes (the engine's), or
// failed before its first wave with err.
func (r *Recorder) Finished(outcomes []runner.Outcome, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := countsOf(outcomes)
	r.counts = c
	held := slices.ContainsFunc(r.waves, func(w WaveState) bool { return w.State == "held" })
	r.emit(Event{Type: ReleaseFinished, Outcome: outcome(c, outcomes, err, held)})
}

// outcome is how a release with counts c and outcomes ended: interrupted
// by Ctrl-C, failed when a cluster failed or it could not start (err),
// held when a brake held a wave (held), not started when its waves did
// not start otherwise (a refused confirmation), else succeeded.
func outcome(c Counts, outcomes []runner.Outcome, err error, held bool) string {
	switch {
	case slices.ContainsFunc(outcomes, func(o runner.Outcome) bool {
		return errors.Is(o.Err, runner.ErrInterrupted) || errors.Is(o.Err, context.Canceled)
	}):
		return "interrupted" // what Ctrl-C stopped failed with it
	case c.Failed > 0 || err != nil:
		return "failed"
	case held:
		return "held"
	case c.NotStarted > 0:
		return "not started"
	}
	return "succeeded"
}

// countsOf are outcomes' clusters by state.
func countsOf(outcomes []runner.Outcome) Counts {
	n := runner.Count(outcomes)
	return Counts{Total: len(outcomes), Succeeded: n[runner.Succeeded], Failed: n[runner.Failed], Skipped: n[runner.Skipped], NotStarted: n[runner.NotStarted]}
}

// waveEvent follows a wave: started, finished, or held by a brake.
func (r *Recorder) waveEvent(ev rollout.WaveEvent) {
	i := slices.IndexFunc(r.waves, func(w WaveState) bool { return w.Name == ev.Wave })
	if i < 0 {
		return
	}
	w := &r.waves[i]
	switch ev.State {
	case rollout.WaveStarted:
		w.State, w.Held = "running", nil
		r.emit(Event{Type: WaveStarted, Wave: w.Name, Group: w.Group, Counts: w.Counts})
	case rollout.WaveFinished:
		r.soakFailures(w, ev.Outcomes)
		c, states := countsOf(ev.Outcomes), map[string]string{}
		for _, o := range ev.Outcomes {
			states[o.Cluster] = string(o.State)
		}
		w.Counts, w.State = c, "finished"
		if c.Failed > 0 {
			w.State = "failed"
		}
		r.emit(Event{Type: WaveFinished, Wave: w.Name, Group: w.Group, Counts: c, States: states})
	default:
		reasons := make([]string, len(ev.Reasons))
		for i, why := range ev.Reasons {
			reasons[i] = r.masked(why)
		}
		held := &Held{Brake: ev.Brake, Reasons: reasons, Command: command(ev.Brake, w.Group)}
		w.State, w.Held = "held", held
		r.emit(Event{Type: WaveHeld, Wave: w.Name, Group: w.Group, Counts: w.Counts, Held: held})
		if ev.Brake == "approval" {
			r.emit(Event{Type: ApprovalRequired, Wave: w.Name, Group: w.Group, Counts: w.Counts, Held: held})
		}
	}
}

// command is what lets a wave of group held by brake go, or "".
func command(brake, group string) string {
	switch brake {
	case "approval":
		return rollout.ApproveCommand(group)
	case "pause":
		return "kubectl fleet resume (the pause's scope)"
	case "promotion":
		return "--skip-gates promotes anyway"
	}
	return ""
}

// ended counts a cluster whose work is over, and says its failure.
// A cluster of a wave that never started (a release that failed before
// its first wave) is not started, not failed: it is counted at the end.
func (r *Recorder) ended(cluster string, err error) {
	i, ok := r.wave[cluster]
	if !ok || r.waves[i].State == "pending" || r.done[cluster] != "" {
		return
	}
	w := &r.waves[i]
	w.Counts.NotStarted--
	r.counts.NotStarted--
	var skip interface{ Skipped() bool }
	switch {
	case err == nil:
		w.Counts.Succeeded++
		r.counts.Succeeded++
		r.done[cluster] = "succeeded"
	case errors.As(err, &skip) && skip.Skipped():
		w.Counts.Skipped++
		r.counts.Skipped++
		r.done[cluster] = "skipped"
	default:
		w.Counts.Failed++
		r.counts.Failed++
		r.done[cluster] = "failed"
		r.failed(w, cluster, err)
	}
}

// failed says a cluster of wave w failed with err, at the gate that
// last failed there.
func (r *Recorder) failed(w *WaveState, cluster string, err error) {
	gate := r.gate[cluster]
	if gate == "" {
		gate = "rollout"
	}
	msg := "failed"
	if err != nil {
		msg = err.Error()
	}
	r.emit(Event{Type: ClusterFailed, Wave: w.Name, Group: w.Group, Clusters: []string{cluster}, Counts: w.Counts,
		Failure: &Failure{Cluster: cluster, Gate: gate, Message: clip(r.masked(msg))}})
}

// soakFailures says the clusters of wave w that its soak failed after
// their work ended as a success (their outcomes), and counts them.
func (r *Recorder) soakFailures(w *WaveState, outcomes []runner.Outcome) {
	for _, o := range outcomes {
		if o.State != runner.Failed || r.done[o.Cluster] != "succeeded" {
			continue
		}
		r.done[o.Cluster] = "failed"
		w.Counts.Succeeded--
		w.Counts.Failed++
		r.counts.Succeeded--
		r.counts.Failed++
		r.failed(w, o.Cluster, o.Err)
	}
}

// masked is text with what the run decrypted masked (Mask).
func (r *Recorder) masked(text string) string {
	if r.Mask == nil {
		return text
	}
	return r.Mask(text)
}

// emit numbers ev, stamps it and hands it on; r.mu is held.
func (r *Recorder) emit(ev Event) {
	r.seq++
	ev.Seq, ev.Time, ev.Fleet, ev.Release, ev.TraceID = r.seq, r.now().UTC(), r.fleet, r.release, r.TraceID
	if ev.Wave == "" {
		ev.Counts = r.counts
	}
	if ev.Clusters == nil && ev.Wave != "" {
		ev.Clusters = r.clustersOf(ev.Wave)
	}
	ev.Waves = slices.Clone(r.waves)
	r.send(ev)
}

// clustersOf are the clusters of the wave named name.
func (r *Recorder) clustersOf(name string) []string {
	if i := slices.IndexFunc(r.waves, func(w WaveState) bool { return w.Name == name }); i >= 0 {
		return r.clusters[i]
	}
	return nil
}
