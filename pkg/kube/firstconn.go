package kube

import (
	"net/http"
	"net/http/httptrace"
	"sync"
)

// firstConn lets a client's first request connect alone: the requests
// sent with it wait until it has its connection, then share it. Go's
// transport learns that a server speaks HTTP/2 only once a TLS handshake
// is done, so N requests sent at once to a server not yet connected to
// would each open a connection of their own, N handshakes of which all
// but one are thrown away (at 1,000 clusters, 5 handshakes each made
// diff's time out). Once connected, requests go through untouched.
// The gate is the cluster's, shared by every HTTP client made from its
// REST config (reads, writes, the identity check), since they share the
// transport underneath too.
type firstConn struct {
	rt   http.RoundTripper
	gate *connGate
}

// connGate is one cluster's: its first request, and when it connected.
type connGate struct {
	once  sync.Once
	ready chan struct{}
	close sync.Once
	// connecting are the slots of the first requests connecting at once,
	// shared by every cluster's gate (handshakes).
	connecting chan struct{}
}

// handshakes bounds the clusters connecting at once, process-wide. A
// thousand clusters' first requests sent at once each start a TLS
// handshake, which a machine of a few cores may not finish within
// client-go's 10 s, each then retried, the CPU spent on them spent for
// nothing. Waiting here costs nothing; 128 at once connect 1,000
// clusters 50 ms away in about a second. (The handshakes the scaling
// run saw abandoned, one or two per cluster, were another cause's:
// ownTransport.)
var handshakes = make(chan struct{}, 128)

func newConnGate() *connGate { return &connGate{ready: make(chan struct{}), connecting: handshakes} }

func (g *connGate) wrap(rt http.RoundTripper) http.RoundTripper { return &firstConn{rt: rt, gate: g} }

func newFirstConn(rt http.RoundTripper) *firstConn { return &firstConn{rt: rt, gate: newConnGate()} }

func (f *firstConn) RoundTrip(req *http.Request) (*http.Response, error) {
	g := f.gate
	first := false
	g.once.Do(func() { first = true })
	if !first {
		select {
		case <-g.ready:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		return f.rt.RoundTrip(req)
	}
	// Whatever becomes of the first request, the others wait no longer.
	defer g.connected()
	if err := take(req.Context(), g.connecting); err != nil {
		return nil, err
	}
	var freed sync.Once
	free := func() { freed.Do(func() { <-g.connecting }) }
	defer free()
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { free(); g.connected() }}
	return f.rt.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
}

func (g *connGate) connected() { g.close.Do(func() { close(g.ready) }) }

// WrappedRoundTripper lets client-go close the idle connections of the
// transport underneath (utilnet.CloseIdleConnectionsFor).
func (f *firstConn) WrappedRoundTripper() http.RoundTripper { return f.rt }
