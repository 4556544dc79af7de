// Package memo runs a function once per key, for concurrent callers: the
// first caller of a key computes, the others wait for its result.
package memo

import (
	"sync"
	"sync/atomic"
)

// Memo caches one result per key. The zero value is ready to use.
type Memo[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*entry[V]
}

type entry[V any] struct {
	once sync.Once
	done atomic.Bool
	val  V
	err  error
}

// Do returns fn's result for key, running fn only the first time.
func (m *Memo[K, V]) Do(key K, fn func() (V, error)) (V, error) {
	m.mu.Lock()
	if m.m == nil {
		m.m = map[K]*entry[V]{}
	}
	e, ok := m.m[key]
	if !ok {
		e = &entry[V]{}
		m.m[key] = e
	}
	m.mu.Unlock()
	e.once.Do(func() {
		e.val, e.err = fn()
		e.done.Store(true)
	})
	return e.val, e.err
}

// Peek returns key's value when it was computed without error, and never
// computes it.
func (m *Memo[K, V]) Peek(key K) (V, bool) {
	m.mu.Lock()
	e, ok := m.m[key]
	m.mu.Unlock()
	if !ok || !e.done.Load() || e.err != nil {
		var zero V
		return zero, false
	}
	return e.val, true
}

// Len is how many keys have been asked for.
func (m *Memo[K, V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// Reset forgets every result: the next Do of a key runs its function
// again. Callers still waiting for a result get it.
func (m *Memo[K, V]) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m = nil
}
