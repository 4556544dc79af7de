package standin

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

// Options configure an Env.
type Options struct {
	// Clusters is how many clusters to serve.
	Clusters int
	// ContextPrefix names the contexts: prefix + "1", "2", … (default
	// "fleet-c").
	ContextPrefix string
	// Dir is where the kubeconfig goes.
	Dir string
	// Latency, when set, puts a testenv.Proxy delaying each direction by
	// this much in front of every cluster, as testenv does for real ones.
	Latency time.Duration
}

// Cluster is one served cluster.
type Cluster struct {
	// Context is the cluster's context in the kubeconfig.
	Context string
	// Server is the URL the kubeconfig points at: the server, or its
	// latency proxy.
	Server string
	// Direct is the server's own URL.
	Direct string

	srv   *server
	proxy *testenv.Proxy
}

// Cut makes the cluster unreachable, as a network partition does: its
// proxy closes every connection, open or new, until Restore. It needs
// Options.Latency (the proxy is the latency's).
func (c *Cluster) Cut() error {
	if c.proxy == nil {
		return fmt.Errorf("standin: %s has no proxy to cut (Options.Latency)", c.Context)
	}
	c.proxy.Cut()
	return nil
}

// Restore makes a Cut cluster reachable again.
func (c *Cluster) Restore() {
	if c.proxy != nil {
		c.proxy.Restore()
	}
}

// Requests is how many requests the cluster has answered.
func (c *Cluster) Requests() int64 {
	var n int64
	for i := range c.srv.requests {
		n += c.srv.requests[i].Load()
	}
	return n
}

// Counts are the requests the cluster has answered by kind: discovery,
// get, list, create, update, patch, delete, other.
func (c *Cluster) Counts() map[string]int64 {
	out := map[string]int64{}
	for i := range c.srv.requests {
		if n := c.srv.requests[i].Load(); n > 0 {
			out[kindNames[i]] = n
		}
	}
	return out
}

// DropNamespace forgets the namespace ns and everything in it, at once
// and without a request: make bench clears a create run's objects so
// that repeated runs do not pile them up in memory.
func (c *Cluster) DropNamespace(ns string) { c.srv.store.dropNamespace(ns) }

// Env is a set of served clusters.
type Env struct {
	// Kubeconfig is the path of the kubeconfig with every cluster's context.
	Kubeconfig string
	// Clusters are the served clusters, in order.
	Clusters []*Cluster
	// Token is the bearer token every cluster accepts.
	Token string

	mu      sync.Mutex
	servers []*http.Server
	proxies []*testenv.Proxy
	// errorKinds counts what the HTTP servers would log (mostly TLS
	// handshakes a client gave up on) by what it says, the client's
	// address left out ("TLS handshake error: EOF").
	errorKinds sync.Map // string → *atomic.Int64
}

// ServerErrorKinds is ServerErrors by what the servers said.
func (e *Env) ServerErrorKinds() map[string]int64 {
	out := map[string]int64{}
	e.errorKinds.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// ServerErrors is how many connection errors the servers saw (TLS
// handshakes that clients gave up on, mostly), instead of logging them.
func (e *Env) ServerErrors() int64 {
	var n int64
	for _, k := range e.ServerErrorKinds() {
		n += k
	}
	return n
}

// countWriter counts the lines written to it by kind.
type countWriter struct{ kinds *sync.Map }

// errorFrom is the address in "http: TLS handshake error from ADDR: EOF".
var errorFrom = regexp.MustCompile(` from [^ ]+:\d+`)

func (w countWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		kind := errorFrom.ReplaceAllString(strings.TrimPrefix(line, "http: "), "")
		c, _ := w.kinds.LoadOrStore(kind, new(atomic.Int64))
		c.(*atomic.Int64).Add(1)
	}
	return len(p), nil
}

// Start serves opts.Clusters clusters on loopback and writes their
// kubeconfig. On error, whatever was started is stopped.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	if opts.Clusters < 1 {
		return nil, errors.New("standin: at least one cluster")
	}
	if opts.ContextPrefix == "" {
		opts.ContextPrefix = "fleet-c"
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	env = &Env{Kubeconfig: filepath.Join(opts.Dir, "kubeconfig")}
	defer func() {
		if err != nil {
			env.Stop()
		}
	}()
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	env.Token = hex.EncodeToString(tok)
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	disc, err := loadDiscovery()
	if err != nil {
		return nil, err
	}
	sd, err := loadSeed(disc)
	if err != nil {
		return nil, err
	}
	for i := 1; i <= opts.Clusters; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cluster %d: %w", i, err)
		}
		srv := &server{token: env.Token, disc: disc, store: newStore()}
		if err := srv.store.plant(sd); err != nil {
			return nil, err
		}
		hs := &http.Server{
			Handler:           srv,
			TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12},
			ReadHeaderTimeout: time.Minute,
			// kube-apiserver's --http2-max-streams-per-connection.
			HTTP2:    &http.HTTP2Config{MaxConcurrentStreams: 1000},
			ErrorLog: log.New(countWriter{&env.errorKinds}, "", 0),
		}
		env.mu.Lock()
		env.servers = append(env.servers, hs)
		env.mu.Unlock()
		go func() { _ = hs.ServeTLS(l, "", "") }()
		direct := "https://" + l.Addr().String()
		c := &Cluster{Context: opts.ContextPrefix + strconv.Itoa(i), Server: direct, Direct: direct, srv: srv}
		if opts.Latency > 0 {
			p, err := testenv.NewProxy(l.Addr().String(), opts.Latency)
			if err != nil {
				return nil, fmt.Errorf("cluster %d: %w", i, err)
			}
			env.mu.Lock()
			env.proxies = append(env.proxies, p)
			env.mu.Unlock()
			c.Server, c.proxy = "https://"+p.Addr, p
		}
		env.Clusters = append(env.Clusters, c)
	}
	return env, env.writeKubeconfig()
}

func (e *Env) writeKubeconfig() error {
	cs := make([]testenv.Cluster, len(e.Clusters))
	for i, c := range e.Clusters {
		cs[i] = testenv.Cluster{Context: c.Context, Server: c.Server}
	}
	return testenv.WriteKubeconfig(e.Kubeconfig, e.Token, cs)
}

// Requests is how many requests every cluster has answered, in order.
func (e *Env) Requests() []int64 {
	out := make([]int64, len(e.Clusters))
	for i, c := range e.Clusters {
		out[i] = c.Requests()
	}
	return out
}

// Stop closes the proxies and the servers. It is safe to call twice.
func (e *Env) Stop() {
	e.mu.Lock()
	servers, proxies := e.servers, e.proxies
	e.servers, e.proxies = nil, nil
	e.mu.Unlock()
	for _, p := range proxies {
		p.Close()
	}
	for _, s := range servers {
		_ = s.Close()
	}
}

// selfSigned is a certificate for 127.0.0.1, with an RSA 2048 key as
// kube-apiserver makes for itself (--cert-dir), so that a TLS handshake
// costs the client what a real server's does.
func selfSigned() (tls.Certificate, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "127.0.0.1@standin"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
