package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-fleet/kubectl-fleet/internal/memo"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/lock"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Locks are the locks a writing command (apply, rollback, delete) takes:
// one per app and cluster, taken before the first write of the app there,
// held until the cluster's work is over (ReleaseCluster: its apps, gates,
// verdicts and --atomic restore; a soaking group's after its soak) or the
// command ends (Release, on failure and Ctrl-C too).
type Locks struct {
	// Duration is --lock-duration, Timeout --lock-timeout.
	Duration, Timeout time.Duration

	once   sync.Once
	holder lock.Holder
	// users is who each cluster says the user is.
	users memo.Memo[string, string]
	mu    sync.Mutex
	held  []heldLock
}

type heldLock struct {
	cluster, app string
	lock         *lock.Lock
}

// User is who cluster says the user is, asked once: the lock's holder
// and the revisions recorded name them.
func (l *Locks) User(client *kube.Client, cluster string) func(context.Context) string {
	return func(ctx context.Context) string {
		u, _ := l.users.Do(cluster, func() (string, error) { return revision.User(ctx, client), nil })
		return u
	}
}

// Acquire takes the lock of app on cluster, emitting a LockEvent (its
// text after label) when it waits for another holder, when it is lost
// while held (lost is then told, to stop the cluster's writes), and when the user may not
// write leases: the app then goes on without a lock, as it does without
// a revision. Another holder is an error: "locked by … since …". With
// noNamespace (delete), a cluster without the namespace kubectl-fleet
// holds nothing to lock, and gets no namespace either.
func (l *Locks) Acquire(ctx context.Context, client *kube.Client, cluster, app, label string, noNamespace bool, emit Sink, lost func(error)) error {
	l.once.Do(func() { l.holder = lock.Local(time.Now()) })
	say := func(state, holder string, err error, line string) {
		emit(LockEvent{Type: "lock", Cluster: cluster, App: app, State: state, Holder: holder, Error: errString(err), Line: line, Label: label})
	}
	h := l.holder
	h.ClusterUser = l.User(client, cluster)(ctx)
	lk, err := lock.Acquire(ctx, client, app, lock.Options{
		Holder: h, Duration: l.Duration, Timeout: l.Timeout, FieldManager: apply.FieldManager, NoNamespace: noNamespace,
		Waiting: func(held *lock.HeldError) {
			line := fmt.Sprintf("waiting up to %s for the lock: %v", l.Timeout, held)
			if held.Watch > l.Timeout {
				line = fmt.Sprintf("the lock looks abandoned (%s, last renewed %s); taking it over unless it changes within %s", held.Holder(), held.Renewed.UTC().Format(time.RFC3339), held.Watch.Round(time.Second))
			}
			say("waiting", held.Holder(), nil, line)
		},
		Lost: func(err error) {
			say("lost", "", err, "error: "+err.Error())
			if lost != nil {
				lost(err)
			}
		},
	})
	if errors.Is(err, lock.ErrNoNamespace) {
		return nil
	}
	if apierrors.IsForbidden(err) {
		say("not taken", "", err, "lock not taken: "+err.Error())
		return nil
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = append(l.held, heldLock{cluster: cluster, app: app, lock: lk})
	return nil
}

// ReleaseTimeout bounds the release of one lock: a cluster that no longer
// answers must not hold the command up; its lock expires on its own.
const ReleaseTimeout = 3 * time.Second

// ReleaseCluster releases the locks held on cluster, as Release does,
// once nothing more will be written there: its renewals stop with its
// work, and the unlock overlaps the other clusters' work instead of
// holding the command's exit.
func (l *Locks) ReleaseCluster(ctx context.Context, cluster string, errOut io.Writer) {
	l.mu.Lock()
	var mine []heldLock
	l.held = slices.DeleteFunc(l.held, func(h heldLock) bool {
		if h.cluster == cluster {
			mine = append(mine, h)
			return true
		}
		return false
	})
	l.mu.Unlock()
	release(ctx, mine, errOut)
}

// Release releases every lock held, at once, and says on errOut what could
// not be released cleanly (it then expires on its own, or is taken over at
// once by the next run on this machine). After Ctrl-C (ctx done) nothing
// is sent: the locks are only no longer renewed.
func (l *Locks) Release(ctx context.Context, errOut io.Writer) {
	l.mu.Lock()
	held := l.held
	l.held = nil
	l.mu.Unlock()
	release(ctx, held, errOut)
}

// release releases held, at once.
func release(ctx context.Context, held []heldLock, errOut io.Writer) {
	var wg sync.WaitGroup
	errs := make([]error, len(held))
	for i, h := range held {
		if ctx.Err() != nil {
			h.lock.Abandon()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
			defer cancel()
			errs[i] = h.lock.Release(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(errOut, "warning: %s: %v\n", held[i].cluster, err)
		}
	}
}

// LostLockError is why a cluster's writes stopped: one of its locks was
// lost (taken over, deleted, or not renewed for a lease duration), so
// another run may be writing there now.
type LostLockError struct{ Err error }

func (e *LostLockError) Error() string { return "lost the lock: " + e.Err.Error() }
func (e *LostLockError) Unwrap() error { return e.Err }

// StopOnLostLock returns a context for one cluster's writes that ends when
// lost is told a lock of the cluster was lost, lost itself, and what
// stopped it: a *LostLockError, or nil while no lock was lost. Call
// done once the cluster's writes are over.
func StopOnLostLock(ctx context.Context) (writes context.Context, lost func(error), stopped func() error, done func()) {
	writes, cancel := context.WithCancelCause(ctx)
	lost = func(err error) { cancel(&LostLockError{Err: err}) }
	stopped = func() error {
		var l *LostLockError
		if errors.As(context.Cause(writes), &l) {
			return l
		}
		return nil
	}
	return writes, lost, stopped, func() { cancel(nil) }
}
