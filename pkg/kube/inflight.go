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

// inFlight is the process's bound on requests in flight (MaxRequests).
var inFlight = newLimiter(MaxRequests)

// limiter is a counting semaphore whose waits end with the request's
// context.
type limiter struct{ slots chan struct{} }

func newLimiter(n int) *limiter { return &limiter{slots: make(chan struct{}, n)} }

func (l *limiter) acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *limiter) release() { <-l.slots }

// TakeSlot takes one of the process's slots for requests in flight
// (MaxRequests), waiting until one is free or ctx is done, for work that
// sends its requests one after another (one object's apply). release
// gives it back. Taking it before starting the goroutine that sends them
// bounds the goroutines too. Work that holds a slot must never wait for
// another.
func TakeSlot(ctx context.Context) (release func(), err error) {
	if err := inFlight.acquire(ctx); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(inFlight.release) }, nil
}
