package kube

import (
	"context"
	"sync"
)

// MaxRequests bounds the object requests (applies, dry runs) in flight
// to all clusters at once, from one process. Each cluster has its own
// bound (--concurrency, and client-go's rate limit), but a thousand
// clusters at once times 32 requests each would queue tens of thousands
// of requests on the servers and the machine, where every one waits so
// long that TLS handshakes, lock renewals and request timeouts run out,
// and would hold a goroutine and its buffers each. Past this bound they
// wait here, before their goroutine starts. It is above what ten
// clusters at 32 requests each send, so that fleets of a few clusters
// never wait for it. A cluster's few reads and its lock's requests are
// not bounded here.
const MaxRequests = 1024

// inFlight is the process's slots for object requests (MaxRequests).
var inFlight = make(chan struct{}, MaxRequests)

// take waits for a slot of slots until ctx is done.
func take(ctx context.Context, slots chan struct{}) error {
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TakeSlot takes one of the process's slots for object requests
// (MaxRequests), waiting until one is free or ctx is done. release gives
// it back, once however often it is called. Work that holds a slot must
// never wait for another.
func TakeSlot(ctx context.Context) (release func(), err error) {
	if err := take(ctx, inFlight); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { <-inFlight }) }, nil
}

// Slots bound one cluster's object requests (its --concurrency) inside
// the process's (MaxRequests), for work that sends one object's requests
// one after another.
type Slots struct{ cluster chan struct{} }

// NewSlots are the slots of a cluster that sends n object requests at
// once at most (1 when n is less).
func NewSlots(n int) *Slots { return &Slots{cluster: make(chan struct{}, max(1, n))} }

// Take waits for one of the cluster's slots and then one of the
// process's; taken before the goroutine that uses them, it bounds the
// goroutines too (a thousand clusters at once do not start 32 each to
// wait). It fails once ctx is done, even with both slots free: nothing may
// start then (Ctrl-C; TestFaultInterruptStopsRequests).
func (s *Slots) Take(ctx context.Context) (release func(), err error) {
	if err := take(ctx, s.cluster); err != nil {
		return nil, err
	}
	process, err := TakeSlot(ctx)
	if err != nil {
		<-s.cluster
		return nil, err
	}
	release = func() { process(); <-s.cluster }
	if err := ctx.Err(); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// Each runs fn(0), …, fn(n-1), each in a goroutine of its own under one of
// the cluster's slots and one of the process's (Take), and waits for them:
// the one fan-out of a cluster's object requests. It starts none once ctx
// is done, and returns how many it started; fn gets its own context for
// its requests.
func (s *Slots) Each(ctx context.Context, n int, fn func(i int)) (started int) {
	var wg sync.WaitGroup
	for i := range n {
		release, err := s.Take(ctx)
		if err != nil {
			break
		}
		started++
		wg.Go(func() {
			defer release()
			fn(i)
		})
	}
	wg.Wait()
	return started
}
