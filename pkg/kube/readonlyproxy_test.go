package kube

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// TestReadOnlyProxy: what a check or exec of a delivered cluster reaches
// it through passes reads only, with the context's credentials, and
// only to whoever holds the kubeconfig's token: a write, a request
// without the token, and the caller's own credentials or impersonation
// never reach the cluster.
func TestReadOnlyProxy(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	cluster := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization")+" as="+r.Header.Get("Impersonate-User"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"ConfigMapList","apiVersion":"v1","items":[]}`)
	}))
	defer cluster.Close()
	cfg := readOnly("edge-1")(&rest.Config{Host: cluster.URL, BearerToken: "the-context-token"})
	p, err := readOnlyHandler(cfg, "edge-1")
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(p.authorized())
	defer proxy.Close()

	for _, tt := range []struct {
		name, method, path, token, as string
		code                          int
		reaches                       string // what the cluster sees; "" for nothing
		says                          string
	}{
		{"a read", "GET", "/api/v1/namespaces/web/configmaps", p.token, "", 200, "GET /api/v1/namespaces/web/configmaps auth=Bearer the-context-token as=", ""},
		{"who am I", "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", p.token, "", 200, "POST /apis/authentication.k8s.io/v1/selfsubjectreviews auth=Bearer the-context-token as=", ""},
		{"a read as someone else", "GET", "/api/v1/secrets", p.token, "system:admin", 200, "GET /api/v1/secrets auth=Bearer the-context-token as=", ""},
		{"a write", "POST", "/api/v1/namespaces/web/configmaps", p.token, "", 403, "", "cluster edge-1 is delivered through a registry: nothing writes to it but its Flux (refused POST /api/v1/namespaces/web/configmaps)"},
		{"a delete", "DELETE", "/api/v1/namespaces/web", p.token, "", 403, "", "refused DELETE"},
		{"an exec", "POST", "/api/v1/namespaces/web/pods/x/exec", p.token, "", 403, "", "refused POST"},
		{"no token", "GET", "/api/v1/secrets", "", "", 401, "", "takes only the token of the kubeconfig it wrote"},
		{"another token", "GET", "/api/v1/secrets", "the-context-token", "", 401, "", "takes only the token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			req, _ := http.NewRequest(tt.method, proxy.URL+tt.path, strings.NewReader("{}"))
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.as != "" {
				req.Header.Set("Impersonate-User", tt.as)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode != tt.code || !strings.Contains(string(body), tt.says) {
				t.Errorf("%d %s, want %d saying %q", resp.StatusCode, body, tt.code, tt.says)
			}
			if want := []string{tt.reaches}; tt.reaches == "" && len(seen) > 0 || tt.reaches != "" && (len(seen) != 1 || seen[0] != want[0]) {
				t.Errorf("the cluster saw %q, want %q", seen, tt.reaches)
			}
		})
	}
}

// TestReadOnlyKubeconfig: the kubeconfig written for a delivered
// cluster reaches it through the proxy over TLS (kubectl sends no token
// over plain HTTP): a read passes with the context's token, a write is
// Forbidden, and once stopped, the file is gone and nothing answers.
func TestReadOnlyKubeconfig(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var seen []string
	var mu sync.Mutex
	cluster := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"ConfigMapList","apiVersion":"v1","items":[]}`)
	}))
	defer cluster.Close()
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cluster.Certificate().Raw})
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cluster.URL, CertificateAuthorityData: ca}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "the-context-token"}
	kc.Contexts["edge"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "admin", Namespace: "web"}
	if err := clientcmd.WriteToFile(*kc, filepath.Join(dir, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Parse([]byte("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups:\n- {name: edge, delivery: {oci: \"oci://127.0.0.1:5000/f\", insecure: true}}\nclusters:\n- {name: edge-1, group: edge, context: edge}\napps:\n- {name: web, manifests: web.yaml}\n"), "fleet.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	cf := genericclioptions.NewConfigFlags(true)
	path := filepath.Join(dir, "kubeconfig")
	cf.KubeConfig = &path
	var sources KubeconfigSources
	defer sources.Cleanup()
	written, stop, err := ReadOnlyKubeconfig(cf, &sources, f, f.Cluster("edge-1"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(written); strings.Contains(string(b), "the-context-token") || !strings.Contains(string(b), "server: https://127.0.0.1:") || !strings.Contains(string(b), "namespace: web") {
		t.Fatalf("the kubeconfig a command gets:\n%s", b)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", written)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("web").List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("a read: %v", err)
	}
	_, err = cs.CoreV1().ConfigMaps("web").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cluster edge-1 is delivered through a registry") {
		t.Fatalf("a write: %v", err)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0] != "GET /api/v1/namespaces/web/configmaps Bearer the-context-token" {
		t.Errorf("the cluster saw %q", seen)
	}
	mu.Unlock()
	stop()
	if _, err := os.Stat(written); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig is still there: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("web").List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Errorf("the proxy still answers once stopped")
	}
}
