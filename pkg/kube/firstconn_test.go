package kube

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Requests sent at once to a server not yet connected to, from any
// client of the cluster, share the first one's connection: one TLS
// handshake, not one each.
func TestFirstConnectionIsShared(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(10 * time.Millisecond)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport).Clone()
	base.ForceAttemptHTTP2 = true
	// Two clients of one cluster (as its REST config makes them: reads,
	// the identity check) share its gate and transport.
	gate := newConnGate()
	clients := []*http.Client{{Transport: gate.wrap(base)}, {Transport: gate.wrap(base)}}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			resp, err := clients[i%2].Get(srv.URL)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.ProtoMajor != 2 {
				t.Errorf("protocol %s, want HTTP/2", resp.Proto)
			}
		})
	}
	wg.Wait()
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 20 requests sent at once, want 1", n)
	}
}

// A first request that fails lets the others go: they connect themselves.
func TestFirstConnectionFailing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens
	client := &http.Client{Transport: newFirstConn(http.DefaultTransport.(*http.Transport).Clone()), Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := client.Get("http://" + addr); err == nil {
				t.Error("a request to nothing succeeded")
			}
		})
	}
	wg.Wait()
}

// blockingRT answers once released, counting the requests in flight.
type blockingRT struct {
	mu             sync.Mutex
	inFlight, peak int
	release        chan struct{}
}

func (b *blockingRT) RoundTrip(*http.Request) (*http.Response, error) {
	b.mu.Lock()
	b.inFlight++
	b.peak = max(b.peak, b.inFlight)
	b.mu.Unlock()
	<-b.release
	b.mu.Lock()
	b.inFlight--
	b.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// Clusters connect a bounded number at once, process-wide: the others'
// first requests wait for a slot, and every one gets through.
func TestConnectionsAreBounded(t *testing.T) {
	slots := make(chan struct{}, 3)
	rt := &blockingRT{release: make(chan struct{})}
	var wg sync.WaitGroup
	for range 10 {
		g := newConnGate()
		g.connecting = slots
		client := &http.Client{Transport: g.wrap(rt)}
		wg.Go(func() {
			resp, err := client.Get("http://cluster.invalid/version")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		})
	}
	time.Sleep(50 * time.Millisecond) // let every first request try
	close(rt.release)
	wg.Wait()
	if rt.peak != 3 {
		t.Errorf("%d clusters connecting at once, want 3", rt.peak)
	}
	if len(slots) != 0 {
		t.Errorf("%d slots still taken", len(slots))
	}
}
