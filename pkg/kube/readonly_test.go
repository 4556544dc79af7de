package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

func TestReadRequest(t *testing.T) {
	for _, tt := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/api/v1/namespaces/kube-system", true},
		{"HEAD", "/version", true},
		{"POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", true},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", true},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", true},
		{"POST", "/api/v1/namespaces/x/configmaps", false},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", false},
		{"POST", "/apis/evil.example.com/v1/namespaces/x/selfsubjectreviews", false},
		{"POST", "/apis/x/v1/selfsubjectreviews/status", false},
		{"PATCH", "/api/v1/namespaces/x/configmaps/y", false},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/x/leases/y", false},
		{"DELETE", "/api/v1/namespaces/x", false},
	} {
		if got := readRequest(tt.method, tt.path); got != tt.want {
			t.Errorf("%s %s: read %v, want %v", tt.method, tt.path, got, tt.want)
		}
	}
}

// TestDeliveredClusterOnlyReads builds the client of a delivered
// cluster as every command does (ForCluster, NewClient) and checks that
// its writes never reach the server, while its reads do; and that a
// delivered cluster without a context reaches nothing, not the
// kubeconfig's current context.
func TestDeliveredClusterOnlyReads(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api":
			fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"]}`)
		case "/apis":
			fmt.Fprint(w, `{"kind":"APIGroupList","groups":[]}`)
		case "/api/v1":
			fmt.Fprint(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"configmaps","namespaced":true,"kind":"ConfigMap","verbs":["get","create"]}]}`)
		default:
			fmt.Fprint(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"x"}}`)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
current-context: other
clusters: [{name: k, cluster: {server: "`+srv.URL+`"}}]
users: [{name: u, user: {}}]
contexts: [{name: edge, context: {cluster: k, user: u}}, {name: other, context: {cluster: k, user: u}}]
`), 0o600)
	f, err := fleet.Parse([]byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: f}
groups: [{name: g, delivery: {oci: "oci://r.example.com/f"}}, {name: direct}]
clusters:
  - {name: edge, group: g, context: edge}
  - {name: dark, group: g}
  - {name: near, group: direct, context: edge}
`), "fleet.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	base := NewConfigFlags()
	base.KubeConfig = &kc
	base.CacheDir = new(filepath.Join(dir, "cache"))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "x"}}
	ctx := context.Background()

	edge, err := NewClient(ForCluster(base, f, f.Cluster("edge")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := edge.Core.ConfigMaps("x").Get(ctx, "c", metav1.GetOptions{}); err != nil {
		t.Fatalf("a read was refused: %v", err)
	}
	_, err = edge.Core.ConfigMaps("x").Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	var refused *WriteRefusedError
	if !errors.As(err, &refused) || refused.Cluster != "edge" {
		t.Fatalf("a write of a delivered cluster: %v, want it refused", err)
	}
	mu.Lock()
	for _, s := range seen {
		if !strings.HasPrefix(s, "GET ") {
			t.Errorf("the server saw %s", s)
		}
	}
	seen = nil
	mu.Unlock()

	near, err := NewClient(ForCluster(base, f, f.Cluster("near")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := near.Core.ConfigMaps("x").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a cluster written to directly: %v", err)
	}

	if _, err := NewClient(ForCluster(base, f, f.Cluster("dark"))); err == nil || !strings.Contains(err.Error(), "has no context") {
		t.Fatalf("a cluster without a context: %v, want it to reach nothing", err)
	}
}
