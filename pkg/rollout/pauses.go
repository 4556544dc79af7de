package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// PausedError is an app's apply stopped before its first write: the app
// is paused on the cluster (kubectl fleet pause).
type PausedError struct {
	Cluster string
	Pause   pause.Pause
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("%s %s", e.Cluster, e.Pause.Text(time.Now()))
}

// holdPaused is an apply's Hold (apply.Config.Hold): the app's pause on
// the cluster, read with its neighbours' inventories (no request of its
// own, unless the namespace could not be listed), stops the apply
// before its first write.
func holdPaused(cluster, fleetName, app string, client *kube.Client) func(context.Context, *inventory.Neighbours) error {
	return func(ctx context.Context, n *inventory.Neighbours) error {
		cm, known := n.ConfigMap(pause.Name(fleetName))
		pauses := pause.Of(cm)
		if !known {
			var err error
			if pauses, err = pause.Read(ctx, client, fleetName); err != nil {
				return err
			}
		}
		if p := pause.Find(pauses, app); p != nil {
			return &PausedError{Cluster: cluster, Pause: *p}
		}
		return nil
	}
}

// pausedIn is the first PausedError among errs, or nil.
func pausedIn(errs []error) *PausedError {
	for _, err := range errs {
		if p := (*PausedError)(nil); errors.As(err, &p) {
			return p
		}
	}
	return nil
}

// pauses puts a gate before each wave that has clusters upstream (its
// group's earlier batches, the groups it waits for, in the run or not):
// a pause of one of the wave's apps on one of them holds the wave and
// what needs it, said as a WaveEvent. The pauses are read when the wave
// would start: a pause that landed while an earlier wave soaked holds
// it. A cluster whose pauses cannot be read holds the wave too (fail
// closed); one skipped as unreachable does not. Dry runs and rollbacks
// are not held.
func (e *Engine) pauses(ws []runner.Wave) {
	if e.o.DryRun || e.o.Rollback != nil {
		return
	}
	steps := map[string]fleet.Step{}
	for _, s := range e.r.Fleet.Steps() {
		steps[s.Name] = s
	}
	apps := appsByWave(e.r, ws)
	for i := range ws {
		w := &ws[i]
		var upstream []string
		for _, u := range units(e.r.Fleet, steps[w.Name]) {
			upstream = append(upstream, u.Clusters...)
		}
		if len(upstream) == 0 {
			continue
		}
		e.hold(w.Name, func() error {
			if reasons := e.pausedUpstream(upstream, apps[w.Name]); len(reasons) > 0 {
				e.emit(WaveEvent{Type: "wave", Wave: w.Name, State: "not started", Brake: BrakePause, Reasons: reasons})
				return &BlockedError{Wave: w.Name, Reasons: reasons}
			}
			return nil
		})
	}
}

// unreadablePauseOK reports whether a cluster whose pauses cannot be
// read lets a wave start: with --skip-gates (an emergency), or when the
// run failed on it already (its group's budget let the wave through, as
// the promotion rule does).
func (e *Engine) unreadablePauseOK(cluster string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.o.SkipGates || slices.Contains(e.failed, cluster)
}

// pausedUpstream says each of clusters that holds a pause of one of
// apps.
func (e *Engine) pausedUpstream(clusters, apps []string) []string {
	return e.ask(clusters, "pauses", e.unreadablePauseOK, func(ctx context.Context, name string, client *kube.Client) (string, error) {
		pauses, err := pause.Read(ctx, client, e.r.Fleet.Metadata.Name)
		if p := pause.Find(pauses, apps...); err == nil && p != nil {
			return name + " " + p.Text(time.Now()), nil
		}
		return "", err
	})
}
