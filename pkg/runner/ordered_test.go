package runner

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

func TestOrderedEmitsInOrder(t *testing.T) {
	// All n start at once, then finish last first: index i finishes only
	// after i+1 has.
	const n = 8
	var all sync.WaitGroup
	all.Add(n)
	finished := make([]chan struct{}, n+1)
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	close(finished[n])
	var mu sync.Mutex
	var order, emitted []int
	err := Ordered(context.Background(), n, n, n, func(_ context.Context, i int) int {
		all.Done()
		all.Wait()
		<-finished[i+1]
		mu.Lock()
		order = append(order, i)
		mu.Unlock()
		close(finished[i])
		return i * 10
	}, func(i, v int) error {
		if v != i*10 {
			t.Errorf("emit(%d, %d): wrong value", i, v)
		}
		emitted = append(emitted, i)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []int{7, 6, 5, 4, 3, 2, 1, 0}) {
		t.Fatalf("work finished in order %v", order)
	}
	if !slices.Equal(emitted, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("emitted %v", emitted)
	}
}

func TestOrderedWindow(t *testing.T) {
	// Index 0 is slow: it finishes only once the window is full, and the
	// others must not run further ahead than the window.
	const n, parallel, window = 50, 3, 5
	var mu sync.Mutex
	full := sync.NewCond(&mu)
	started, emitted, most := 0, 0, 0
	err := Ordered(context.Background(), n, parallel, window, func(_ context.Context, i int) int {
		mu.Lock()
		defer mu.Unlock()
		started++
		full.Broadcast()
		if ahead := started - emitted; ahead > most {
			most = ahead
		}
		for i == 0 && started < window {
			full.Wait()
		}
		return i
	}, func(i, _ int) error {
		mu.Lock()
		emitted++
		mu.Unlock()
		return nil
	})
	if err != nil || emitted != n {
		t.Fatalf("%d emitted, %v", emitted, err)
	}
	if most != window {
		t.Errorf("at most %d started and not emitted at once; the window is %d", most, window)
	}
}

func TestOrderedStopsOnEmitError(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	started := 0
	var emitted []int
	err := Ordered(context.Background(), 100, 2, 4, func(_ context.Context, i int) int {
		mu.Lock()
		started++
		mu.Unlock()
		return i
	}, func(i, _ int) error {
		emitted = append(emitted, i)
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if !slices.Equal(emitted, []int{0, 1, 2, 3}) {
		t.Errorf("emitted %v after the error", emitted)
	}
	if started > 3+4 {
		t.Errorf("%d started: work went on after emit failed", started)
	}
}

func TestOrderedStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var emitted []int
	err := Ordered(ctx, 100, 2, 4, func(_ context.Context, i int) int {
		if i == 5 {
			cancel()
		}
		return i
	}, func(i, _ int) error {
		emitted = append(emitted, i)
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if len(emitted) > 5 || !slices.Equal(emitted, []int{0, 1, 2, 3, 4}[:len(emitted)]) {
		t.Errorf("emitted %v", emitted)
	}
}

func TestOrderedNothing(t *testing.T) {
	err := Ordered(context.Background(), 0, 2, 4, func(context.Context, int) int {
		t.Error("work called")
		return 0
	}, func(int, int) error {
		t.Error("emit called")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
