package rollout

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/lock"
)

// A cluster's locks go as soon as its work is over (ReleaseCluster), the
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
	l.ReleaseCluster(ctx, "a", &errOut)
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
	l.ReleaseCluster(ctx, "a", &errOut)
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
