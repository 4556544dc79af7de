package kube

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	flags := NewConfigFlags()
	ctx := "ctx"
	flags.KubeConfig, flags.Context = &kc, &ctx
	c, err := NewClient(flags)
	if err != nil {
		t.Fatal(err)
	}
	ns := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	read := func() {
		_, _ = c.Dynamic.Resource(ns).Get(context.Background(), "x", metav1.GetOptions{})
		_, _ = c.Metadata.Resource(ns).Get(context.Background(), "x", metav1.GetOptions{})
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
