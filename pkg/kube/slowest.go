package kube

import (
	"net/http"
	"sync/atomic"
	"time"
)

// slowest is the longest a cluster took to answer a request, so far.
type slowest struct{ d atomic.Int64 }

func (s *slowest) observe(d time.Duration) {
	for {
		cur := s.d.Load()
		if int64(d) <= cur || s.d.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

func (s *slowest) wrap(rt http.RoundTripper) http.RoundTripper { return &timed{rt: rt, s: s} }

// timed is the RoundTripper that times each request to its answer's
// headers (connecting included), for slowest. A request that got no
// answer is not counted: a cluster that stopped answering has no
// latency to wait for.
type timed struct {
	rt http.RoundTripper
	s  *slowest
}

func (t *timed) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.rt.RoundTrip(req)
	if err == nil {
		t.s.observe(time.Since(start))
	}
	return resp, err
}

// WrappedRoundTripper lets client-go close the idle connections of the
// transport underneath (utilnet.CloseIdleConnectionsFor).
func (t *timed) WrappedRoundTripper() http.RoundTripper { return t.rt }

// Slowest is the longest the cluster took to answer one of this client's
// requests so far (0 before any answer): how long a last write (a lock's
// release, a verdict) may be given on a cluster that is slow but
// answering (WriteTimeout).
func (c *Client) Slowest() time.Duration {
	if c == nil || c.slowest == nil {
		return 0
	}
	return time.Duration(c.slowest.d.Load())
}

// WriteTimeout bounds a last write to a cluster whose work is over (a
// lock's release, a verdict): short, so that a cluster that stopped
// answering does not hold the command's exit, its lock then expiring on
// its own; but three times the slowest answer the cluster gave, up to
// MaxWriteTimeout, when it is slow but answering (its releases timed out
// at 300 clusters on two cores, and the next run waited for the locks
// they left).
func WriteTimeout(c *Client) time.Duration {
	return min(max(MinWriteTimeout, 3*c.Slowest()), MaxWriteTimeout)
}

// The bounds of WriteTimeout.
const (
	MinWriteTimeout = 3 * time.Second
	MaxWriteTimeout = 15 * time.Second
)
