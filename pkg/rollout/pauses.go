package rollout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// pausedError is an app's apply stopped before its first write: the app
// is paused on the cluster (kubectl fleet pause).
type pausedError struct {
	Cluster string
	Pause   pause.Pause
}

func (e *pausedError) Error() string {
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
			return &pausedError{Cluster: cluster, Pause: *p}
		}
		return nil
	}
}

// pausedNow is an apply's Held (apply.Config.Held): the app's pause on
// the cluster read again while it is written, so that a pause given
// during a 500-object apply stops its next write, and its prune. A pause
// that cannot be read stops the writes too: failing closed.
func pausedNow(cluster, fleetName, app string, client *kube.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		pauses, err := pause.Read(ctx, client, fleetName)
		if err != nil {
			return fmt.Errorf("reading the pauses of the fleet: %w", err)
		}
		if p := pause.Find(pauses, app); p != nil {
			return &pausedError{Cluster: cluster, Pause: *p}
		}
		return nil
	}
}

// pausedIn is the first pausedError among errs, or nil.
func pausedIn(errs []error) *pausedError {
	for _, err := range errs {
		if p := (*pausedError)(nil); errors.As(err, &p) {
			return p
		}
	}
	return nil
}

// pauses are the pause brakes of the waves, each deploying apps (by
// wave): a wave that has clusters
// upstream (its group's earlier batches, the groups it waits for, in
// the run or not) is held by a pause of one of the wave's apps on one
// of them, and so is what needs it, said as a WaveEvent. The pauses are
// read when the wave would start: a pause that landed while an earlier
// wave soaked holds it. Clusters whose pauses cannot be read count
// against their unit's budget, as the promotion rule counts clusters it
// cannot read (past it, they hold: fail closed; with --skip-gates, an
// emergency, they do not); one skipped as unreachable does not count.
// Dry runs and rollbacks are not held.
func (e *Engine) pauses(apps map[string][]string) func(ws []runner.Wave, i int) Brake {
	steps := map[string]fleet.Step{}
	for _, s := range e.r.Fleet.Steps() {
		steps[s.Name] = s
	}
	return func(ws []runner.Wave, i int) Brake {
		w := ws[i]
		us := units(e.r.Fleet, steps[w.Name])
		if e.o.DryRun || e.o.Rollback != nil || len(us) == 0 {
			return Brake{}
		}
		return Brake{Name: brakePause, Check: func(context.Context) error {
			var reasons []string
			for _, u := range us {
				reasons = append(reasons, e.pausesOf(u, apps[w.Name])...)
			}
			if len(reasons) == 0 {
				return nil
			}
			e.emit(WaveEvent{Type: typeWave, Wave: w.Name, State: "not started", Brake: brakePause, Reasons: reasons})
			return &BlockedError{Wave: w.Name, Reasons: reasons}
		}}
	}
}

// pausesOf says each cluster of u that holds a pause of one of apps, and
// the clusters whose pauses cannot be read when they are more than u's
// budget (none with --skip-gates).
func (e *Engine) pausesOf(u unit, apps []string) []string {
	held, unread := e.ask(u.Clusters, "pauses", func(ctx context.Context, name string, t target) (string, error) {
		pauses, err := t.pauses(ctx)
		if p := pause.Find(pauses, apps...); err == nil && p != nil {
			return name + " " + p.Text(time.Now()), nil
		}
		return "", err
	})
	if !e.o.SkipGates && len(unread) > u.MaxFailures {
		held = append(held, unread...)
	}
	return held
}
