package memo

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestDoOncePerKey(t *testing.T) {
	var m Memo[string, int]
	var calls atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []string{"a", "b"}[i%2]
			v, err := m.Do(key, func() (int, error) { calls.Add(1); return len(key), nil })
			if err != nil || v != 1 {
				t.Errorf("Do(%s) = %d, %v", key, v, err)
			}
		}()
	}
	wg.Wait()
	if calls.Load() != 2 || m.Len() != 2 {
		t.Errorf("%d calls, %d keys; want 2, 2", calls.Load(), m.Len())
	}
}

func TestReset(t *testing.T) {
	var m Memo[string, int]
	n := 0
	fn := func() (int, error) { n++; return n, nil }
	if v, _ := m.Do("a", fn); v != 1 {
		t.Fatalf("first Do = %d", v)
	}
	if v, _ := m.Do("a", fn); v != 1 {
		t.Fatalf("second Do = %d, want the first result", v)
	}
	m.Reset()
	if v, _ := m.Do("a", fn); v != 2 || m.Len() != 1 {
		t.Errorf("Do after Reset = %d (len %d), want a new run", v, m.Len())
	}
}

func TestPeek(t *testing.T) {
	var m Memo[string, int]
	if _, ok := m.Peek("a"); ok {
		t.Error("a value never computed")
	}
	_, _ = m.Do("a", func() (int, error) { return 1, nil })
	_, _ = m.Do("b", func() (int, error) { return 0, errors.New("boom") })
	if v, ok := m.Peek("a"); !ok || v != 1 {
		t.Errorf("Peek(a) = %d, %v", v, ok)
	}
	if _, ok := m.Peek("b"); ok {
		t.Error("a failed computation peeked")
	}
}
