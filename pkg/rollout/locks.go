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

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/lock"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/memo"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Locks are the locks a writing command (apply, rollback, delete) takes:
// one per app and cluster, taken before the first write of the app there,
// held until the cluster's work is over (releaseCluster: its apps, gates,
// verdicts and --atomic restore; a soaking group's after its soak) or the
// command ends (Release, on failure and Ctrl-C too). A lock lost while
// held ends its cluster's Writes, all of them to the end of its work.
type Locks struct {
	// Duration is --lock-duration, Timeout --lock-timeout.
	Duration, Timeout time.Duration

	once   sync.Once
	holder lock.Holder
	// users is who each cluster says the user is.
	users memo.Memo[string, string]
	// early are the locks Early takes.
	early earlyLocks
	mu    sync.Mutex
	held  []heldLock
	// writes are the clusters' Writes, until their locks are released.
	writes map[string]clusterWrites
}

// clusterWrites is the context of one cluster's writes.
type clusterWrites struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// Writes returns the context of cluster's writes, for the whole of its
// work: its apps, gates and verdicts, its soak, and its --atomic restore.
// It ends when a lock held on cluster is lost, its cause a
// *LostLockError (lostLock) that also cancels requests in flight
// (apply.ErrAbort), and when ctx ends. The first call makes it from ctx;
// later ones return it, until the cluster's locks are released
// (releaseCluster, Release), which ends it.
func (l *Locks) Writes(ctx context.Context, cluster string) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.writes[cluster]; ok {
		return w.ctx
	}
	wctx, cancel := context.WithCancelCause(ctx)
	if l.writes == nil {
		l.writes = map[string]clusterWrites{}
	}
	l.writes[cluster] = clusterWrites{ctx: wctx, cancel: cancel}
	return wctx
}

// lose ends cluster's Writes: a lock of it was lost.
func (l *Locks) lose(cluster string, err error) {
	l.mu.Lock()
	w, ok := l.writes[cluster]
	l.mu.Unlock()
	if ok {
		w.cancel(&LostLockError{Err: err})
	}
}

// over ends the Writes of cluster (of every cluster when cluster is
// empty): their locks are released.
func (l *Locks) over(cluster string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, w := range l.writes {
		if cluster == "" || name == cluster {
			w.cancel(errReleased)
			delete(l.writes, name)
		}
	}
}

// errReleased is why a cluster's Writes ended with its work.
var errReleased = errors.New("the cluster's locks were released")

type heldLock struct {
	cluster, app string
	lock         *lock.Lock
	// client is the cluster's, whose answers so far bound the release
	// (kube.WriteTimeout).
	client *kube.Client
}

// User is who cluster says the user is, asked once: the lock's holder
// and the revisions recorded name them.
func (l *Locks) User(client *kube.Client, cluster string) func(context.Context) string {
	return func(ctx context.Context) string {
		u, _ := l.users.Do(cluster, func() (string, error) { return revision.User(ctx, client), nil })
		return u
	}
}

// Acquire takes the lock of app on cluster, emitting a lockEvent (its
// text after label) when it waits for another holder, when it is lost
// while held (lost is then told, to stop the cluster's writes), and when the user may not
// write leases: the app then goes on without a lock, as it does without
// a revision. Another holder is an error: "locked by … since …". With
// noNamespace (delete), a cluster without the namespace kubectl-fleet
// holds nothing to lock, and gets no namespace either.
func (l *Locks) Acquire(ctx context.Context, client *kube.Client, cluster, app, label string, noNamespace bool, emit Sink, lost func(error)) error {
	say := func(state, holder string, err error, line string) {
		emit(lockEvent{Type: typeLock, Cluster: cluster, App: app, State: state, Holder: holder, Error: errString(err), Line: line, Label: label})
	}
	onLost := func(err error) {
		say("lost", "", err, "error: "+err.Error())
		l.lose(cluster, err)
		if lost != nil {
			lost(err)
		}
	}
	if lk := l.early.take(cluster, app, onLost); lk != nil {
		lk.SetClusterUser(l.User(client, cluster)(ctx))
		l.hold(cluster, app, lk, client)
		return nil
	}
	h := l.me()
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
		Lost: onLost,
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
	l.hold(cluster, app, lk, client)
	return nil
}

// me is this process, as the holder of its locks.
func (l *Locks) me() lock.Holder {
	l.once.Do(func() { l.holder = lock.Local(time.Now()) })
	return l.holder
}

func (l *Locks) hold(cluster, app string, lk *lock.Lock, client *kube.Client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = append(l.held, heldLock{cluster: cluster, app: app, lock: lk, client: client})
}

// Early starts taking the locks of apps on cluster before its rollout
// gets there, while the sources render and the cluster is asked who the
// user is, so that the lock costs the rollout no round trip of its own:
// one attempt each, in the background, that neither waits for another
// holder nor creates the namespace kubectl-fleet. Acquire uses a lock
// taken so, and takes it the usual way when the attempt failed. Only for
// a run that writes to cluster without asking first (a protected group's
// confirmation comes before any lock).
func (l *Locks) Early(ctx context.Context, client *kube.Client, cluster string, apps []string) {
	me := l.me()
	for _, app := range apps {
		e := l.early.start(cluster, app, client)
		if e == nil {
			continue
		}
		go func() {
			lk, err := lock.Acquire(ctx, client, app, lock.Options{
				Holder: me, Duration: l.Duration, FieldManager: apply.FieldManager, NoNamespace: true, NoWait: true, Lost: e.lose,
			})
			e.done(lk, err)
		}()
	}
}

// earlyLocks are the locks Early takes, by cluster and app, until
// Acquire takes them over or they are released unused: nil from then on,
// and for a lock Acquire asked for first, so that no Early comes after.
type earlyLocks struct {
	mu    sync.Mutex
	locks map[[2]string]*earlyLock
	// over are the clusters whose work is over (releaseCluster), and all
	// are once the command's is (Release): no Early starts there then.
	over map[string]bool
	all  bool
}

// earlyLock is one lock Early takes.
type earlyLock struct {
	ready chan struct{}
	// held is the lock once taken (its lock nil when the attempt failed).
	held heldLock

	mu   sync.Mutex
	lost func(error) // Acquire's, once it takes the lock over
	err  error       // why the lock was lost before that
}

func (e *earlyLocks) start(cluster, app string, client *kube.Client) *earlyLock {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := [2]string{cluster, app}
	if _, seen := e.locks[k]; seen || e.all || e.over[cluster] {
		return nil // started, Acquire came first, or too late
	}
	if e.locks == nil {
		e.locks = map[[2]string]*earlyLock{}
	}
	el := &earlyLock{ready: make(chan struct{}), held: heldLock{cluster: cluster, app: app, client: client}}
	e.locks[k] = el
	return el
}

func (el *earlyLock) done(lk *lock.Lock, err error) {
	if err == nil {
		el.held.lock = lk
	}
	close(el.ready)
}

// lose is the lock's Lost: Acquire's once it took the lock over.
func (el *earlyLock) lose(err error) {
	el.mu.Lock()
	lost := el.lost
	if lost == nil {
		el.err = err
	}
	el.mu.Unlock()
	if lost != nil {
		lost(err)
	}
}

// take waits for the early attempt at app's lock on cluster and returns
// the lock if it was taken and is still held, which lost is then told
// about; nil otherwise (the lock is then taken the usual way).
func (e *earlyLocks) take(cluster, app string, lost func(error)) *lock.Lock {
	e.mu.Lock()
	k := [2]string{cluster, app}
	el := e.locks[k]
	if e.locks == nil {
		e.locks = map[[2]string]*earlyLock{}
	}
	e.locks[k] = nil // an Early that comes later takes nothing
	e.mu.Unlock()
	if el == nil {
		return nil
	}
	<-el.ready
	if el.held.lock == nil {
		return nil
	}
	el.mu.Lock()
	defer el.mu.Unlock()
	if el.err != nil {
		el.held.lock.Abandon()
		return nil
	}
	el.lost = lost
	return el.held.lock
}

// unused removes the early locks of cluster (every cluster's when
// cluster is empty) that Acquire never took, once their attempts are
// over.
func (e *earlyLocks) unused(cluster string) []heldLock {
	e.mu.Lock()
	if cluster == "" {
		e.all = true
	} else {
		if e.over == nil {
			e.over = map[string]bool{}
		}
		e.over[cluster] = true
	}
	var attempts []*earlyLock
	for k, el := range e.locks {
		if el != nil && (cluster == "" || k[0] == cluster) {
			e.locks[k] = nil
			attempts = append(attempts, el)
		}
	}
	e.mu.Unlock()
	var taken []heldLock
	for _, el := range attempts {
		if <-el.ready; el.held.lock != nil {
			taken = append(taken, el.held)
		}
	}
	return taken
}

// releaseCluster releases the locks held on cluster, as Release does,
// once nothing more will be written there: its renewals stop with its
// work, and the unlock overlaps the other clusters' work instead of
// holding the command's exit.
func (l *Locks) releaseCluster(ctx context.Context, cluster string, errOut io.Writer) {
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
	l.over(cluster)
	release(ctx, append(mine, l.early.unused(cluster)...), errOut)
}

// Release releases every lock held, at once, and says on errOut what could
// not be released cleanly (it then expires on its own, or is taken over at
// once by the next run on this machine). After Ctrl-C (ctx done) nothing
// is sent: the locks are only no longer renewed; but those Early took
// that no write used.
func (l *Locks) Release(ctx context.Context, errOut io.Writer) {
	l.mu.Lock()
	held := l.held
	l.held = nil
	l.mu.Unlock()
	l.over("")
	// Locks taken early and never used guarded no write: they go even
	// after Ctrl-C, rather than block other runs until they expire.
	release(context.WithoutCancel(ctx), l.early.unused(""), errOut)
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
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), kube.WriteTimeout(h.client))
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
// lost (taken over, deleted, or not renewed by its renew deadline), so
// another run may be writing there now. As a context's cause it aborts
// the requests in flight too (it is apply.ErrAbort).
type LostLockError struct{ Err error }

func (e *LostLockError) Error() string { return "lost the lock: " + e.Err.Error() }
func (e *LostLockError) Unwrap() error { return e.Err }

// Is reports whether target is apply.ErrAbort: a lost lock cancels the
// cluster's requests in flight, not only the next ones.
func (e *LostLockError) Is(target error) bool { return target == apply.ErrAbort }

// lostLock returns why ctx, a cluster's Writes or stopOnLostLock's, ended
// if a lock was lost: a *LostLockError; nil otherwise (not ended, ended
// with its work, or Ctrl-C).
func lostLock(ctx context.Context) error {
	var l *LostLockError
	if errors.As(context.Cause(ctx), &l) {
		return l
	}
	return nil
}

// stopOnLostLock returns a context for one cluster's writes that ends when
// lost is told a lock of the cluster was lost, lost itself, and what
// stopped it: a *LostLockError, or nil while no lock was lost. Call
// done once the cluster's writes are over.
func stopOnLostLock(ctx context.Context) (writes context.Context, lost func(error), stopped func() error, done func()) {
	writes, cancel := context.WithCancelCause(ctx)
	lost = func(err error) { cancel(&LostLockError{Err: err}) }
	stopped = func() error { return lostLock(writes) }
	return writes, lost, stopped, func() { cancel(nil) }
}
