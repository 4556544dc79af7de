package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Mode is how a FaultProxy treats requests.
type Mode int

// The modes.
const (
	// Up forwards every request.
	Up Mode = iota
	// Down is a server that died: in-flight requests are aborted, every
	// connection is closed, and new connections are refused.
	Down
	// Hung is a server that accepts connections and never answers: TLS
	// and HTTP/2 pings still work, requests are held until Restore.
	Hung
)

func (m Mode) String() string {
	switch m {
	case Down:
		return "down"
	case Hung:
		return "hung"
	}
	return "up"
}

// Request is one request a FaultProxy received.
type Request struct {
	At     time.Time
	Method string
	Path   string
	// Mode is how the request was treated.
	Mode Mode
	// Forwarded is when the request was sent on to the API server: zero
	// for a request aborted (Down, or held until its client gave up).
	Forwarded time.Time
}

func (r Request) String() string {
	return fmt.Sprintf("%s %s %s (%s)", r.At.Format("15:04:05.000"), r.Method, r.Path, r.Mode)
}

// FaultProxy is an HTTPS reverse proxy on loopback in front of one API
// server, which a test breaks on demand so that a fault happens at a
// chosen point of a command: it cuts every connection and refuses new
// ones (a server that died), or accepts and never answers (a hung
// server), now or after a given number of matching requests, and it logs
// every request it receives. It terminates TLS with a self-signed
// certificate (point an insecure kubeconfig cluster at URL) and forwards
// requests with their Authorization and impersonation headers.
type FaultProxy struct {
	// URL is the proxy's https:// address.
	URL string

	addr    string
	srv     *http.Server
	forward *httputil.ReverseProxy

	mu      sync.Mutex
	mode    Mode
	ln      net.Listener // nil while Down
	conns   map[net.Conn]bool
	release chan struct{} // closed to let held requests go
	held    int
	trigger *trigger
	log     []Request
	// failGV is a group version whose discovery fails (FailDiscovery).
	failGV  string
	closed  bool
	serving sync.WaitGroup
}

type trigger struct {
	after int
	match func(*http.Request) bool
	then  Mode
}

// NewFaultProxy starts a proxy, Up, in front of the API server at target
// (an https:// URL).
func NewFaultProxy(target string) (*FaultProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{addr: ln.Addr().String(), conns: map[net.Conn]bool{}, release: make(chan struct{})}
	p.URL = "https://" + p.addr
	p.forward = &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1, // watches stream
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback test bed
			ForceAttemptHTTP2: true,
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{
		Handler:   p,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		ErrorLog:  log.New(io.Discard, "", 0),
		ConnState: p.track,
	}
	p.serve(ln)
	return p, nil
}

func (p *FaultProxy) serve(ln net.Listener) {
	p.ln = ln
	p.serving.Add(1)
	go func() {
		defer p.serving.Done()
		_ = p.srv.ServeTLS(ln, "", "")
	}()
}

func (p *FaultProxy) track(c net.Conn, s http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch s {
	case http.StateNew:
		if p.mode == Down || p.closed {
			_ = c.Close()
			return
		}
		p.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
	}
}

// ServeHTTP logs the request and treats it as the mode says.
func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if t := p.trigger; t != nil && t.match(r) {
		if t.after == 0 {
			p.trigger = nil
			p.setLocked(t.then)
		} else {
			t.after--
		}
	}
	mode, release, failGV := p.mode, p.release, p.failGV
	i := len(p.log)
	p.log = append(p.log, Request{At: time.Now(), Method: r.Method, Path: r.URL.Path, Mode: mode})
	if mode == Hung {
		p.held++
	}
	p.mu.Unlock()
	switch mode {
	case Down:
		panic(http.ErrAbortHandler) // the connection is dropped
	case Hung:
		select {
		case <-release:
		case <-r.Context().Done():
		}
		p.mu.Lock()
		p.held--
		down := p.mode == Down || p.closed
		p.mu.Unlock()
		if r.Context().Err() != nil || down {
			panic(http.ErrAbortHandler)
		}
	}
	if failGV != "" {
		switch r.URL.Path {
		case "/apis/" + failGV:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server is currently unable to handle the request","reason":"ServiceUnavailable","code":503}`)
			return
		case "/api", "/apis":
			// Not aggregated: the client asks each group version.
			r.Header.Set("Accept", "application/json")
		}
	}
	p.mu.Lock()
	p.log[i].Forwarded = time.Now()
	p.mu.Unlock()
	p.forward.ServeHTTP(w, r)
}

// FailDiscovery makes discovery of group version gv ("group/version")
// fail with 503, as it does while an aggregated API server is down; /api
// and /apis are then served unaggregated, so that a client asks each
// group version, and only that one fails. "" serves it again.
func (p *FaultProxy) FailDiscovery(gv string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failGV = gv
}

// After lets n requests that match (nil: any) pass, and switches the
// proxy to mode at the next matching one, which is then treated as mode
// says: with Down it is aborted, with Hung it is held.
func (p *FaultProxy) After(n int, match func(*http.Request) bool, mode Mode) {
	if match == nil {
		match = func(*http.Request) bool { return true }
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trigger = &trigger{after: n, match: match, then: mode}
}

// Cut switches to Down: in-flight requests are aborted, connections
// closed, new connections refused.
func (p *FaultProxy) Cut() { p.set(Down) }

// Hang switches to Hung: requests are accepted and never answered.
func (p *FaultProxy) Hang() { p.set(Hung) }

// Restore switches back to Up: the port accepts connections again, and
// held requests are forwarded.
func (p *FaultProxy) Restore() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("the proxy is closed")
	}
	if p.ln == nil {
		// The same port again, as a restarted server would have it.
		var (
			ln  net.Listener
			err error
		)
		for i := 0; i < 50; i++ {
			if ln, err = net.Listen("tcp", p.addr); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("listening on %s again: %w", p.addr, err)
		}
		p.serve(ln)
	}
	p.trigger = nil
	p.setLocked(Up)
	return nil
}

func (p *FaultProxy) set(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(m)
}

func (p *FaultProxy) setLocked(m Mode) {
	p.mode = m
	if m != Hung {
		close(p.release)
		p.release = make(chan struct{})
	}
	if m == Down {
		if p.ln != nil {
			_ = p.ln.Close()
			p.ln = nil
		}
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

// Mode returns the proxy's mode.
func (p *FaultProxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Held is how many requests are being held (Hung).
func (p *FaultProxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// WaitHeld waits until at least n requests are held, or ctx ends.
func (p *FaultProxy) WaitHeld(ctx context.Context, n int) error {
	for p.Held() < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d held requests (%d held): %w", n, p.Held(), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// Requests returns the requests received so far, in order of arrival.
func (p *FaultProxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.log...)
}

// Close stops the proxy; held requests are aborted.
func (p *FaultProxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.setLocked(Down)
	p.mu.Unlock()
	p.serving.Wait()
}

// selfSigned makes a certificate for 127.0.0.1.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "fault-proxy"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// WriteKubeconfig writes a kubeconfig at path with a context per entry of
// contexts (context name → server URL, such as a FaultProxy's), each
// with the admin token and the given namespace (may be "").
func (e *Env) WriteKubeconfig(path string, contexts map[string]ContextSpec) error {
	cfg := clientcmdapi.NewConfig()
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: e.Token}
	for name, spec := range contexts {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: spec.Server, InsecureSkipTLSVerify: true}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "admin", Namespace: spec.Namespace}
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// ContextSpec is one context of WriteKubeconfig.
type ContextSpec struct {
	Server    string
	Namespace string
}
