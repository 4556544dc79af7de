package rendered

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/ocisource"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// An app from an oci:// artifact renders from the folder its path names
// inside it, and records the artifact pinned; a path the artifact does
// not hold says what it holds; fleet.lock's digest wins over the tag's.
func TestFetchApps(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	push := func(tag string, files map[string]string) string {
		contents := map[string][]byte{}
		for n, body := range files {
			contents[n] = []byte(body)
		}
		img, err := registrytest.FluxArtifact(contents)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := name.ParseReference(host + "/lib/dash:" + tag)
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		return d.String()
	}
	d1 := push("v1", map[string]string{
		"jsonnet/main.jsonnet": "local lib = import '../lib/names.libsonnet';\n{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: lib.name, namespace: 'x'}}\n",
		"lib/names.libsonnet":  "{name: 'from-lib'}\n",
		"README.md":            "x",
	})
	dir := t.TempDir()
	ff := filepath.Join(dir, "fleet.yaml")
	yaml := "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: g}]\nclusters: [{name: c, group: g, context: c}]\napps:\n  - {name: dash, jsonnet: \"oci://" + host + "/lib/dash:v1\", path: jsonnet/main.jsonnet}\n  - {name: bad, manifests: \"oci://" + host + "/lib/dash:v1\", path: nope}\n"
	if err := os.WriteFile(ff, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Load(ff)
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := f.Select(fleet.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	fetcher := &ocisource.Fetcher{CacheDir: t.TempDir(), Keychain: authn.NewMultiKeychain()}
	apps, err := (&Source{Apps: []string{"dash"}}).Resolve(f, clusters, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := Fetch(context.Background(), apps, fetcher); err != nil {
		t.Fatal(err)
	}
	src := apps[0].Source
	if filepath.Base(src.Path) != "main.jsonnet" || src.Artifact != "oci://"+host+"/lib/dash@"+d1 || apps[0].Fetched.Format != "flux" || len(src.JPath) != 1 || src.JPath[0] != apps[0].Fetched.Dir {
		t.Errorf("dash: %+v", src)
	}
	// Rendered as a file of a folder would be: it imports across the
	// artifact's folders.
	res := (&render.Engine{}).Render(context.Background(), []render.Target{{Cluster: render.ClusterOf(f, clusters[0]), App: "dash", Source: src}})
	if res[0].Err != nil || len(res[0].Objects) != 1 || res[0].Objects[0].GetName() != "from-lib" {
		t.Errorf("the jsonnet of an artifact: %v, %v", res[0].Objects, res[0].Err)
	}
	bad, err := (&Source{Apps: []string{"bad"}}).Resolve(f, clusters, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := Fetch(context.Background(), bad, fetcher); err == nil || !strings.Contains(err.Error(), "app bad: path nope is not in oci://"+host+"/lib/dash@"+d1+" (it holds: README.md, jsonnet/, lib/)") {
		t.Errorf("a path not in the artifact: %v", err)
	}

	// Pinned by fleet.lock: the tag moves, the render does not.
	lock := &fleet.Lock{APIVersion: fleet.APIVersion, Kind: "Lock"}
	lock.SetSource(fleet.LockedSource{App: "dash", Ref: "oci://" + host + "/lib/dash:v1", Digest: d1})
	if err := lock.Write(ff); err != nil {
		t.Fatal(err)
	}
	push("v1", map[string]string{"jsonnet/main.jsonnet": "{a: 1}"})
	apps, err = (&Source{Apps: []string{"dash"}}).Resolve(f, clusters, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := Fetch(context.Background(), apps, &ocisource.Fetcher{CacheDir: fetcher.CacheDir, Keychain: authn.NewMultiKeychain()}); err != nil || apps[0].Source.Artifact != "oci://"+host+"/lib/dash@"+d1 {
		t.Errorf("pinned: %+v, %v", apps[0].Source, err)
	}
}

// An ad hoc oci:// source is fetched; an oci:// chart is Helm's to pull.
func TestAdhocOCI(t *testing.T) {
	f := &fleet.Fleet{}
	for _, tc := range []struct {
		src   Source
		fetch bool
	}{
		{Source{Kustomize: "oci://ghcr.io/acme/bases/web:v1"}, true},
		{Source{Manifests: "oci://ghcr.io/acme/crds:v2"}, true},
		{Source{Chart: "oci://ghcr.io/acme/charts/web", ChartVersion: "1.0.0"}, false},
		{Source{Kustomize: "apps/web"}, false},
	} {
		apps, err := tc.src.Resolve(f, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := apps[0].OCI != nil; got != tc.fetch {
			t.Errorf("%+v: fetched by ocisource %v, want %v", tc.src, got, tc.fetch)
		}
	}
}
