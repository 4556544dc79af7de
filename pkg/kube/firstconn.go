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
type firstConn struct {
	rt    http.RoundTripper
	once  sync.Once
	ready chan struct{}
	close sync.Once
}

func newFirstConn(rt http.RoundTripper) *firstConn {
	return &firstConn{rt: rt, ready: make(chan struct{})}
}

func (f *firstConn) RoundTrip(req *http.Request) (*http.Response, error) {
	first := false
	f.once.Do(func() { first = true })
	if !first {
		select {
		case <-f.ready:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		return f.rt.RoundTrip(req)
	}
	// Whatever becomes of the first request, the others wait no longer.
	defer f.connected()
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { f.connected() }}
	return f.rt.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
}

func (f *firstConn) connected() { f.close.Do(func() { close(f.ready) }) }

// WrappedRoundTripper lets client-go close the idle connections of the
// transport underneath (utilnet.CloseIdleConnectionsFor).
func (f *firstConn) WrappedRoundTripper() http.RoundTripper { return f.rt }
