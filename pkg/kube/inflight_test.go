package kube

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestTakeSlotBoundsTheProcess(t *testing.T) {
	var held []func()
	t.Cleanup(func() {
		for _, release := range held {
			release()
		}
	})
	for range MaxRequests {
		release, err := TakeSlot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := TakeSlot(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slot %d: %v; want to wait until the context is done", MaxRequests+1, err)
	}
	got := make(chan error, 1)
	go func() {
		release, err := TakeSlot(context.Background())
		if err == nil {
			release()
		}
		got <- err
	}()
	held[0]()
	held[0]() // released twice gives back one slot
	if err := <-got; err != nil {
		t.Fatalf("slot after one was given back: %v", err)
	}
	if len(inFlight) != MaxRequests-1 {
		t.Errorf("%d slots taken, want %d: a release given twice gave back two", len(inFlight), MaxRequests-1)
	}
}

func TestSlotsBoundTheCluster(t *testing.T) {
	s := NewSlots(1)
	release, err := s.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Take(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second slot of a cluster with --concurrency 1: %v; want to wait", err)
	}
	release()
	if len(inFlight) != 0 {
		t.Errorf("%d process slots still taken after the release", len(inFlight))
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := s.Take(done); err == nil {
		t.Error("a slot taken after Ctrl-C, with both free")
	}
	if len(inFlight) != 0 || len(s.cluster) != 0 {
		t.Errorf("slots left taken by a refused Take: process %d, cluster %d", len(inFlight), len(s.cluster))
	}
}

// TestSlotsEach: every item runs, never more than the cluster's bound at
// once; none starts once the context is done.
func TestSlotsEach(t *testing.T) {
	var running, most atomic.Int32
	ran := make([]bool, 50)
	started := NewSlots(4).Each(context.Background(), len(ran), func(i int) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(time.Millisecond)
		ran[i] = true
		running.Add(-1)
	})
	if started != 50 || slices.Contains(ran, false) || most.Load() > 4 {
		t.Errorf("started %d, ran %v, %d at once at most", started, ran, most.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	started = NewSlots(1).Each(ctx, 10, func(i int) {
		calls++
		if i == 2 {
			cancel()
		}
	})
	if started != 3 || calls != 3 {
		t.Errorf("after the cancel: started %d, %d calls, want 3", started, calls)
	}
}
