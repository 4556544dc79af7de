package apply_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// holdSlots takes every one of the process's slots for object requests
// (kube.MaxRequests), as a thousand other clusters' applies would, and
// returns them one by one, last first; the test gives back what is left.
func holdSlots(t *testing.T) (giveOne func()) {
	var held []func()
	for range kube.MaxRequests {
		release, err := kube.TakeSlot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	t.Cleanup(func() {
		for _, release := range held {
			release()
		}
	})
	return func() { held[len(held)-1](); held = held[:len(held)-1] }
}

// patched counts the patches of the app's objects (namespace web, and
// the Namespace itself) that c answered.
func patched(c *kubetest.Cluster) int {
	n := 0
	for _, r := range c.Requests() {
		if r.Verb == "patch" && (r.Namespace == "web" || r.Resource == "namespaces" && r.Name == "web") {
			n++
		}
	}
	return n
}

func TestProcessBoundsObjectRequests(t *testing.T) {
	c := kubetest.New(t)
	objs := []*unstructured.Unstructured{ns("web"), cm("web", "a", "k=1"), cm("web", "b", "k=1"), cm("web", "c", "k=1")}
	giveOne := holdSlots(t)
	done := make(chan error, 1)
	go func() {
		done <- apply.Run(context.Background(), c.Client, apply.Config{App: "web", Version: "test", Objects: objs, Concurrency: 4, Report: func(apply.Change) {}})
	}()
	time.Sleep(200 * time.Millisecond)
	if n := patched(c); n != 0 {
		t.Fatalf("%d objects applied while the process had no slot free", n)
	}
	giveOne() // one slot: the objects go one at a time, and all of them
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("apply still waiting 10 s after a slot was given back")
	}
	if n := patched(c); n != len(objs) {
		t.Errorf("%d objects applied, want %d", n, len(objs))
	}
}

func TestInterruptedWaitingForASlot(t *testing.T) {
	c := kubetest.New(t)
	holdSlots(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- apply.Run(ctx, c.Client, apply.Config{App: "web", Version: "test", Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a", "k=1")}, Concurrency: 4, Report: func(apply.Change) {}})
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("apply: %v, want it interrupted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("apply still waiting for a slot 10 s after Ctrl-C")
	}
	if n := patched(c); n != 0 {
		t.Errorf("%d objects applied after Ctrl-C", n)
	}
}
