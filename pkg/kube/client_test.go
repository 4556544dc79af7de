package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubectlapply "k8s.io/kubectl/pkg/cmd/apply"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestDefaultRequestTimeout: without --request-timeout, or with 0, every
// request of a cluster's client is still bounded; a given one wins.
func TestDefaultRequestTimeout(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	t.Setenv("HOME", t.TempDir()) // the discovery cache
	for _, tt := range []struct {
		flag string // "-": not given
		want string
	}{
		{"-", "1m0s"},
		{"0", "1m0s"},
		{"5s", "5s"},
	} {
		flags := NewConfigFlags()
		ctx := "ctx"
		flags.Context = &ctx
		if tt.flag != "-" {
			v := tt.flag
			flags.Timeout = &v
		} else {
			flags.Timeout = nil
		}
		c, err := NewClient(flags)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Config.Timeout.String(); got != tt.want {
			t.Errorf("--request-timeout %s: the REST config's timeout is %s, want %s", tt.flag, got, tt.want)
		}
		// Discovery and identity probes build their config from the flags.
		rc, err := c.Flags.ToRESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		if got := rc.Timeout.String(); got != tt.want {
			t.Errorf("--request-timeout %s: the flags give %s, want %s", tt.flag, got, tt.want)
		}
	}
}

// Reads and writes of a cluster share one connection, which
// CloseIdleConnections closes once the cluster's work is over.
func TestCloseIdleConnections(t *testing.T) {
	srv, conns := notFoundServer(t)
	c := clientsOf(t, srv.URL)[0]
	read := func() {
		_, _ = c.Dynamic.Resource(namespaces).Get(context.Background(), "x", metav1.GetOptions{})
		_, _ = c.Metadata.Resource(namespaces).Get(context.Background(), "x", metav1.GetOptions{})
	}
	read()
	read()
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for the reads of one cluster, want 1", n)
	}
	if c.Slowest() <= 0 {
		t.Error("the client's answers were not timed (Slowest)")
	}
	c.CloseIdleConnections()
	read()
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections after CloseIdleConnections and a read, want 2 (a new one)", n)
	}
}

// Clusters of the same TLS settings (one CA, here none checked) keep
// their own connections: closing one's, once its work is over, leaves
// the others' open. client-go shared one transport between them, and
// the fleet's finished clusters closed the connections of those still
// working.
func TestClustersKeepTheirOwnConnections(t *testing.T) {
	a, _ := notFoundServer(t)
	b, conns := notFoundServer(t)
	clients := clientsOf(t, a.URL, b.URL)
	read := func(c *Client) {
		_, _ = c.Dynamic.Resource(namespaces).Get(context.Background(), "x", metav1.GetOptions{})
	}
	read(clients[0])
	read(clients[1])
	clients[0].CloseIdleConnections()
	read(clients[1])
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections to the second cluster, want 1: closing the first's closed its", n)
	}
}

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// The identity check and the reachability probe go over the cluster's
// one connection, not one each.
func TestIdentityCheckSharesTheConnection(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/version":
			_, _ = w.Write([]byte(`{"gitVersion":"v1.37.0"}`))
		case "/api/v1/namespaces/kube-system":
			_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"kube-system","uid":"u1"}}`))
		default:
			notFound(w, r)
		}
	})
	c := clientsOf(t, srv.URL)[0]
	if err := c.Reachable(); err != nil {
		t.Fatal(err)
	}
	if err := c.VerifyIdentity(context.Background(), srv.URL, "u1"); err != nil {
		t.Fatal(err)
	}
	if err := c.VerifyIdentity(context.Background(), "", "u2"); err == nil {
		t.Error("a cluster of another uid passed the identity check")
	}
	_, _ = c.Dynamic.Resource(namespaces).Get(context.Background(), "x", metav1.GetOptions{})
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for a cluster's probe, identity checks and a read, want 1", n)
	}
}

// The discovery's connection (made on a cache miss) is closed with the
// client's once the cluster's work is over.
func TestCloseIdleConnectionsOfDiscovery(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"gitVersion":"v1.37.0"}`))
	})
	c := clientsOf(t, srv.URL)[0]
	dc, err := c.Flags.ToDiscoveryClient()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := dc.ServerVersion(); err != nil {
			t.Fatal(err)
		}
	}
	c.CloseIdleConnections()
	if _, err := dc.ServerVersion(); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections for the discovery's requests around CloseIdleConnections, want 2 (a new one after)", n)
	}
}

// notFoundServer is countingServer answering every request with a
// NotFound Status.
func notFoundServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	return countingServer(t, notFound)
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
}

// countingServer is an HTTP/2 server of handler that counts the
// connections made to it.
func countingServer(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(handler)
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// Every request is bounded by --request-timeout, and bounded without a
// goroutine of its own: Go's client starts one per request given a
// Timeout, and its transport another, for any transport not its own.
func TestRequestTimeoutStartsNoGoroutine(t *testing.T) {
	entered, release := make(chan struct{}, 10), make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		notFound(w, r)
	})
	defer close(release)
	c := clientsWith(t, "400ms", srv.URL)[0]
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := c.Dynamic.Resource(namespaces).Get(context.Background(), "x", metav1.GetOptions{})
			errs <- err
		}()
	}
	for range 3 {
		<-entered
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, f := range []string{"net/http.setRequestCancel", "net/http.awaitLegacyCancel"} {
		if strings.Contains(stacks, f) {
			t.Errorf("a request in flight holds a goroutine in %s", f)
		}
	}
	for range 3 {
		if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a request past --request-timeout ended with %v, want its deadline exceeded", err)
		}
	}
}

// clientsOf are clients of the servers at urls, each a context of one
// kubeconfig with the same TLS settings and token.
func clientsOf(t *testing.T, urls ...string) []*Client {
	t.Helper()
	return clientsWith(t, "", urls...)
}

// clientsWith are clientsOf with --request-timeout timeout ("": none).
func clientsWith(t *testing.T, timeout string, urls ...string) []*Client {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	for i, u := range urls {
		name := fmt.Sprint("c", i)
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: u, InsecureSkipTLSVerify: true}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "u"}
	}
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	var out []*Client
	for i := range urls {
		flags := NewConfigFlags()
		ctx := fmt.Sprint("c", i)
		flags.KubeConfig, flags.Context = &kc, &ctx
		if timeout != "" {
			flags.Timeout = &timeout
		}
		c, err := NewClient(flags)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// A listing keeps, of each object's labels, which set holds it, in one
// map its set's members share: the other labels were a third of what a
// 1,000-cluster apply held of its listings.
func TestListMetadataKeepsTheHolder(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/ns/configmaps" {
			notFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		item := func(name, uid string, labels string) string {
			return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"ns","uid":%q,"resourceVersion":"7","labels":%s,"managedFields":[{"manager":"m"}]}}`, name, uid, labels)
		}
		_, _ = fmt.Fprintf(w, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[%s,%s,%s]}`,
			item("a", "u1", `{"app":"a","applyset.kubernetes.io/part-of":"applyset-x"}`),
			item("b", "u2", `{"app":"b","applyset.kubernetes.io/part-of":"applyset-x"}`),
			item("c", "u3", `{"app":"c"}`))
	})
	c := clientsOf(t, srv.URL)[0]
	m := &meta.RESTMapping{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Scope: meta.RESTScopeNamespace}
	got, err := c.ListMetadata(context.Background(), m, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("listed %d objects, want 3", len(got))
	}
	x := map[string]string{kubectlapply.ApplysetPartOfLabel: "applyset-x"}
	for name, want := range map[string]Live{"a": {"u1", "7", x}, "b": {"u2", "7", x}, "c": {"u3", "7", nil}} {
		if o := got[name]; o == nil || o.UID != want.UID || o.ResourceVersion != want.ResourceVersion || !maps.Equal(o.Labels, want.Labels) {
			t.Errorf("%s listed as %+v, want %+v", name, o, want)
		}
	}
	if reflect.ValueOf(got["a"].Labels).UnsafePointer() != reflect.ValueOf(got["b"].Labels).UnsafePointer() {
		t.Error("two members of one set keep a map of labels each, want one shared")
	}
}
