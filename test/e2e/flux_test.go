package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// loopbackRegistry serves a registry on loopback until the test ends
// (through wrap when set) and returns a Registry of the fleet e2e there,
// anonymous whatever this machine's Docker config says, and its host.
func loopbackRegistry(t *testing.T, wrap func(http.Handler) http.Handler) (artifact.Registry, string) {
	t.Helper()
	reg, err := testenv.StartRegistry("127.0.0.1:0", wrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	r, err := artifact.ParseRegistry("oci://"+reg.Host+"/fleets/e2e", true)
	if err != nil {
		t.Fatal(err)
	}
	r.Keychain = authn.NewMultiKeychain()
	return r, reg.Host
}

// fluxProcs are Flux's controllers running for a test.
type fluxProcs struct{ *testenv.Flux }

func (f fluxProcs) logs() string { return f.Logs() }

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
	crds, err := exec.Command(filepath.Join(repo, "hack", "controlplane", "build.sh"), "--print-flux-crds-dir").Output()
	if err != nil {
		t.Fatal(err)
	}
	flux, err := env.StartFlux(stopping, context, testenv.FluxOptions{BinDir: strings.TrimSpace(string(out)), CRDs: strings.TrimSpace(string(crds)), Namespace: "flux-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(flux.Stop)
	return fluxProcs{flux}
}
