package rollout

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/lock"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// A cluster's locks go as soon as its work is over (releaseCluster), the
// others' stay held until theirs is, or the command ends (Release).
func TestReleaseCluster(t *testing.T) {
	ctx := context.Background()
	a, b := kubetest.New(t), kubetest.New(t)
	var l Locks
	for name, c := range map[string]*kubetest.Cluster{"a": a, "b": b} {
		for _, app := range []string{"web", "db"} {
			if err := l.Acquire(ctx, c.Client, name, app, app, false, func(Event) {}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	held := func(c *kubetest.Cluster, app string) bool {
		info, err := lock.Get(ctx, c.Client, app)
		if err != nil {
			t.Fatal(err)
		}
		return info != nil
	}
	var errOut bytes.Buffer
	l.releaseCluster(ctx, "a", &errOut)
	if held(a, "web") || held(a, "db") || !held(b, "web") || !held(b, "db") {
		t.Errorf("after a's work: a web %v db %v, b web %v db %v", held(a, "web"), held(a, "db"), held(b, "web"), held(b, "db"))
	}
	l.Release(ctx, &errOut)
	if held(b, "web") || held(b, "db") || errOut.Len() > 0 {
		t.Errorf("after the command: b web %v db %v; %s", held(b, "web"), held(b, "db"), errOut.String())
	}
}

// TestEarlyLocks: a lock Early took is the one Acquire hands over (one
// lease created, none taken twice); one never used goes with its
// cluster's work, or with the command, after Ctrl-C too; an attempt that
// found the lock held leaves Acquire to say so the usual way.
func TestEarlyLocks(t *testing.T) {
	ctx := context.Background()
	a, b := kubetest.New(t), kubetest.New(t)
	var l Locks
	held := func(c *kubetest.Cluster, app string) bool {
		info, err := lock.Get(ctx, c.Client, app)
		if err != nil {
			t.Fatal(err)
		}
		return info != nil
	}
	creates := func(c *kubetest.Cluster) int {
		n := 0
		for _, r := range c.Requests() {
			if r.Resource == "leases" && r.Verb == "create" {
				n++
			}
		}
		return n
	}
	if err := a.Client.EnsureNamespace(ctx, lock.Namespace, "test"); err != nil {
		t.Fatal(err)
	}
	if err := b.Client.EnsureNamespace(ctx, lock.Namespace, "test"); err != nil {
		t.Fatal(err)
	}
	other := lock.Holder{User: "bob", Host: "laptop", PID: 7, Started: time.Now()}
	theirs, err := lock.Acquire(ctx, b.Client, "web", lock.Options{Holder: other})
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Release(ctx)

	l.Early(ctx, a.Client, "a", []string{"web", "db"})
	l.Early(ctx, b.Client, "b", []string{"web"})
	if err := l.Acquire(ctx, a.Client, "a", "web", "web", false, func(Event) {}, nil); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !held(a, "db") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // db's attempt is its own
	}
	if n := creates(a); n != 2 || !held(a, "web") || !held(a, "db") {
		t.Errorf("a: %d leases created, web held %v, db held %v; want 2, both held", n, held(a, "web"), held(a, "db"))
	}
	err = l.Acquire(ctx, b.Client, "b", "web", "web", false, func(Event) {}, nil)
	if err == nil || !strings.Contains(err.Error(), "locked by bob@laptop") {
		t.Errorf("b, held by another: %v", err)
	}

	// An Early that comes after Acquire asked takes nothing.
	c := kubetest.New(t)
	if err = l.Acquire(ctx, c.Client, "c", "web", "web", false, func(Event) {}, nil); err != nil {
		t.Fatal(err)
	}
	before := creates(c)
	l.Early(ctx, c.Client, "c", []string{"web"})
	time.Sleep(100 * time.Millisecond) // an attempt would be sent by now
	if n := creates(c); n != before {
		t.Errorf("c: Early after Acquire sent %d lease creates, want none", n-before)
	}

	var errOut bytes.Buffer
	l.releaseCluster(ctx, "a", &errOut)
	if held(a, "web") || held(a, "db") {
		t.Errorf("after a's work: web held %v, db (never used) held %v", held(a, "web"), held(a, "db"))
	}
	// Ctrl-C before the rollout: the locks taken early go all the same.
	l.Early(ctx, a.Client, "a", []string{"api"})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	l.Release(cancelled, &errOut)
	if held(a, "api") || errOut.Len() > 0 {
		t.Errorf("after Ctrl-C: api held %v; %s", held(a, "api"), errOut.String())
	}
	// An Early after the command's end (a render that failed before the
	// cluster answered) takes nothing.
	before = creates(b)
	l.Early(ctx, b.Client, "b", []string{"late"})
	time.Sleep(100 * time.Millisecond)
	if n := creates(b); n != before || held(b, "late") {
		t.Errorf("Early after Release: %d lease creates, held %v", n-before, held(a, "late"))
	}
}

// holding holds a cluster's server-side applies of the object named
// name (through its metadata client, as apply.Run sends them), once sent,
// until release is closed or their context ends; sent gets each held
// apply's context.
type holding struct {
	metadata.Interface
	name    string
	sent    chan context.Context
	release chan struct{}
}

type holdingGetter struct {
	metadata.Getter
	h holding
}

type holdingNamespace struct {
	metadata.ResourceInterface
	h holding
}

func (h holding) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return holdingGetter{h.Interface.Resource(gvr), h}
}

func (g holdingGetter) Namespace(ns string) metadata.ResourceInterface {
	return holdingNamespace{g.Getter.Namespace(ns), g.h}
}

func (r holdingNamespace) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	if name == r.h.name {
		r.h.sent <- ctx
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-r.h.release:
		}
	}
	return r.ResourceInterface.Patch(ctx, name, pt, data, opts, sub...)
}

// leaseOf is the lease of app, to remove it as `kubectl fleet unlock`
// would.
func leaseOf(app string) *unstructured.Unstructured {
	return kubetest.Object("coordination.k8s.io/v1", "Lease", lock.Namespace, lock.Name(app))
}

// TestLostLockAbortsRequestsInFlight: a lock lost while a write of its
// cluster is in flight cancels that write (apply.Run's requests end with
// the cluster's Writes when a lost lock ends them), instead of letting it
// go on for up to --request-timeout while another run may hold the lock;
// Ctrl-C still lets a write in flight finish.
func TestLostLockAbortsRequestsInFlight(t *testing.T) {
	c := kubetest.New(t)
	h := holding{Interface: c.Client.Metadata, name: "held", sent: make(chan context.Context, 1), release: make(chan struct{})}
	c.Client.Metadata = h
	objs := func(ns string) []*unstructured.Unstructured {
		n := kubetest.Object("v1", "Namespace", "", ns)
		cm := kubetest.Object("v1", "ConfigMap", ns, "held")
		cm.Object["data"] = map[string]any{"k": "v"}
		return []*unstructured.Unstructured{n, cm}
	}
	run := func(ctx context.Context, app string) chan error {
		done := make(chan error, 1)
		go func() {
			done <- apply.Run(ctx, c.Client, apply.Config{App: app, Version: "test", Objects: objs(app), Concurrency: 4, Report: func(apply.Change) {}})
		}()
		return done
	}
	var (
		l      = Locks{Duration: time.Second}
		errOut bytes.Buffer
	)
	defer l.Release(context.Background(), &errOut)
	writes := l.Writes(context.Background(), "a")
	if err := l.Acquire(writes, c.Client, "a", "web", "web", false, func(Event) {}, nil); err != nil {
		t.Fatal(err)
	}
	done := run(writes, "web")
	var inFlight context.Context
	select {
	case inFlight = <-h.sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the patch was never sent")
	}
	c.Remove(leaseOf("web")) // unlock: the next renewal (within 333ms) finds it gone
	select {
	case err := <-done:
		if err == nil {
			t.Error("the apply succeeded without its lock")
		}
	case <-time.After(5 * time.Second):
		close(h.release)
		t.Fatal("the patch in flight went on after the lock was lost")
	}
	if cause := context.Cause(inFlight); !errors.Is(cause, apply.ErrAbort) || lostLock(writes) == nil || !strings.Contains(cause.Error(), "lost the lock: lock of app web lost") {
		t.Errorf("the patch in flight ended with %v; the cluster's writes with %v", cause, context.Cause(writes))
	}

	// Ctrl-C: nothing new starts, but what was sent finishes.
	interrupted, cancel := context.WithCancel(context.Background())
	writes = l.Writes(interrupted, "b")
	if err := l.Acquire(writes, c.Client, "b", "api", "api", false, func(Event) {}, nil); err != nil {
		t.Fatal(err)
	}
	done = run(writes, "api")
	select {
	case inFlight = <-h.sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the patch was never sent")
	}
	cancel()
	time.Sleep(100 * time.Millisecond)
	if err := inFlight.Err(); err != nil {
		t.Errorf("Ctrl-C cancelled the patch in flight: %v", err)
	}
	close(h.release)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("apply after Ctrl-C: %v", err)
	}
	if c.Live(kubetest.Object("v1", "ConfigMap", "api", "held")) == nil {
		t.Error("the patch in flight at Ctrl-C did not finish")
	}
}

// TestLockLostDuringSoak: a cluster's locks cover its soak. One lost
// meanwhile stops the soak at once, says so, and tells Ended with the
// cluster's Writes ended by the lost lock, so that neither its verdict
// nor an --atomic restore is written; its locks then go.
func TestLockLostDuringSoak(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	var (
		l      = Locks{Duration: time.Second}
		errOut bytes.Buffer
		gates  gateSet
		mu     sync.Mutex
		events []Event
	)
	defer l.Release(ctx, &errOut)
	if err := l.Acquire(l.Writes(ctx, "a"), c.Client, "a", "web", "web", false, func(Event) {}, nil); err != nil {
		t.Fatal(err)
	}
	var endedIn context.Context
	released := make(chan struct{})
	s := soakRun{
		Duration: time.Minute, Interval: 10 * time.Millisecond,
		Health: func(context.Context, string) error { return nil },
		Gates:  func(string) *gateSet { return &gates },
		Emit: func(ev Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
		},
		Ended: func(ctx context.Context, _ string, err error) error {
			endedIn = ctx
			return err
		},
		Writes: l.Writes,
		Release: func(ctx context.Context, cluster string) {
			l.releaseCluster(ctx, cluster, &errOut)
			close(released)
		},
	}
	done := make(chan map[string]error, 1)
	go func() { done <- s.Run(ctx, []string{"a"}) }()
	time.Sleep(100 * time.Millisecond)
	c.Remove(leaseOf("web"))
	var errs map[string]error
	select {
	case errs = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the soak went on after its lock was lost")
	}
	if err := errs["a"]; err == nil || !strings.HasPrefix(err.Error(), "soak stopped with ") || !strings.Contains(err.Error(), "lost the lock: lock of app web lost: lease kubectl-fleet/fleet-web was taken over or deleted while held") {
		t.Errorf("the soak's error: %v", err)
	}
	if endedIn == nil || lostLock(endedIn) == nil {
		t.Errorf("Ended was not told in the cluster's Writes, ended by the lost lock")
	}
	mu.Lock()
	said := slices.ContainsFunc(events, func(ev Event) bool {
		s, ok := ev.(SoakEvent)
		return ok && s.State == "failed" && strings.HasPrefix(s.Error, "lost the lock: ")
	})
	mu.Unlock()
	if !said {
		t.Errorf("no soak event says the lock was lost: %v", events)
	}
	if v := gates.Verdict("web"); v.State == revision.Verified {
		t.Errorf("verdict after a soak stopped by a lost lock: %+v", v)
	}
	select {
	case <-released:
	default:
		t.Error("the cluster's locks were not released after its soak")
	}
	if l.Writes(ctx, "a").Err() != nil {
		t.Error("the cluster's Writes outlived its release")
	}
}
