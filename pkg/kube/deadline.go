package kube

import (
	"context"
	"io"
	"net/http"
	"time"
)

// deadline bounds each request through rt by d (--request-timeout), on
// the request's context, from the moment it is sent until its answer's
// body is closed. That is what http.Client.Timeout does, but Go's client
// does it so only for its own transports: for any other (client-go wraps
// every transport, for auth and the user agent) it starts a goroutine
// per request to wait for the timer, and the transport another to watch
// the request's legacy Cancel channel. At 1,000 clusters at once those
// were 2,900 of the 10,000 goroutines a create held at its peak. A
// request whose context ends sooner keeps its own deadline.
type deadline struct {
	rt http.RoundTripper
	d  time.Duration
}

// withDeadline moves hc's Timeout to a deadline on each request's
// context (deadline); client-go's requests then send no timeout of their
// own to the server, which bounds them by its own (a minute) besides.
func withDeadline(hc *http.Client) {
	if hc.Timeout > 0 {
		hc.Transport, hc.Timeout = &deadline{rt: hc.Transport, d: hc.Timeout}, 0
	}
}

func (t *deadline) RoundTrip(req *http.Request) (*http.Response, error) {
	at := time.Now().Add(t.d)
	if d, ok := req.Context().Deadline(); ok && d.Before(at) {
		return t.rt.RoundTrip(req)
	}
	ctx, cancel := context.WithDeadline(req.Context(), at)
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// WrappedRoundTripper lets client-go close the idle connections of the
// transport underneath (utilnet.CloseIdleConnectionsFor).
func (t *deadline) WrappedRoundTripper() http.RoundTripper { return t.rt }

// cancelOnClose is an answer's body that ends its request's context once
// closed, as Go's client does for its Timeout: not when read to its end,
// which raced with the HTTP/2 transport's own end of the stream, reset it
// and kept its connection busy with a ping past the cluster's
// CloseIdleConnections (the reconcile soak's connections grew by one
// every other pass).
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
