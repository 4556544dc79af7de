package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/version"
)

// AtomicError is a cluster's failure under --atomic, with what the
// restore did: "rolled back to r2", "rollback failed: …".
type AtomicError struct {
	Err  error
	Note string
}

func (e *AtomicError) Error() string { return e.Err.Error() }
func (e *AtomicError) Unwrap() error { return e.Err }

// RolledBack is what --atomic did for a cluster that failed with err,
// or "".
func RolledBack(err error) string {
	var a *AtomicError
	if errors.As(err, &a) {
		return a.Note
	}
	return ""
}

// restore, with --atomic, puts a cluster that failed (err) back the
// way it was before this run, and says so in the error it returns.
// Ctrl-C rolls nothing back: the user stopped the run. Nor does a lock
// lost (ctx, the cluster's Writes, ended with it), before the restore or
// during it: another run may be writing there now, and a restore would
// re-apply and prune under it. That is said: "not restored (lost the
// lock)", "rollback stopped (lost the lock)".
func (k *kubeTarget) restore(ctx context.Context, err error) (rolled error) {
	var before []*inventory.Set
	if k.kubeApps != nil {
		before = k.Before
	}
	switch {
	case err == nil || len(before) == 0:
		return err
	case lostLock(ctx) != nil:
		return &AtomicError{Err: err, Note: "not restored (lost the lock)"}
	case ctx.Err() != nil:
		return err
	}
	defer func() {
		// Stopped by a lock lost meanwhile: said, rather than the
		// cancelled requests' errors.
		var a *AtomicError
		if errors.As(rolled, &a) && lostLock(ctx) != nil && !strings.HasPrefix(a.Note, "rolled back") {
			a.Note = "rollback stopped (lost the lock)"
		}
	}()
	k.e.emit(StageEvent{Cluster: k.run.cluster.Name, Stage: "rolling back"})
	return &AtomicError{Err: err, Note: k.putBack(ctx, before)}
}

// putBack puts each app of before back the way it was before this run,
// last applied first: its revision then re-applied with prune, or, for
// an app this run installed, every object of it deleted. It says what
// it did, for the summary.
func (k *kubeTarget) putBack(ctx context.Context, before []*inventory.Set) string {
	e, client, cluster := k.e, k.client, k.run.cluster.Name
	var (
		done, failed []string
		target       string // with one app: what it went back to
	)
	for _, set := range slices.Backward(before) {
		app := set.App
		label := app + " (rollback)"
		// Said, not counted: the summary counts what the run did.
		said := func(ch apply.Change) {
			ev := objectChanged(cluster, label, label, ch, false)
			ev.Restore = true
			e.emit(ev)
		}
		switch {
		case !set.Exists:
			if _, err := apply.Delete(ctx, client, e.r.Fleet.Metadata.Name, app, false, said); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", app, err))
			} else {
				done, target = append(done, app+" removed"), ": "+app+" removed"
			}
		case set.Revision == 0:
			failed = append(failed, fmt.Sprintf("%s: no revision was recorded before this apply", app))
		default:
			if err := k.reapply(ctx, set, said); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", app, err))
			} else {
				done, target = append(done, fmt.Sprintf("%s to r%d", app, set.Revision)), fmt.Sprintf(" to r%d", set.Revision)
			}
		}
	}
	switch {
	case len(failed) > 0:
		return "rollback failed: " + strings.Join(failed, "; ")
	case len(done) == 1:
		return "rolled back" + target
	}
	return "rolled back (" + strings.Join(done, ", ") + ")"
}

// reapply applies, with prune, the revision set had before this run,
// records it as a rollback to it, with that revision's verdict.
func (k *kubeTarget) reapply(ctx context.Context, set *inventory.Set, said func(apply.Change)) error {
	e, client, cluster := k.e, k.client, k.run.cluster.Name
	app, f, o := set.App, e.r.Fleet, e.o
	label := app + " (rollback)"
	rev, objs, err := revision.Load(ctx, client, app, set.Revision)
	if err != nil {
		return err
	}
	rec := e.recorded(&apply.Record{Revision: revision.Revision{Description: fmt.Sprintf("rollback to %d", set.Revision), Source: rev.Source, Sensitive: rev.Sensitive}, Limit: o.HistoryLimit}, cluster, app, label)
	rec.User = e.Locks.User(client, cluster)
	err = apply.Run(ctx, client, apply.Config{
		App: app, Fleet: f.Metadata.Name, Version: version.Get(), Objects: objs, Force: o.ForceConflicts, Prune: true, AllowEmpty: true, Ignore: f.IgnoreRules(app), Namespace: rev.Namespace,
		Wait: o.Wait, Timeout: o.Timeout, Concurrency: o.Concurrency, Report: said,
		Record: rec,
	})
	if now, _ := k.run.revision(app); err == nil && now.Revision > set.Revision {
		rec.Revision.Verification = rev.Verification
		_ = writeVerdict(ctx, client, app, now.Revision, restored(rec.Revision))
	}
	return err
}
