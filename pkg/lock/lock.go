// Package lock keeps two runs of kubectl fleet from writing one app to one
// cluster at the same time: a Lease (coordination.k8s.io/v1) fleet-<app>
// in the namespace kubectl-fleet, taken before the first write, renewed
// while the run works, deleted at its end, and expiring on its own when
// the process that holds it dies.
//
// Whether a lease has expired is judged by observed time, as client-go's
// leader election does: the lease is taken over once this process has
// seen it unchanged (the same resourceVersion) for its whole duration on
// this machine's monotonic clock, never by comparing this machine's clock
// with the holder's timestamps; the holder gives the lock up sooner, at
// its renew deadline (RenewDeadline), so that it has stopped writing
// before anyone may take over. The timestamps only tell whether a lease
// looks abandoned, and so whether watching it is worth the wait when the
// user did not ask to wait. A holder that is a process of this machine that no
// longer runs is taken over sooner, once the lease was seen unchanged for
// longer than its renewal interval: a pid alone may be another
// container's, with the same host name.
package lock

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/util/duration"
	"os"
	"os/user"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

const (
	// Namespace holds the leases, next to the apps' inventories.
	Namespace = "kubectl-fleet"
	// DefaultDuration is how long a lease lasts without being renewed.
	DefaultDuration = 60 * time.Second

	// The annotations that say who holds a lease.
	UserAnnotation    = "fleet.kubectl.io/lock-user"
	HostAnnotation    = "fleet.kubectl.io/lock-host"
	PIDAnnotation     = "fleet.kubectl.io/lock-pid"
	StartedAnnotation = "fleet.kubectl.io/lock-started"
	// MachineAnnotation is the holder's Machine.
	MachineAnnotation = "fleet.kubectl.io/lock-machine"
	// ClusterUserAnnotation is who the cluster says the holder is, when it
	// says.
	ClusterUserAnnotation = "fleet.kubectl.io/lock-cluster-user"
)

// ErrNoNamespace is Acquire's error, with NoNamespace, when the
// namespace is missing.
var ErrNoNamespace = errors.New("namespace " + Namespace + " does not exist")

var (
	leasesGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	// pollInterval is how often a waiting Acquire tries again.
	pollInterval = time.Second
)

// Name is the name of an app's lease: fleet-<app>.
func Name(app string) string { return "fleet-" + app }

// Holder is who takes a lock: a process on a machine.
type Holder struct {
	// User is the user on the machine.
	User string
	// Host is the machine's name.
	Host string
	// PID is the process.
	PID int
	// Started is when the command started.
	Started time.Time
	// ClusterUser is who the cluster says the user is ("" when it does not
	// say).
	ClusterUser string
	// Machine names the kernel's boot and the pid namespace the process
	// runs in (Linux; "" elsewhere): a lock whose holder has this
	// process's Machine and no longer runs is certainly abandoned.
	Machine string
}

// Local is the holder this process is: the user, the host, the pid, and
// started as the start time.
func Local(started time.Time) Holder {
	h := Holder{User: os.Getenv("USER"), PID: os.Getpid(), Started: started.UTC().Truncate(time.Second), Machine: machine()}
	if u, err := user.Current(); err == nil && u.Username != "" {
		h.User = u.Username
	}
	if h.User == "" {
		h.User = "unknown"
	}
	h.Host, _ = os.Hostname()
	if h.Host == "" {
		h.Host = "unknown"
	}
	return h
}

// ID is the holder's identity as the lease's spec.holderIdentity has it:
// "alice@build-7 pid 4242".
func (h Holder) ID() string { return fmt.Sprintf("%s@%s pid %d", h.User, h.Host, h.PID) }

// Options say how to take a lock.
type Options struct {
	Holder Holder
	// Duration is how long the lease lasts without renewal (whole
	// seconds, at least one); the holder renews it every third of it.
	// 0 is DefaultDuration.
	Duration time.Duration
	// Timeout is how long to wait for a lock another holds; 0 fails at
	// once.
	Timeout time.Duration
	// FieldManager creates the namespace when it is missing.
	FieldManager string
	// NoNamespace leaves a missing namespace missing: Acquire then
	// returns ErrNoNamespace (for delete: no app has anything there).
	NoNamespace bool
	// NoWait makes Acquire one attempt: a lease another holds is a
	// *HeldError at once, even one that looks abandoned (its takeover
	// needs it watched).
	NoWait bool
	// Waiting, when set, is told once that Acquire waits for the holder.
	Waiting func(*HeldError)
	// Clock measures how long a lease was seen unchanged, and paces the
	// waits; nil is the real clock.
	Clock clock.WithTicker
	// Lost, when set, is told when a renewal finds the lease taken over
	// or deleted, or when no renewal went through by the renew deadline
	// (RenewDeadline, by this machine's clock: safely before another may
	// take it over): the lock no longer protects anything.
	Lost func(error)
}

// HeldError is a lock another holds: "locked by alice@build-7 (pid 4242)
// since 2026-11-23T10:02:11Z".
type HeldError struct {
	Info
	// Watch, when not zero, is how much longer the lease must be seen
	// unchanged to be taken over, for a lease that looks abandoned: its
	// holder's timestamps say it expired, or its holder is a process of
	// this machine that is gone. Acquire watches it that long even without
	// a Timeout.
	Watch time.Duration
}

// observed is how long a lease has been seen unchanged, by this process.
type observed struct {
	clock           clock.PassiveClock
	resourceVersion string
	since           time.Time
}

// unchangedFor notes the lease's resourceVersion and returns how long it
// has been seen with it.
func (o *observed) unchangedFor(resourceVersion string) time.Duration {
	now := o.clock.Now()
	if resourceVersion != o.resourceVersion {
		o.resourceVersion, o.since = resourceVersion, now
	}
	return now.Sub(o.since)
}

// RenewDeadline is how long after sending the last renewal that went
// through a holder declares its lock lost, when none has gone through
// since: two thirds of the lease's duration d (40s of the default 60s),
// as client-go's leader election stops at a RenewDeadline shorter than
// its LeaseDuration (10s of 15s). The holder then stops its writes and
// cancels those in flight (Options.Lost).
//
// The margin, d/3. A waiting run takes a lease over once it has itself
// seen it at one resourceVersion for d (Info.takeover). It cannot see a
// version before the server wrote it, at w, and the holder reads its
// clock before sending the renewal that wrote it, at s ≤ w: no takeover
// comes before w + d ≥ s + d, and the holder gives up at s + 2d/3. The
// d/3 between (20s of 60s; 333ms at the least duration, 1s) is for the
// holder to notice (a renewal in flight is cut at the deadline), for
// writes already on their way to land, and for two machines' clocks to
// run at different rates (parts per million). A renewal goes every d/3
// after the last one sent, and one that fails is tried again every d/15
// (4s of 60s) until the deadline: one failure does not lose the lock.
// (A holder taken for gone, its pid not running on this host, is taken
// over sooner, past the renewal interval: staleAfter.)
func RenewDeadline(d time.Duration) time.Duration { return d * 2 / 3 }

// retryAfter is how soon a renewal that failed is tried again.
func retryAfter(d time.Duration) time.Duration { return max(d/15, 50*time.Millisecond) }

// staleAfter is how long a lease whose holder is gone must be seen
// unchanged to be taken over: longer than the holder's renewal interval
// (a third of the duration), so that a live holder would have renewed it.
func staleAfter(d time.Duration) time.Duration { return min(d, d/3+time.Second) }

// Error implements error.
func (e *HeldError) Error() string {
	return fmt.Sprintf("locked by %s since %s", e.Holder(), e.Since.UTC().Format(time.RFC3339))
}

// Info is what a lease says about its holder.
type Info struct {
	// App is the app the lease locks.
	App string
	// HolderID is the lease's spec.holderIdentity.
	HolderID string
	// User, Host, PID and Machine are the holder's, from the annotations.
	User, Host, PID, Machine string
	// ClusterUser is who the cluster said the holder was.
	ClusterUser string
	// Started is when the holder's command started.
	Started time.Time
	// Since is when the holder took the lease.
	Since time.Time
	// Renewed is when the holder renewed it last.
	Renewed time.Time
	// Duration is how long it lasts without renewal.
	Duration time.Duration
	// UID and ResourceVersion are the lease's, as read.
	UID             types.UID
	ResourceVersion string
}

// Holder is a readable name of who holds the lease:
// "alice@build-7 (pid 4242)".
func (i Info) Holder() string {
	if i.User == "" || i.Host == "" {
		if i.HolderID == "" {
			return "an unknown holder"
		}
		return i.HolderID
	}
	s := i.User + "@" + i.Host
	if i.PID != "" {
		s += " (pid " + i.PID + ")"
	}
	return s
}

// gone reports whether the holder is a process of me's machine that no
// longer runs (a run whose cluster died before it could release, then
// started again here): its lease is taken over once seen unchanged past
// its renewal interval (staleAfter), not only once it expired. certain
// says the holder ran where me runs (the same Machine: the same kernel
// boot and pid namespace), which sees all its processes: then it is taken
// over at once.
func (i Info) gone(me Holder) (gone, certain bool) {
	pid, err := strconv.Atoi(i.PID)
	gone = err == nil && i.Host == me.Host && pid != me.PID && pid > 0 && !alive(pid)
	return gone, gone && i.Machine != "" && i.Machine == me.Machine
}

// Expires is when the lease expires unless renewed.
func (i Info) Expires() time.Time { return i.Renewed.Add(i.Duration) }

// Expired reports whether the lease's own timestamps say it has expired at
// now. It describes a lease (unlock); whether to take one over is judged
// by observed time.
func (i Info) Expired(now time.Time) bool { return !now.Before(i.Expires()) }

// takeover says whether a lease another holds may be taken over, having
// been seen unchanged for unchanged: it expired by observed time, or its
// holder is gone and it went unrenewed past the renewal interval. When
// not, watch is how much longer to see it unchanged before it may, when
// it looks abandoned (its timestamps say it expired at now, or its holder
// is gone); 0 when it does not look abandoned.
func (i Info) takeover(me Holder, unchanged time.Duration, now time.Time) (ok bool, watch time.Duration) {
	after := i.Duration
	gone, certain := i.gone(me)
	switch {
	case certain:
		after = 0
	case gone:
		after = staleAfter(i.Duration)
	}
	switch {
	case unchanged >= after:
		return true, 0
	case gone || i.Expired(now):
		return false, after - unchanged
	}
	return false, 0
}

// Lock is a lease this process holds, renewed in the background until
// Release.
type Lock struct {
	ri       dynamic.ResourceInterface
	app      string
	duration time.Duration
	lost     func(error)
	clock    clock.WithTicker

	mu    sync.Mutex
	lease *unstructured.Unstructured // as last written
	err   error                      // why the lock was lost, if it was
	stop  chan struct{}
	done  chan struct{}
	// renewing is the context of the renewals (and SetClusterUser's
	// update); cancel ends it, and so a request in flight.
	renewing context.Context
	cancel   context.CancelFunc
	// annotating is SetClusterUser's update.
	annotating sync.WaitGroup
}

// Acquire takes the lock of app on the cluster c: it creates the lease
// (and the namespace when missing), or takes over one that has expired.
// A lease another holds and that has not expired is a *HeldError, at once
// or, with a Timeout, once it is still held at the end of it. The lock is
// renewed until Release.
func Acquire(ctx context.Context, c *kube.Client, app string, o Options) (*Lock, error) {
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	o.Duration = o.Duration.Round(time.Second)
	if o.Duration < time.Second {
		o.Duration = time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	ri := c.Dynamic.Resource(leasesGVR).Namespace(Namespace)
	deadline := o.Clock.Now().Add(o.Timeout)
	seen := &observed{clock: o.Clock}
	var watchEnd time.Time
	waited := false
	for {
		lease, sent, err := try(ctx, c, ri, app, o, seen)
		if err == nil {
			rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			l := &Lock{ri: ri, app: app, duration: o.Duration, lost: o.Lost, clock: o.Clock, lease: lease, stop: make(chan struct{}), done: make(chan struct{}), renewing: rctx, cancel: cancel}
			go l.renew(rctx, sent)
			return l, nil
		}
		var held *HeldError
		if !errors.As(err, &held) || o.NoWait {
			return nil, err
		}
		// Wait for the holder (Timeout), or as long as a lease that looks
		// abandoned must be seen unchanged, whichever is longer: the
		// watch is set once, so a holder that keeps renewing with a
		// clock far behind is not watched for ever.
		if held.Watch > 0 && watchEnd.IsZero() {
			watchEnd = o.Clock.Now().Add(held.Watch)
		}
		now := o.Clock.Now()
		left := max(deadline.Sub(now), watchEnd.Sub(now))
		if left <= 0 {
			return nil, err
		}
		if !waited && o.Waiting != nil {
			o.Waiting(held)
		}
		waited = true
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (stopped waiting: %w)", held, ctx.Err())
		case <-o.Clock.After(min(pollInterval, left)):
		}
	}
}

// try takes the lease once: creates it, or takes over an expired one,
// and says when (o.Clock) it sent the write that did, before the server
// made it: the renew deadline counts from there. A lease someone else
// created, renewed or took over meanwhile is tried again, a few times.
func try(ctx context.Context, c *kube.Client, ri dynamic.ResourceInterface, app string, o Options, seen *observed) (*unstructured.Unstructured, time.Time, error) {
	var last error
	for range 3 {
		t := time.Now()
		desired, err := leaseFor(app, o, t, nil)
		if err != nil {
			return nil, time.Time{}, err
		}
		sent := o.Clock.Now()
		created, err := ri.Create(ctx, desired, metav1.CreateOptions{FieldManager: o.FieldManager})
		if apierrors.IsNotFound(err) {
			// The namespace is missing.
			if o.NoNamespace {
				return nil, time.Time{}, ErrNoNamespace
			}
			if err := c.EnsureNamespace(ctx, Namespace, o.FieldManager); err != nil {
				return nil, time.Time{}, fmt.Errorf("creating namespace %s for the lock: %w", Namespace, err)
			}
			sent = o.Clock.Now()
			created, err = ri.Create(ctx, desired, metav1.CreateOptions{FieldManager: o.FieldManager})
		}
		switch {
		case err == nil:
			return lean(created), sent, nil
		case !apierrors.IsAlreadyExists(err):
			return nil, time.Time{}, fmt.Errorf("taking lease %s/%s: %w", Namespace, Name(app), err)
		}
		live, err := ri.Get(ctx, Name(app), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			last = err // released meanwhile: create again
			continue
		}
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("reading lease %s/%s: %w", Namespace, Name(app), err)
		}
		info, err := InfoOf(live)
		if err != nil {
			return nil, time.Time{}, err
		}
		if ok, watch := info.takeover(o.Holder, seen.unchangedFor(info.ResourceVersion), o.Clock.Now()); !ok {
			return nil, time.Time{}, &HeldError{Info: info, Watch: watch}
		}
		// Seen unchanged for its duration, or past its renewal interval
		// with its holder gone: take it over, unless someone else does
		// first (the update carries the resourceVersion read).
		takeover, err := leaseFor(app, o, t, live)
		if err != nil {
			return nil, time.Time{}, err
		}
		sent = o.Clock.Now()
		updated, err := ri.Update(ctx, takeover, metav1.UpdateOptions{FieldManager: o.FieldManager})
		switch {
		case err == nil:
			return lean(updated), sent, nil
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			last = err
			continue
		}
		return nil, time.Time{}, fmt.Errorf("taking over expired lease %s/%s: %w", Namespace, Name(app), err)
	}
	return nil, time.Time{}, fmt.Errorf("taking lease %s/%s: others kept changing it: %w", Namespace, Name(app), last)
}

// lean is a lease as the lock keeps it: without its managed fields,
// which every write's answer carries and nothing reads (a write without
// them leaves the server's as they are). A thousand clusters' locks
// held 9.5 MB of them.
func lean(lease *unstructured.Unstructured) *unstructured.Unstructured {
	unstructured.RemoveNestedField(lease.Object, "metadata", "managedFields")
	return lease
}

// leaseFor is the lease o's holder writes at t: a new one, or, over live,
// a takeover that keeps live's metadata (its resourceVersion above all).
func leaseFor(app string, o Options, t time.Time, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	mt := metav1.NewMicroTime(t)
	seconds := int32(o.Duration / time.Second)
	lease := &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: Name(app), Namespace: Namespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr(o.Holder.ID()),
			LeaseDurationSeconds: &seconds,
			AcquireTime:          &mt,
			RenewTime:            &mt,
		},
	}
	if live != nil {
		var old coordinationv1.Lease
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &old); err != nil {
			return nil, fmt.Errorf("lease %s/%s: %w", Namespace, Name(app), err)
		}
		lease.ObjectMeta = old.ObjectMeta
		transitions := int32(1)
		if old.Spec.LeaseTransitions != nil {
			transitions += *old.Spec.LeaseTransitions
		}
		lease.Spec.LeaseTransitions = &transitions
	}
	lease.Labels = merged(lease.Labels, map[string]string{"app.kubernetes.io/managed-by": "kubectl-fleet", "fleet.kubectl.io/app": app})
	lease.Annotations = merged(lease.Annotations, map[string]string{
		UserAnnotation:        o.Holder.User,
		HostAnnotation:        o.Holder.Host,
		PIDAnnotation:         strconv.Itoa(o.Holder.PID),
		StartedAnnotation:     o.Holder.Started.UTC().Format(time.RFC3339),
		ClusterUserAnnotation: o.Holder.ClusterUser,
		MachineAnnotation:     o.Holder.Machine,
	})
	for k, v := range map[string]string{ClusterUserAnnotation: o.Holder.ClusterUser, MachineAnnotation: o.Holder.Machine} {
		if v == "" {
			delete(lease.Annotations, k)
		}
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(lease)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: content}, nil
}

func merged(into, from map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for k, v := range from {
		into[k] = v
	}
	return into
}

func ptr[T any](v T) *T { return &v }

// InfoOf reads what a lease says about its holder.
func InfoOf(u *unstructured.Unstructured) (Info, error) {
	var l coordinationv1.Lease
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &l); err != nil {
		return Info{}, fmt.Errorf("lease %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	a := l.Annotations
	i := Info{
		User: a[UserAnnotation], Host: a[HostAnnotation], PID: a[PIDAnnotation], Machine: a[MachineAnnotation], ClusterUser: a[ClusterUserAnnotation],
		UID: l.UID, ResourceVersion: l.ResourceVersion,
	}
	if l.Labels != nil {
		i.App = l.Labels["fleet.kubectl.io/app"]
	}
	i.Started, _ = time.Parse(time.RFC3339, a[StartedAnnotation])
	if l.Spec.HolderIdentity != nil {
		i.HolderID = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseDurationSeconds != nil {
		i.Duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	switch {
	case l.Spec.AcquireTime != nil:
		i.Since = l.Spec.AcquireTime.Time
	case l.Spec.RenewTime != nil:
		i.Since = l.Spec.RenewTime.Time
	default:
		i.Since = l.CreationTimestamp.Time
	}
	i.Renewed = i.Since
	if l.Spec.RenewTime != nil {
		i.Renewed = l.Spec.RenewTime.Time
	}
	return i, nil
}

// renew renews the lease until Release: a third of its duration after
// the last renewal that went through was sent (sent: the acquisition's
// write first). A renewal that finds the lease taken over (Conflict) or
// deleted loses the lock; other errors are tried again every retryAfter
// until the renew deadline (RenewDeadline after sent, on this machine's
// monotonic clock), which loses the lock, safely before another run may
// take the lease over. A renewal in flight at the deadline is cut there.
func (l *Lock) renew(ctx context.Context, sent time.Time) {
	defer close(l.done)
	interval := max(l.duration/3, 100*time.Millisecond)
	deadline := RenewDeadline(l.duration)
	next := interval // the next attempt, counted from sent
	var failed error // why the renewals since sent did not go through
	for {
		if wait := min(next, deadline) - l.clock.Since(sent); wait > 0 {
			timer := l.clock.NewTimer(wait)
			select {
			case <-l.stop:
				timer.Stop()
				return
			case <-timer.C():
			}
		}
		left := deadline - l.clock.Since(sent)
		if left <= 0 {
			l.lose(l.notRenewed(l.clock.Since(sent), failed))
			return
		}
		l.mu.Lock()
		lease := l.lease.DeepCopy()
		l.mu.Unlock()
		_ = unstructured.SetNestedField(lease.Object, metav1.NewMicroTime(time.Now()).UTC().Format(metav1.RFC3339Micro), "spec", "renewTime")
		attempt := l.clock.Now()
		rctx, cancel := context.WithTimeout(ctx, min(max(l.duration/3, time.Second), left))
		updated, err := l.ri.Update(rctx, lease, metav1.UpdateOptions{})
		cancel()
		switch {
		case err == nil:
			sent, next, failed = attempt, interval, nil
			l.mu.Lock()
			l.lease = lean(updated)
			l.mu.Unlock()
			continue
		case apierrors.IsConflict(err):
			switch own, rerr := l.ownRenewal(ctx, min(max(l.duration/3, time.Second), deadline-l.clock.Since(sent))); {
			case rerr != nil:
				failed = rerr // not read: tried again
			case own:
				// An earlier renewal that timed out here went through
				// there: the lease is still this lock's, at a newer
				// version, renewed from it at the next try. Which
				// attempt wrote it is not known: the deadline still
				// counts from sent.
			default:
				l.lose(fmt.Errorf("lock of app %s lost: lease %s/%s was taken over or deleted while held", l.app, Namespace, Name(l.app)))
				return
			}
		case apierrors.IsNotFound(err):
			l.lose(fmt.Errorf("lock of app %s lost: lease %s/%s was taken over or deleted while held", l.app, Namespace, Name(l.app)))
			return
		default:
			failed = err
		}
		next = l.clock.Since(sent) + retryAfter(l.duration)
	}
}

// notRenewed is why the lock is lost at the renew deadline.
func (l *Lock) notRenewed(since time.Duration, failed error) error {
	err := fmt.Errorf("lock of app %s lost: lease %s/%s not renewed for %s, the renew deadline of a %s lease", l.app, Namespace, Name(l.app), since.Round(time.Millisecond), l.duration)
	if failed != nil {
		err = fmt.Errorf("%w (%w)", err, failed)
	}
	return err
}

// ownRenewal reports whether a lease that changed since this lock last
// wrote it is still this lock's (an error: it could not be read within
// timeout): same object (uid), same holder, same acquisition. That is a renewal whose answer never came (timed out on a
// slow server) but that the server applied; the lock then carries on from
// the lease as it is. A takeover changes the holder and acquireTime, a
// delete and create the uid.
func (l *Lock) ownRenewal(ctx context.Context, timeout time.Duration) (bool, error) {
	if timeout <= 0 {
		return false, context.DeadlineExceeded
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got, err := l.ri.Get(rctx, Name(l.app), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range []string{"holderIdentity", "acquireTime"} {
		mine, _, _ := unstructured.NestedString(l.lease.Object, "spec", f)
		theirs, _, _ := unstructured.NestedString(got.Object, "spec", f)
		if mine != theirs || mine == "" {
			return false, nil
		}
	}
	if got.GetUID() != l.lease.GetUID() {
		return false, nil
	}
	l.lease = lean(got)
	return true, nil
}

// SetClusterUser records on the lease who the cluster says the holder is,
// for a lock taken before the cluster said (rollout.Locks.Early), in the
// background: it is what others are told, so a failure only leaves it
// unsaid. Release ends it, as it ends a renewal.
func (l *Lock) SetClusterUser(user string) {
	if user == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil || l.lease.GetAnnotations()[ClusterUserAnnotation] == user {
		return
	}
	next := l.lease.DeepCopy()
	l.annotating.Go(func() {
		next.SetAnnotations(merged(next.GetAnnotations(), map[string]string{ClusterUserAnnotation: user}))
		rctx, cancel := context.WithTimeout(l.renewing, max(l.duration/3, time.Second))
		defer cancel()
		updated, err := l.ri.Update(rctx, next, metav1.UpdateOptions{})
		if err != nil {
			return // a renewal came first, or the lease is gone: the renewals say so
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.lease.GetResourceVersion() == next.GetResourceVersion() {
			l.lease = lean(updated)
		}
	})
}

// lose records why the lock was lost and says so.
func (l *Lock) lose(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
	if l.lost != nil {
		l.lost(err)
	}
}

// Release stops the renewals and deletes the lease, only if it is still
// the one this lock wrote last (a precondition on its uid and
// resourceVersion). It returns why the lock was lost, if it was, or why
// the lease could not be deleted (it then expires on its own).
func (l *Lock) Release(ctx context.Context) error {
	if !l.Abandon() {
		return nil // released already
	}
	l.annotating.Wait()
	del := func() error {
		l.mu.Lock()
		uid, rv := l.lease.GetUID(), l.lease.GetResourceVersion()
		l.mu.Unlock()
		return l.ri.Delete(ctx, Name(l.app), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	}
	l.mu.Lock()
	lostErr := l.err
	l.mu.Unlock()
	if lostErr != nil {
		return lostErr
	}
	err := del()
	if apierrors.IsConflict(err) {
		// A last renewal that timed out here but went through there.
		own, rerr := l.ownRenewal(ctx, max(l.duration/3, time.Second))
		switch {
		case rerr != nil:
			// Not known to be lost: it could not be read.
			return fmt.Errorf("releasing lease %s/%s (it expires on its own): it changed, and reading it failed: %w", Namespace, Name(l.app), rerr)
		case own:
			err = del()
		}
	}
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return fmt.Errorf("lock of app %s lost: lease %s/%s was taken over or deleted while held", l.app, Namespace, Name(l.app))
	}
	return fmt.Errorf("releasing lease %s/%s (it expires on its own): %w", Namespace, Name(l.app), err)
}

// Abandon stops the renewals, a renewal in flight too, without deleting
// the lease: it expires on its own (or is taken over at once from this
// machine once this process is gone). It reports whether the lock was
// still held.
func (l *Lock) Abandon() bool {
	l.mu.Lock()
	select {
	case <-l.stop:
		l.mu.Unlock()
		return false
	default:
		close(l.stop)
	}
	l.mu.Unlock()
	l.cancel()
	<-l.done
	return true
}

// Get reads the lock of app on the cluster: nil when there is none.
func Get(ctx context.Context, c *kube.Client, app string) (*Info, error) {
	u, err := c.Dynamic.Resource(leasesGVR).Namespace(Namespace).Get(ctx, Name(app), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading lease %s/%s: %w", Namespace, Name(app), err)
	}
	info, err := InfoOf(u)
	if err != nil {
		return nil, err
	}
	if info.App == "" {
		info.App = app
	}
	return &info, nil
}

// Remove deletes the lock of app as it was read (info): nothing when it
// has changed since (renewed or taken over: a Conflict), so that a lock
// shown as stale is the one removed. It reports whether there was one to
// remove.
func Remove(ctx context.Context, c *kube.Client, app string, info *Info) (bool, error) {
	opts := metav1.DeleteOptions{}
	if info != nil {
		opts.Preconditions = &metav1.Preconditions{UID: &info.UID, ResourceVersion: &info.ResourceVersion}
	}
	err := c.Dynamic.Resource(leasesGVR).Namespace(Namespace).Delete(ctx, Name(app), opts)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsConflict(err):
		return false, fmt.Errorf("lease %s/%s changed since it was read (renewed or taken over): not removed", Namespace, Name(app))
	case err != nil:
		return false, fmt.Errorf("deleting lease %s/%s: %w", Namespace, Name(app), err)
	}
	return true, nil
}

// Describe says who holds the lock, since when, and whether it has
// expired at now: what unlock shows before it asks.
func (i *Info) Describe(now time.Time) string {
	s := fmt.Sprintf("locked by %s since %s", i.Holder(), i.Since.UTC().Format(time.RFC3339))
	if i.ClusterUser != "" {
		s += " (cluster user " + i.ClusterUser + ")"
	}
	if i.Expired(now) {
		return s + fmt.Sprintf(", expired %s ago", duration.HumanDuration(now.Sub(i.Expires())))
	}
	return s + fmt.Sprintf(", renewed %s ago, expires in %s unless renewed", duration.HumanDuration(now.Sub(i.Renewed)), duration.HumanDuration(i.Expires().Sub(now)))
}
