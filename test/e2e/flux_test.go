package e2e

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
	artifact "github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// TestFluxPullsPublished is the proof of the publish format: what
// pkg/publish packs and pushes to a registry on loopback, Flux's own
// source-controller and kustomize-controller (built from the Go module
// proxy, run out of cluster against a test API server) pull and apply;
// moving the tag rolls forward and back, and the artifact of nothing
// prunes everything. Not a fake of Flux.
func TestFluxPullsPublished(t *testing.T) {
	cluster := env.Clusters[2]
	flux := startFlux(t, cluster.Context)

	r, _ := loopbackRegistry(t, nil)
	ctx := context.Background()
	const ns = "e2e-flux"
	obj := func(kind, name string, data map[string]any) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name}}}
		if kind != "Namespace" {
			o.SetNamespace(ns)
			o.Object["data"] = data
		}
		return o
	}
	release := func(objs ...*unstructured.Unstructured) v1.Hash {
		t.Helper()
		img, err := artifact.Pack(objs, artifact.Origin{Source: "https://git.example.com/fleet", Revision: "main@sha1:e2e"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := r.Push(ctx, "web", img)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	r1 := release(obj("Namespace", ns, nil), obj("ConfigMap", "a", map[string]any{"v": "1"}))
	r2 := release(obj("Namespace", ns, nil), obj("ConfigMap", "a", map[string]any{"v": "2"}), obj("ConfigMap", "b", map[string]any{"v": "new"}))
	none := release()
	if err := r.Tag(ctx, "web", "c3", r1); err != nil {
		t.Fatal(err)
	}

	// What publish --bootstrap is to write: the cluster follows its tag.
	follow, err := r.Bootstrap("e2e", "web", "c3", artifact.Follow{Namespace: "flux-e2e", Interval: time.Second, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{"apiVersion: v1\nkind: Namespace\nmetadata: {name: flux-e2e}\n"}
	for _, o := range follow {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	if out, errOut, code := kubectl(t, strings.Join(docs, "---\n"), "--context", cluster.Context, "apply", "-f", "-"); code != 0 {
		t.Fatalf("applying the OCIRepository and Kustomization: exit %d\n%s%s", code, out, errOut)
	}
	defer kubectl(t, "", "--context", cluster.Context, "delete", "namespace", "flux-e2e", ns, "--wait=false", "--ignore-not-found")

	// applied waits until Flux applied digest d and the ConfigMaps hold
	// want (name → v; "" for none).
	applied := func(step string, d v1.Hash, want map[string]string) {
		t.Helper()
		var last string
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			rev, _, _ := kubectl(t, "", "--context", cluster.Context, "-n", "flux-e2e", "get", "kustomization", "e2e-web", "-o", "jsonpath={.status.lastAppliedRevision}")
			got := map[string]string{}
			for name := range want {
				v, _, code := kubectl(t, "", "--context", cluster.Context, "-n", ns, "get", "configmap", name, "-o", "jsonpath={.data.v}")
				if code == 0 {
					got[name] = v
				} else {
					got[name] = ""
				}
			}
			last = fmt.Sprintf("revision %q, ConfigMaps %v", rev, got)
			if strings.HasSuffix(rev, "@"+d.String()) && fmt.Sprint(got) == fmt.Sprint(want) {
				return
			}
		}
		t.Fatalf("%s: Flux did not apply %s in 2 minutes: %s\n%s", step, d, last, flux.logs())
	}
	applied("the first release", r1, map[string]string{"a": "1", "b": ""})
	for _, s := range []struct {
		step string
		d    v1.Hash
		want map[string]string
	}{
		{"the tag moved on", r2, map[string]string{"a": "2", "b": "new"}},
		{"the tag moved back (rollback)", r1, map[string]string{"a": "1", "b": ""}},
		{"the artifact of nothing (delete)", none, map[string]string{"a": "", "b": ""}},
	} {
		if err := r.Tag(ctx, "web", "c3", s.d); err != nil {
			t.Fatal(err)
		}
		applied(s.step, s.d, s.want)
	}
}

// loopbackRegistry serves an OCI registry on loopback until the test
// ends, through wrap when it is not nil (faults), and returns the
// Registry of oci://<host>/fleets/e2e on it, anonymous, and its host.
func loopbackRegistry(t *testing.T, wrap func(http.Handler) http.Handler) (artifact.Registry, string) {
	t.Helper()
	var h http.Handler = ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	r, err := artifact.ParseRegistry("oci://"+host+"/fleets/e2e", true)
	if err != nil {
		t.Fatal(err)
	}
	r.Keychain = authn.NewMultiKeychain()
	return r, host
}

// fluxProcs are Flux's controllers running for a test.
type fluxProcs struct {
	dir string
}

// logs is the tail of each controller's log.
func (f fluxProcs) logs() string {
	var b strings.Builder
	for _, name := range []string{"source-controller", "kustomize-controller"} {
		data, _ := os.ReadFile(filepath.Join(f.dir, name+".log"))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s (last lines):\n%s\n", name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String()
}

// startFlux builds (when missing) and starts source-controller and
// kustomize-controller against the cluster of context, with their CRDs
// installed, until the test ends.
func startFlux(t *testing.T, context string) fluxProcs {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command(filepath.Join(repo, "hack", "controlplane", "build.sh"), "source-controller", "kustomize-controller")
	build.Stderr = os.Stderr
	out, err := build.Output()
	if err != nil {
		t.Fatalf("building Flux's controllers: %v", err)
	}
	bin := strings.TrimSpace(string(out))
	crds, err := exec.Command(filepath.Join(repo, "hack", "controlplane", "build.sh"), "--print-flux-crds-dir").Output()
	if err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := kubectl(t, "", "--context", context, "apply", "--server-side", "-f", strings.TrimSpace(string(crds))); code != 0 {
		t.Fatalf("installing Flux's CRDs: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := kubectl(t, "", "--context", context, "wait", "--for", "condition=established", "--timeout", "60s", "crd/ocirepositories.source.toolkit.fluxcd.io", "crd/kustomizations.kustomize.toolkit.fluxcd.io"); code != 0 {
		t.Fatalf("Flux's CRDs: exit %d\n%s%s", code, out, errOut)
	}

	dir := t.TempDir()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CurrentContext = context
	kc := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	ports, err := testenv.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	storage := addr(0)
	if err := os.MkdirAll(filepath.Join(dir, "storage"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"source-controller": {"--storage-path=" + filepath.Join(dir, "storage"), "--storage-addr=" + storage, "--storage-adv-addr=" + storage,
			"--metrics-addr=0", "--health-addr=" + addr(1), "--log-level=debug"},
		"kustomize-controller": {"--metrics-addr=0", "--health-addr=" + addr(2), "--log-level=debug", "--requeue-dependency=1s"},
	} {
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kc, "RUNTIME_NAMESPACE=flux-e2e")
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			logf.Close()
		})
	}
	return fluxProcs{dir: dir}
}
