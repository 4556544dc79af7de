package lock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
)

var (
	alice = Holder{User: "alice", Host: "build-7", PID: 4242, Started: time.Date(2026, 11, 23, 10, 2, 0, 0, time.UTC), ClusterUser: "alice@example.com"}
	bob   = Holder{User: "bob", Host: "laptop", PID: 7, Started: time.Date(2026, 11, 23, 10, 3, 0, 0, time.UTC)}
)

// leaseObject is a lease of app as holder h would have written it, last
// renewed at renewed.
func leaseObject(t *testing.T, app string, h Holder, acquired, renewed time.Time, d time.Duration) *unstructured.Unstructured {
	t.Helper()
	u, err := leaseFor(app, Options{Holder: h, Duration: d}, acquired, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, metav1.NewMicroTime(renewed).UTC().Format(metav1.RFC3339Micro), "spec", "renewTime"); err != nil {
		t.Fatal(err)
	}
	return u
}

func live(t *testing.T, c *kubetest.Cluster, app string) *Info {
	t.Helper()
	i, err := Get(context.Background(), c.Client, app)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func release(t *testing.T, l *Lock) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("release: %v", err)
	}
}

// TestAcquireAndHeld: the first holder creates the lease (and the
// namespace), saying who it is; a second one fails at once naming the
// first; once released, the second gets it.
func TestAcquireAndHeld(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	if _, err := Acquire(ctx, c.Client, "web", Options{Holder: alice, NoNamespace: true}); !errors.Is(err, ErrNoNamespace) || c.Live(kubetest.Object("v1", "Namespace", "", Namespace)) != nil {
		t.Errorf("without the namespace, not to be created: %v", err)
	}
	l, err := Acquire(ctx, c.Client, "web", Options{Holder: alice, Duration: 30 * time.Second, FieldManager: "kubectl-fleet"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Live(kubetest.Object("v1", "Namespace", "", Namespace)) == nil {
		t.Error("the namespace was not created")
	}
	got := live(t, c, "web")
	if got == nil {
		t.Fatal("no lease")
	}
	if got.HolderID != "alice@build-7 pid 4242" || got.Holder() != "alice@build-7 (pid 4242)" || got.ClusterUser != "alice@example.com" || got.App != "web" ||
		got.Duration != 30*time.Second || !got.Started.Equal(alice.Started) || time.Since(got.Since) > 5*time.Second || got.Expired(time.Now()) {
		t.Errorf("lease: %+v", got)
	}

	_, err = Acquire(ctx, c.Client, "web", Options{Holder: bob})
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("a second acquire: %v", err)
	}
	want := "locked by alice@build-7 (pid 4242) since " + got.Since.UTC().Format(time.RFC3339)
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if other, err := Acquire(ctx, c.Client, "db", Options{Holder: bob}); err != nil {
		t.Errorf("another app's lock: %v", err)
	} else {
		release(t, other)
	}

	release(t, l)
	if got := live(t, c, "web"); got != nil {
		t.Errorf("lease left after release: %+v", got)
	}
	l2, err := Acquire(ctx, c.Client, "web", Options{Holder: bob})
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	release(t, l2)
}

// TestHeldErrorMessage: the message names the holder and when it took the
// lock, in UTC.
func TestHeldErrorMessage(t *testing.T) {
	since := time.Date(2026, 11, 23, 11, 2, 11, 500, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		info Info
		want string
	}{
		{Info{User: "alice", Host: "build-7", PID: "4242", HolderID: "x", Since: since}, "locked by alice@build-7 (pid 4242) since 2026-11-23T10:02:11Z"},
		{Info{HolderID: "other-tool", Since: since}, "locked by other-tool since 2026-11-23T10:02:11Z"},
		{Info{Since: since}, "locked by an unknown holder since 2026-11-23T10:02:11Z"},
	} {
		if got := (&HeldError{Info: tc.info}).Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.info, got, tc.want)
		}
	}
}

// ticking is a fake clock that moves a poll interval forward whenever
// Acquire waits on it: the lock tests measure time by it, never by
// sleeping against a lease.
func ticking(t *testing.T) *clocktesting.FakeClock {
	t.Helper()
	fc := clocktesting.NewFakeClock(time.Now())
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if fc.HasWaiters() {
				fc.Step(pollInterval)
			} else {
				goruntime.Gosched()
			}
		}
	}()
	return fc
}

// takeover returns how long after now on fc the first update of a lease
// (a takeover) was sent to c (-1: none yet). The time cannot be read once
// Acquire returns: fc goes on ticking for the lock's renewals.
func takeover(c *kubetest.Cluster, fc *clocktesting.FakeClock) func() time.Duration {
	began := fc.Now()
	var (
		mu sync.Mutex
		at time.Time
	)
	c.DynamicFake().PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if at.IsZero() {
			at = fc.Now()
		}
		return false, nil, nil
	})
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if at.IsZero() {
			return -1
		}
		return at.Sub(began)
	}
}

// TestExpiredTakeover: a lease whose timestamps say it expired (its holder
// died) is watched for its duration on this machine's clock and, seen
// unchanged all along, taken over, keeping the object and counting the
// transition; one renewed recently is held at once.
func TestExpiredTakeover(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	c.Put(kubetest.Object("v1", "Namespace", "", Namespace))
	start := time.Now().Add(-time.Hour)
	c.Put(leaseObject(t, "web", alice, start, time.Now().Add(-25*time.Second), 20*time.Second))
	before := live(t, c, "web")
	if !before.Expired(time.Now()) {
		t.Fatalf("not expired: %+v", before)
	}
	fc := ticking(t)
	took := takeover(c, fc)
	var watched time.Duration
	l, err := Acquire(ctx, c.Client, "web", Options{Holder: bob, Clock: fc, Waiting: func(h *HeldError) { watched = h.Watch }})
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	if took := took(); watched != 20*time.Second || took < 20*time.Second || took > 22*time.Second {
		t.Errorf("watched %s, took %s; want the lease's duration, 20s", watched, took)
	}
	after := live(t, c, "web")
	transitions, _, _ := unstructured.NestedInt64(c.Live(kubetest.Object("coordination.k8s.io/v1", "Lease", Namespace, "fleet-web")).Object, "spec", "leaseTransitions")
	if after.Holder() != "bob@laptop (pid 7)" || after.UID != before.UID || after.ClusterUser != "" || transitions != 1 || after.Duration != DefaultDuration || time.Since(after.Since) > 5*time.Second {
		t.Errorf("after takeover: %+v, transitions %d (before: %+v)", after, transitions, before)
	}
	release(t, l)

	c.Put(leaseObject(t, "web", alice, start, time.Now().Add(-15*time.Second), 20*time.Second))
	if _, err := Acquire(ctx, c.Client, "web", Options{Holder: bob, Clock: ticking(t)}); !strings.HasPrefix(errString(err), "locked by alice@build-7 (pid 4242) since "+start.UTC().Format(time.RFC3339)) {
		t.Errorf("a lease renewed 15s ago, lasting 20s: %v", err)
	}
}

// TestExpiryByObservedTime: the holder's clock never decides. A holder
// whose clock is an hour behind (its lease looks expired) but that renews
// is never taken over; a lease whose timestamps are in the future (its
// holder's clock ahead) but that nobody renews is taken over once seen
// unchanged for its duration, when the user waits (--lock-timeout).
func TestExpiryByObservedTime(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	c.Put(kubetest.Object("v1", "Namespace", "", Namespace))
	behind := time.Now().Add(-time.Hour)
	c.Put(leaseObject(t, "web", alice, behind, behind, 20*time.Second))
	renewals := 0
	c.DynamicFake().PrependReactor("get", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		renewals++ // alice renews between any two reads, an hour behind
		c.Put(leaseObject(t, "web", alice, behind, behind.Add(time.Duration(renewals)*time.Second), 20*time.Second))
		return false, nil, nil
	})
	fc := ticking(t)
	began := fc.Now()
	_, err := Acquire(ctx, c.Client, "web", Options{Holder: bob, Clock: fc})
	var held *HeldError
	if !errors.As(err, &held) || live(t, c, "web").Holder() != "alice@build-7 (pid 4242)" {
		t.Fatalf("a renewing holder with a clock behind was taken over: %v", err)
	}
	if took := fc.Since(began); took < 20*time.Second || took > 22*time.Second {
		t.Errorf("watched for %s, want the lease's duration, 20s, once", took)
	}

	c = kubetest.New(t)
	c.Put(kubetest.Object("v1", "Namespace", "", Namespace))
	ahead := time.Now().Add(time.Hour)
	c.Put(leaseObject(t, "web", alice, ahead, ahead, 20*time.Second))
	if _, err := Acquire(ctx, c.Client, "web", Options{Holder: bob, Clock: ticking(t)}); !errors.As(err, &held) || held.Watch != 0 {
		t.Errorf("a lease that looks live, without a timeout: %v (watch %s)", err, held.Watch)
	}
	fc = ticking(t)
	took := takeover(c, fc)
	l, err := Acquire(ctx, c.Client, "web", Options{Holder: bob, Clock: fc, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("an unrenewed lease with a clock ahead, waiting a minute: %v", err)
	}
	if took := took(); took < 20*time.Second || took > 22*time.Second {
		t.Errorf("taken over after %s, want the lease's duration, 20s", took)
	}
	release(t, l)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestTakeoverConflict: when another holder takes an expired lease over
// between the read and the update (a Conflict), the lock is theirs: the
// acquire fails naming them.
func TestTakeoverConflict(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	c.Put(kubetest.Object("v1", "Namespace", "", Namespace))
	c.Put(leaseObject(t, "web", alice, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour), time.Minute))
	carol := Holder{User: "carol", Host: "ci", PID: 99}
	raced := false
	c.DynamicFake().PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if raced {
			return false, nil, nil
		}
		raced = true
		c.Put(leaseObject(t, "web", carol, time.Now(), time.Now(), time.Minute)) // carol was faster
		return true, nil, apierrors.NewConflict(leasesGVR.GroupResource(), "fleet-web", errors.New("the object has been modified"))
	})
	_, err := Acquire(ctx, c.Client, "web", Options{Holder: bob, Clock: ticking(t)})
	var held *HeldError
	if !errors.As(err, &held) || held.Holder() != "carol@ci (pid 99)" {
		t.Errorf("acquire that lost the race: %v", err)
	}
	if got := live(t, c, "web"); got.Holder() != "carol@ci (pid 99)" {
		t.Errorf("holder: %s", got.Holder())
	}
}

// TestReleaseOnlyOurs: a lease taken over while this process held it (it
// stalled past the duration) is left to its new holder, and Release says
// the lock was lost; so is one deleted by unlock.
func TestReleaseOnlyOurs(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	l, err := Acquire(ctx, c.Client, "web", Options{Holder: alice})
	if err != nil {
		t.Fatal(err)
	}
	c.Put(leaseObject(t, "web", bob, time.Now(), time.Now(), time.Minute))
	if err := l.Release(ctx); err == nil || !strings.Contains(err.Error(), "lost") {
		t.Errorf("release of a lease taken over: %v", err)
	}
	if got := live(t, c, "web"); got == nil || got.Holder() != "bob@laptop (pid 7)" {
		t.Errorf("the new holder's lease: %+v", got)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("a second release: %v", err)
	}

	l, err = Acquire(ctx, c.Client, "db", Options{Holder: alice})
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := Remove(ctx, c.Client, "db", nil); !removed || err != nil {
		t.Fatalf("remove: %v, %v", removed, err)
	}
	if err := l.Release(ctx); err == nil || !strings.Contains(err.Error(), "lost") {
		t.Errorf("release of a lease removed: %v", err)
	}

	// Changed (a renewal that timed out here but went through there) and
	// then not read: not known to be lost, left to expire.
	l, err = Acquire(ctx, c.Client, "api", Options{Holder: alice})
	if err != nil {
		t.Fatal(err)
	}
	renewed := c.Live(leaseObject(t, "api", alice, time.Now(), time.Now(), time.Minute))
	if err := unstructured.SetNestedField(renewed.Object, metav1.NewMicroTime(time.Now().Add(time.Second)).UTC().Format(metav1.RFC3339Micro), "spec", "renewTime"); err != nil {
		t.Fatal(err)
	}
	c.Put(renewed)
	c.Inject(kubetest.Fault{Verb: "get", Resource: "leases", Err: apierrors.NewServiceUnavailable("busy")})
	if err := l.Release(ctx); err == nil || strings.Contains(err.Error(), "lost") || !strings.Contains(err.Error(), "expires on its own") {
		t.Errorf("release of a lease changed and then not read: %v; want it left to expire, not lost", err)
	}
}

// step moves fc forward by d once the lock's renewal loop waits on it,
// and waits (on the real clock, for at most 5s) until cond holds: the
// renewal that the tick set off has been through.
func step(t *testing.T, fc *clocktesting.FakeClock, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !fc.HasWaiters() && time.Now().Before(deadline) {
		goruntime.Gosched()
	}
	fc.Step(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("nothing happened within 5s of moving the clock %s", d)
		}
		time.Sleep(time.Millisecond)
	}
}

// A lock whose renewals fail is lost at the renew deadline, two thirds
// of its duration after the last renewal that went through was sent (by
// this machine's clock): 20s of 30s, a third of the duration before a
// waiting run, which must see the lease unchanged for all of it, may
// take it over. Failures before are tried again every d/15 (2s).
func TestRenewFailing(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	fc := clocktesting.NewFakeClock(time.Now())
	start := fc.Now()
	lost := make(chan error, 1)
	var lostAt time.Time
	l, err := Acquire(ctx, c.Client, "web", Options{Holder: alice, Duration: 30 * time.Second, Clock: fc, Lost: func(err error) { lostAt = fc.Now(); lost <- err }})
	if err != nil {
		t.Fatal(err)
	}
	c.Inject(kubetest.Fault{Verb: "update", Resource: "leases", Err: apierrors.NewServiceUnavailable("etcd is down")})
	step(t, fc, 10*time.Second, func() bool { return leaseUpdates(c) == 1 })
	for i := 2; i <= 5; i++ { // tried again at 12s, 14s, 16s, 18s
		step(t, fc, 2*time.Second, func() bool { return leaseUpdates(c) == i })
		select {
		case err := <-lost:
			t.Fatalf("lost after %s of failing renewals: %v", fc.Since(start), err)
		default:
		}
	}
	step(t, fc, 2*time.Second, func() bool { return len(lost) == 1 })
	err = <-lost
	if at := lostAt.Sub(start); at != RenewDeadline(30*time.Second) || at != 20*time.Second {
		t.Errorf("lost %s after the lease was taken, want the renew deadline, 20s", at)
	}
	if n := leaseUpdates(c); n != 5 {
		t.Errorf("%d renewals sent, want 5 (none at the deadline)", n)
	}
	if !strings.Contains(err.Error(), "lock of app web lost: lease kubectl-fleet/fleet-web not renewed for 20s, the renew deadline of a 30s lease") || !strings.Contains(err.Error(), "etcd is down") {
		t.Errorf("lost: %v", err)
	}
	if err := l.Release(ctx); err == nil || !strings.Contains(err.Error(), "not renewed") {
		t.Errorf("release after the lock was lost: %v", err)
	}
}

// TestLostBeforeTakeover: a holder whose renewals fail and a run waiting
// for its lock, on one clock. The holder gives the lock up at its renew
// deadline (20s of a 30s lease); the waiter takes the lease over once it
// has seen it unchanged for the whole 30s, a third of the duration
// later: never are both writing.
func TestLostBeforeTakeover(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	fc := clocktesting.NewFakeClock(time.Now())
	start := fc.Now()
	var (
		mu      sync.Mutex
		takenAt time.Time
		lostAt  time.Time
	)
	// The holder's renewals fail; the waiter's takeover goes through.
	c.DynamicFake().PrependReactor("update", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		u, _ := a.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		holder, _, _ := unstructured.NestedString(u.Object, "spec", "holderIdentity")
		if holder == alice.ID() {
			return true, nil, apierrors.NewServiceUnavailable("etcd is down")
		}
		mu.Lock()
		defer mu.Unlock()
		if takenAt.IsZero() {
			takenAt = fc.Now()
		}
		return false, nil, nil
	})
	held, err := Acquire(ctx, c.Client, "web", Options{Holder: alice, Duration: 30 * time.Second, Clock: fc, Lost: func(error) {
		mu.Lock()
		defer mu.Unlock()
		lostAt = fc.Now()
	}})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	var taken *Lock
	go func() {
		var err error
		taken, err = Acquire(ctx, c.Client, "web", Options{Holder: bob, Clock: fc, Timeout: time.Minute})
		waiting <- err
	}()
	// One second at a time, once both wait on the clock (the holder
	// until it gives up).
	waiters := func() (want int, done bool) {
		mu.Lock()
		defer mu.Unlock()
		if lostAt.IsZero() {
			return 2, !takenAt.IsZero()
		}
		return 1, !takenAt.IsZero()
	}
	for range 60 {
		if _, done := waiters(); done {
			break
		}
		for deadline := time.Now().Add(5 * time.Second); ; {
			if want, done := waiters(); done || fc.Waiters() == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("at %s: %d waiting on the clock", fc.Since(start), fc.Waiters())
			}
			time.Sleep(time.Millisecond)
		}
		fc.Step(time.Second)
	}
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	defer release(t, taken)
	mu.Lock()
	defer mu.Unlock()
	if lostAt.IsZero() || lostAt.Sub(start) > RenewDeadline(30*time.Second) || takenAt.Sub(start) < 30*time.Second || takenAt.Sub(lostAt) < 10*time.Second {
		t.Errorf("the holder gave up after %s, the waiter took over after %s: want 20s, then 30s", lostAt.Sub(start), takenAt.Sub(start))
	}
	if err := held.Release(ctx); err == nil {
		t.Error("the holder's release after the takeover: no error")
	}
}

// TestRenew: the holder renews the lease every third of its duration, so
// that it does not expire while held; a renewal that finds it taken over
// stops and says the lock is lost.
func TestRenew(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	fc := clocktesting.NewFakeClock(time.Now())
	lost := make(chan error, 1)
	l, err := Acquire(ctx, c.Client, "web", Options{Holder: alice, Duration: 30 * time.Second, Clock: fc, Lost: func(err error) { lost <- err }})
	if err != nil {
		t.Fatal(err)
	}
	first := live(t, c, "web")
	step(t, fc, 10*time.Second, func() bool { return live(t, c, "web").ResourceVersion != first.ResourceVersion })
	renewed := live(t, c, "web")
	if renewed.Renewed.Before(first.Renewed) || !renewed.Since.Equal(first.Since) || renewed.Holder() != first.Holder() {
		t.Errorf("not renewed: first %+v, then %+v", first, renewed)
	}
	if _, err := Acquire(ctx, c.Client, "web", Options{Holder: bob}); err == nil {
		t.Error("a renewed lock was taken")
	}

	c.Put(leaseObject(t, "web", bob, time.Now(), time.Now(), time.Minute))
	step(t, fc, 10*time.Second, func() bool { return len(lost) == 1 })
	if err := <-lost; !strings.Contains(err.Error(), "lock of app web lost") {
		t.Errorf("lost: %v", err)
	}
	if err := l.Release(ctx); err == nil {
		t.Error("release after the lock was lost: no error")
	}
	if got := live(t, c, "web"); got == nil || got.Holder() != "bob@laptop (pid 7)" {
		t.Errorf("the new holder's lease: %+v", got)
	}
}

// TestWait: with a timeout, Acquire waits for the holder to release,
// saying once that it waits; past the timeout it fails naming the holder.
func TestWait(t *testing.T) {
	ctx := context.Background()
	defer func(d time.Duration) { pollInterval = d }(pollInterval)
	pollInterval = 20 * time.Millisecond
	c := kubetest.New(t)
	l, err := Acquire(ctx, c.Client, "web", Options{Holder: alice})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Acquire(ctx, c.Client, "web", Options{Holder: bob, Timeout: 200 * time.Millisecond})
	var held *HeldError
	if !errors.As(err, &held) || time.Since(start) < 200*time.Millisecond {
		t.Errorf("after %s: %v", time.Since(start), err)
	}

	go func() {
		time.Sleep(200 * time.Millisecond)
		release(t, l)
	}()
	waits := 0
	l2, err := Acquire(ctx, c.Client, "web", Options{Holder: bob, Timeout: 10 * time.Second, Waiting: func(h *HeldError) {
		waits++
		if h.Holder() != "alice@build-7 (pid 4242)" {
			t.Errorf("waiting for %s", h.Holder())
		}
	}})
	if err != nil || waits != 1 {
		t.Fatalf("waited (told %d times): %v", waits, err)
	}
	if got := live(t, c, "web"); got.Holder() != "bob@laptop (pid 7)" {
		t.Errorf("holder: %s", got.Holder())
	}
	release(t, l2)

	cancelled, cancel := context.WithCancel(ctx)
	l3, _ := Acquire(ctx, c.Client, "web", Options{Holder: alice})
	defer release(t, l3)
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := Acquire(cancelled, c.Client, "web", Options{Holder: bob, Timeout: time.Minute}); !errors.Is(err, context.Canceled) || !errors.As(err, &held) {
		t.Errorf("waiting, then Ctrl-C: %v", err)
	}
}

// TestRemove: unlock removes the lease as it was shown, not one renewed
// or taken over since; a missing one is reported as such.
func TestRemove(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	c.Put(kubetest.Object("v1", "Namespace", "", Namespace))
	c.Put(leaseObject(t, "web", alice, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour), time.Minute))
	shown := live(t, c, "web")
	c.Put(leaseObject(t, "web", bob, time.Now(), time.Now(), time.Minute))
	if removed, err := Remove(ctx, c.Client, "web", shown); removed || err == nil || live(t, c, "web") == nil {
		t.Errorf("remove of a lease changed since: %v, %v", removed, err)
	}
	shown = live(t, c, "web")
	if removed, err := Remove(ctx, c.Client, "web", shown); !removed || err != nil || live(t, c, "web") != nil {
		t.Errorf("remove: %v, %v", removed, err)
	}
	if removed, err := Remove(ctx, c.Client, "web", nil); removed || err != nil {
		t.Errorf("remove of none: %v, %v", removed, err)
	}
}

// TestGoneLocalHolder: a holder of this machine whose process ended is
// gone; one that runs, this process, or one of another machine is not.
func TestGoneLocalHolder(t *testing.T) {
	if goruntime.GOOS == "windows" {
		t.Skip("processes are not asked on Windows")
	}
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Skip("no true command:", err)
	}
	me := Holder{Host: "build-7", PID: os.Getpid(), Machine: "boot-1 pid:[1]"}
	for _, tt := range []struct {
		info          Info
		gone, certain bool
	}{
		{Info{Host: "build-7", PID: strconv.Itoa(ended.Process.Pid)}, true, false},
		{Info{Host: "build-7", PID: strconv.Itoa(ended.Process.Pid), Machine: "boot-1 pid:[1]"}, true, true},
		{Info{Host: "build-7", PID: strconv.Itoa(ended.Process.Pid), Machine: "boot-2 pid:[1]"}, true, false},
		{Info{Host: "build-7", PID: strconv.Itoa(os.Getppid()), Machine: "boot-1 pid:[1]"}, false, false},
		{Info{Host: "build-7", PID: strconv.Itoa(os.Getpid()), Machine: "boot-1 pid:[1]"}, false, false},
		{Info{Host: "elsewhere", PID: strconv.Itoa(ended.Process.Pid), Machine: "boot-1 pid:[1]"}, false, false},
		{Info{Host: "build-7", PID: ""}, false, false},
	} {
		if gone, certain := tt.info.gone(me); gone != tt.gone || certain != tt.certain {
			t.Errorf("%+v: gone %v, certain %v; want %v, %v", tt.info, gone, certain, tt.gone, tt.certain)
		}
	}

	// Its lease, fresh and lasting a minute, is taken over once seen
	// unrenewed past its renewal interval (21s), not its duration...
	ctx := context.Background()
	c := kubetest.New(t)
	c.Put(kubetest.Object("v1", "Namespace", "", Namespace))
	dead := Holder{User: "alice", Host: "build-7", PID: ended.Process.Pid}
	c.Put(leaseObject(t, "web", dead, time.Now(), time.Now(), time.Minute))
	fc := ticking(t)
	took := takeover(c, fc)
	l, err := Acquire(ctx, c.Client, "web", Options{Holder: me, Clock: fc})
	if err != nil {
		t.Fatalf("a gone local holder's lease: %v", err)
	}
	if took := took(); took < 21*time.Second || took > 23*time.Second {
		t.Errorf("taken over after %s, want 21s", took)
	}
	release(t, l)

	// ...or at once when it ran where this process runs (the same
	// kernel boot and pid namespace), which sees every process it could
	// be...
	c.Put(leaseObject(t, "web", Holder{User: "alice", Host: "build-7", PID: ended.Process.Pid, Machine: me.Machine}, time.Now(), time.Now(), time.Minute))
	fc = ticking(t)
	took = takeover(c, fc)
	if l, err = Acquire(ctx, c.Client, "web", Options{Holder: me, Clock: fc}); err != nil {
		t.Fatalf("a gone holder of this machine's lease: %v", err)
	}
	if took := took(); took != 0 {
		t.Errorf("taken over after %s, want at once", took)
	}
	release(t, l)

	// ...but a holder that renews is alive, whatever its pid says here
	// (another container with the same host name).
	c.Put(leaseObject(t, "web", dead, time.Now(), time.Now(), time.Minute))
	renewals := 0
	c.DynamicFake().PrependReactor("get", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		renewals++
		if renewals%5 == 0 { // every 5s of polling, as a holder with a 15s lease renews
			c.Put(leaseObject(t, "web", dead, time.Now(), time.Now(), time.Minute))
		}
		return false, nil, nil
	})
	if _, err := Acquire(ctx, c.Client, "web", Options{Holder: me, Clock: ticking(t)}); err == nil || live(t, c, "web").PID != strconv.Itoa(dead.PID) {
		t.Errorf("a renewing holder with a pid gone here was taken over: %v", err)
	}
}

// A renewal that timed out here but went through on the server leaves
// the lock's copy of the lease behind by a version: the next renewal's
// Conflict is the lock's own, not a takeover, and the lock is kept (seen
// at 300 and 1,000 clusters on loaded servers).
func TestRenewalThatLandedLate(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	fc := clocktesting.NewFakeClock(time.Now())
	lost := make(chan error, 1)
	l, err := Acquire(ctx, c.Client, "web", Options{Holder: alice, Duration: 30 * time.Second, Clock: fc, Lost: func(err error) { lost <- err }})
	if err != nil {
		t.Fatal(err)
	}
	// The late renewal, as the server applied it.
	lease := c.Live(leaseObject(t, "web", alice, time.Now(), time.Now(), 30*time.Second))
	if err := unstructured.SetNestedField(lease.Object, metav1.NewMicroTime(time.Now()).UTC().Format(metav1.RFC3339Micro), "spec", "renewTime"); err != nil {
		t.Fatal(err)
	}
	c.Put(lease)
	late := live(t, c, "web")
	// The first renewal, at 10s, finds its own; the next is tried soon
	// after (2s), from the lease as it is.
	for i, d := range []time.Duration{10 * time.Second, retryAfter(30 * time.Second)} {
		before := live(t, c, "web").ResourceVersion
		step(t, fc, d, func() bool { return leaseUpdates(c) == i+1 })
		select {
		case err := <-lost:
			t.Fatalf("renewal %d: lost: %v", i+1, err)
		default:
		}
		if i == 1 && live(t, c, "web").ResourceVersion == before {
			t.Error("the lock did not renew from the lease as the late renewal left it")
		}
	}
	if got := live(t, c, "web"); got.Holder() != late.Holder() || !got.Since.Equal(late.Since) {
		t.Errorf("the lease changed hands: %+v, then %+v", late, got)
	}
	// The last renewal lands late too: the release deletes the lease as
	// that renewal left it.
	c.Put(c.Live(leaseObject(t, "web", alice, time.Now(), time.Now(), 30*time.Second)))
	if err := l.Release(ctx); err != nil {
		t.Errorf("release: %v", err)
	}
	if got := live(t, c, "web"); got != nil {
		t.Errorf("the lease is left: %+v", got)
	}
}

// leaseUpdates is how many lease updates (renewals) c has answered.
func leaseUpdates(c *kubetest.Cluster) int {
	n := 0
	for _, r := range c.Requests() {
		if r.Verb == "update" && r.Resource == "leases" {
			n++
		}
	}
	return n
}

// TestNoWaitAndSetClusterUser: NoWait is one attempt, even at a lease
// that looks abandoned; a lock taken before the cluster said who the user
// is records it after, and is still released cleanly.
func TestNoWaitAndSetClusterUser(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	early := alice
	early.ClusterUser = ""
	l, err := Acquire(ctx, c.Client, "web", Options{Holder: early, FieldManager: "kubectl-fleet"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetClusterUser("alice@example.com")
	for deadline := time.Now().Add(5 * time.Second); live(t, c, "web").ClusterUser == "" && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := live(t, c, "web"); got.ClusterUser != "alice@example.com" || got.HolderID != "alice@build-7 pid 4242" {
		t.Errorf("lease after SetClusterUser: %+v", got)
	}
	l.Abandon() // its holder is gone: a lease that looks abandoned
	start := time.Now()
	_, err = Acquire(ctx, c.Client, "web", Options{Holder: bob, NoWait: true, Timeout: time.Minute})
	var held *HeldError
	if !errors.As(err, &held) || time.Since(start) > 2*time.Second {
		t.Errorf("NoWait at a held lease: %v after %s, want a HeldError at once", err, time.Since(start))
	}
	l2, err := Acquire(ctx, c.Client, "api", Options{Holder: early, FieldManager: "kubectl-fleet"})
	if err != nil {
		t.Fatal(err)
	}
	l2.SetClusterUser("alice@example.com")
	if err := l2.Release(ctx); err != nil || live(t, c, "api") != nil {
		t.Errorf("release after SetClusterUser: %v, lease %+v", err, live(t, c, "api"))
	}
}

func TestLocalMachine(t *testing.T) {
	a, b := Local(time.Now()), Local(time.Now())
	if goruntime.GOOS == "linux" && (a.Machine == "" || !strings.Contains(a.Machine, "pid:[")) {
		t.Errorf("machine %q: want the boot id and the pid namespace", a.Machine)
	}
	if a.Machine != b.Machine {
		t.Errorf("machine %q, then %q", a.Machine, b.Machine)
	}
}

// TestDescribe: what unlock shows of a lock before it asks.
func TestDescribe(t *testing.T) {
	since := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	i := &Info{User: "alice", Host: "build-7", PID: "4242", ClusterUser: "ci-bot", Since: since, Renewed: since.Add(time.Minute), Duration: 2 * time.Minute}
	for _, tt := range []struct {
		now  time.Time
		want string
	}{
		{since.Add(90 * time.Second), "locked by alice@build-7 (pid 4242) since 2026-11-26T01:00:00Z (cluster user ci-bot), renewed 30s ago, expires in 90s unless renewed"},
		{since.Add(10 * time.Minute), "locked by alice@build-7 (pid 4242) since 2026-11-26T01:00:00Z (cluster user ci-bot), expired 7m ago"},
	} {
		if got := i.Describe(tt.now); got != tt.want {
			t.Errorf("at %s:\n got %s\nwant %s", tt.now, got, tt.want)
		}
	}
}

// TestLean: the lease a lock keeps has no managed fields, and the rest
// of what was read (the uid and resourceVersion a release and a renewal
// are conditioned on, the holder's annotations).
func TestLean(t *testing.T) {
	u := leaseObject(t, "web", alice, time.Now(), time.Now(), time.Minute)
	u.SetUID("u-1")
	u.SetResourceVersion("42")
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl-fleet", Operation: metav1.ManagedFieldsOperationUpdate}})
	ann := u.GetAnnotations()
	got := lean(u.DeepCopy())
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "metadata", "managedFields"); found {
		t.Error("the managed fields are kept")
	}
	if got.GetUID() != "u-1" || got.GetResourceVersion() != "42" || len(got.GetAnnotations()) != len(ann) || got.GetName() != Name("web") {
		t.Errorf("lean lost more than the managed fields: %+v", got.Object["metadata"])
	}
}
