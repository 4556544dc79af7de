package publish_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

func cm(name, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "web"}, "data": map[string]any{"v": value}}}
}

func TestPack(t *testing.T) {
	objs := []*unstructured.Unstructured{cm("a", "1"), cm("b", "2")}
	origin := publish.Origin{Source: "https://git.example.com/fleet", Revision: "main@sha1:abc"}
	img, err := publish.Pack(objs, origin)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != publish.ConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != publish.ContentMediaType {
		t.Fatalf("not a Flux artifact: config %s, layers %v", m.Config.MediaType, m.Layers)
	}
	if m.Annotations[publish.SourceAnnotation] != origin.Source || m.Annotations[publish.RevisionAnnotation] != origin.Revision {
		t.Errorf("annotations: %v", m.Annotations)
	}
	layers, _ := img.Layers()
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(tr)
	want := "apiVersion: v1\ndata:\n  v: \"1\"\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: web\n---\napiVersion: v1\ndata:\n  v: \"2\"\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: web\n"
	if h.Name != publish.File || string(body) != want || !h.ModTime.IsZero() && h.ModTime.Unix() != 0 {
		t.Errorf("%s (%v):\n%s", h.Name, h.ModTime, body)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("more than one file: %v", err)
	}

	// The same objects: the same bytes, whatever the time; the layer is
	// shared across origins, the manifest is not.
	again, _ := publish.Pack([]*unstructured.Unstructured{cm("a", "1"), cm("b", "2")}, origin)
	other, _ := publish.Pack(objs, publish.Origin{Source: origin.Source, Revision: "main@sha1:def"})
	changed, _ := publish.Pack([]*unstructured.Unstructured{cm("a", "1"), cm("b", "3")}, origin)
	d, _ := img.Digest()
	if d2, _ := again.Digest(); d2 != d {
		t.Errorf("packed twice: %s, %s", d, d2)
	}
	if od, _ := other.Digest(); od == d {
		t.Error("another revision, the same manifest")
	}
	om, _ := other.Manifest()
	if om.Layers[0].Digest != m.Layers[0].Digest {
		t.Error("another revision of the same objects does not share the layer")
	}
	cmf, _ := changed.Manifest()
	if cmf.Layers[0].Digest == m.Layers[0].Digest {
		t.Error("other objects, the same layer")
	}
}

// counting is a registry on loopback that counts the blob uploads and
// manifest writes it receives.
type counting struct {
	mu      sync.Mutex
	uploads int
	puts    map[string]int
	pings   int // GET /v2/
	reads   int // GET and HEAD of anything else
}

func (c *counting) serve(t *testing.T) string {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	c.puts = map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/blobs/uploads/"):
			c.uploads++
		case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/"):
			c.puts[r.URL.Path]++
		case r.URL.Path == "/v2/":
			c.pings++
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			c.reads++
		}
		c.mu.Unlock()
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// registryOf is a Registry of the fleet prod on c's loopback registry,
// anonymous whatever this machine's Docker config says.
func (c *counting) registryOf(t *testing.T) publish.Registry {
	t.Helper()
	r, err := publish.ParseRegistry("oci://"+c.serve(t)+"/fleets/prod", true)
	if err != nil {
		t.Fatal(err)
	}
	r.Keychain = authn.NewMultiKeychain()
	return r
}

func TestRegistry(t *testing.T) {
	var c counting
	r := c.registryOf(t)
	ctx := context.Background()
	if _, found, err := r.Resolve(ctx, "web", "p1"); found || err != nil {
		t.Fatalf("a tag never pushed: %v, %v", found, err)
	}
	img, _ := publish.Pack([]*unstructured.Unstructured{cm("a", "1")}, publish.Origin{Revision: "r1"})
	d, err := r.Push(ctx, "web", img)
	if err != nil {
		t.Fatal(err)
	}
	// Pushed by digest: no tag moved.
	if _, found, _ := r.Resolve(ctx, "web", "p1"); found {
		t.Fatal("a push moved a tag")
	}
	uploads := c.uploads
	// The same render for two more clusters: nothing uploaded again.
	for _, tag := range []string{"p1", "p2"} {
		if d2, err := r.Push(ctx, "web", img); err != nil || d2 != d {
			t.Fatalf("push again: %s, %v", d2, err)
		}
		if err := r.Tag(ctx, "web", tag, d); err != nil {
			t.Fatal(err)
		}
		if got, found, err := r.Resolve(ctx, "web", tag); !found || err != nil || got != d {
			t.Errorf("%s: %s %v %v, want %s", tag, got, found, err, d)
		}
	}
	if c.uploads != uploads {
		t.Errorf("the same render uploaded %d more blobs", c.uploads-uploads)
	}
	// A tag moves back to an earlier artifact (rollback).
	img2, _ := publish.Pack([]*unstructured.Unstructured{cm("a", "2")}, publish.Origin{Revision: "r2"})
	d2, err := r.Push(ctx, "web", img2)
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []v1.Hash{d2, d} {
		if err := r.Tag(ctx, "web", "p1", to); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := r.Resolve(ctx, "web", "p1"); got != to {
			t.Errorf("p1 at %s, want %s", got, to)
		}
	}
	// A tag is never moved to what was not pushed.
	missing, _ := publish.Pack([]*unstructured.Unstructured{cm("never", "pushed")}, publish.Origin{})
	md, _ := missing.Digest()
	if err := r.Tag(ctx, "web", "p2", md); err == nil {
		t.Error("tagged an artifact the registry does not have")
	}
	if got, _, _ := r.Resolve(ctx, "web", "p2"); got != d {
		t.Errorf("p2 moved to %s after a failed tag", got)
	}
	// A tag deleted: gone, the artifact still there under another.
	if err := r.Untag(ctx, "web", "p2"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := r.Resolve(ctx, "web", "p2"); found {
		t.Error("p2 is still there")
	}
	if got, found, _ := r.Resolve(ctx, "web", "p1"); !found || got != d {
		t.Errorf("p1 at %s (%v) after p2 was deleted, want %s", got, found, d)
	}
	if err := r.Untag(ctx, "web", "p2"); err == nil {
		t.Error("deleted a tag that is not there")
	}
}

// History keeps the newest revisions within its limit and says which
// it dropped, so that their tags go too.
func TestHistoryAdd(t *testing.T) {
	var h publish.History
	var dropped []int
	for n := 1; n <= 5; n++ {
		for _, r := range h.Add(revision.Revision{Number: n}, 3) {
			dropped = append(dropped, r.Number)
		}
	}
	if h.Current != 5 || len(h.Revisions) != 3 || h.Revisions[0].Number != 3 || !slices.Equal(dropped, []int{1, 2}) {
		t.Errorf("current %d, kept %v, dropped %v", h.Current, h.Revisions, dropped)
	}
	if got := h.Add(revision.Revision{Number: 6}, 0); len(got) != 0 || len(h.Revisions) != 4 {
		t.Errorf("no limit dropped %v", got)
	}
}

func TestParseRegistry(t *testing.T) {
	for _, tc := range []struct{ url, err string }{
		{"oci://registry.example.com/fleets/prod", ""},
		{"oci://registry.example.com:5000/fleets/prod/", ""},
		{"oci://127.0.0.1:5000/f", ""},
		{"registry.example.com/fleets", "not an oci:// URL"},
		{"https://registry.example.com/fleets", "not an oci:// URL"},
		{"oci://registry.example.com/fleets:v1", "names a tag or digest"},
		{"oci://registry.example.com/fleets@sha256:0000000000000000000000000000000000000000000000000000000000000000", "names a tag or digest"},
		{"oci://registry.example.com/Fleets", "repository"},
		{"oci://", "names no registry"},
	} {
		_, err := publish.ParseRegistry(tc.url, false)
		if got := ""; err != nil {
			got = err.Error()
			if tc.err == "" || !strings.Contains(got, tc.err) {
				t.Errorf("%s: %v, want %q", tc.url, err, tc.err)
			}
		} else if tc.err != "" {
			t.Errorf("%s: no error, want %q", tc.url, tc.err)
		}
	}
}

func TestPushAll(t *testing.T) {
	var c counting
	r := c.registryOf(t)
	ctx := context.Background()
	same := []*unstructured.Unstructured{cm("a", "1")}
	targets := []publish.Target{
		{App: "web", Cluster: "p1", Objects: same},
		{App: "web", Cluster: "p2", Objects: []*unstructured.Unstructured{cm("a", "1")}},
		{App: "web", Cluster: "p3", Objects: []*unstructured.Unstructured{cm("a", "3")}},
		{App: "db", Cluster: "p1", Objects: same},
	}
	pushes := r.Pushes(publish.Origin{Revision: "r1"}, false)
	pushed := make([]v1.Hash, len(targets))
	var g errgroup.Group
	for i, tg := range targets {
		g.Go(func() (err error) {
			pushed[i], err = pushes.Push(ctx, tg)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if pushed[0] != pushed[1] || pushed[0] == pushed[2] {
		t.Fatalf("pushed: %+v", pushed)
	}
	// One manifest write per distinct artifact and repository: p1 and p2
	// share theirs.
	writes := 0
	for _, n := range c.puts {
		writes += n
		if n != 1 {
			t.Errorf("a manifest written %d times: %v", n, c.puts)
		}
	}
	if writes != 3 {
		t.Errorf("%d manifest writes, want 3 (web twice, db once): %v", writes, c.puts)
	}
	// Nothing a cluster pulls moved.
	for _, tg := range targets {
		if _, found, _ := r.Resolve(ctx, tg.App, tg.Cluster); found {
			t.Errorf("%s:%s tagged by a push", tg.App, tg.Cluster)
		}
	}
	// Each repository was pinged once for the pushes, and once for the
	// reads (the puller's own), not before every request: a copy of
	// the registry shares its connections.
	if err := r.WithoutRecordKeys().Tag(ctx, "web", "p1", pushed[0]); err != nil {
		t.Fatal(err)
	}
	if c.pings != 4 {
		t.Errorf("%d pings, want 4 (web and db, pushing and reading)", c.pings)
	}
	// A tag to an artifact this run pushed is written without reading
	// its manifest back; a manifest that is not the artifact's is not
	// trusted: the artifact is read.
	reads := c.reads
	m := pushes.Manifest("web", pushed[2])
	if err := r.TagPushed(ctx, "web", "p3", pushed[2], m); err != nil || c.reads != reads {
		t.Errorf("tagged with its manifest: %v, %d reads", err, c.reads-reads)
	}
	if err := r.TagPushed(ctx, "web", "p2", pushed[1], m); err != nil || c.reads == reads {
		t.Errorf("tagged with another's manifest: %v, no read", err)
	}
	for _, tc := range []struct {
		tag  string
		want v1.Hash
	}{{"p3", pushed[2]}, {"p2", pushed[1]}} {
		if d, _, err := r.Resolve(ctx, "web", tc.tag); err != nil || d != tc.want {
			t.Errorf("web:%s at %s, want %s (%v)", tc.tag, d, tc.want, err)
		}
	}
	// A registry that refuses: the error names the app and cluster.
	bad, _ := publish.ParseRegistry("oci://127.0.0.1:1/fleets", true)
	bad.Keychain = authn.NewMultiKeychain()
	if _, err := bad.Pushes(publish.Origin{}, false).Push(ctx, targets[0]); err == nil || !strings.Contains(err.Error(), "app web for cluster p1") {
		t.Errorf("a registry down: %v", err)
	}
	// A dry run packs: the same digest, nothing sent.
	if d, err := bad.Pushes(publish.Origin{Revision: "r1"}, true).Push(ctx, targets[0]); err != nil || d != pushed[0] {
		t.Errorf("a dry run: %s, %v; want %s", d, err, pushed[0])
	}
}

func TestBootstrap(t *testing.T) {
	r, err := publish.ParseRegistry("oci://registry.example.com/fleets/prod", false)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := r.Bootstrap("shop", "web", "p1", publish.Follow{SecretRef: "registry"})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("%d objects", len(objs))
	}
	src, ks := objs[0], objs[1]
	field := func(o *unstructured.Unstructured, path ...string) any {
		v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
		return v
	}
	for _, c := range []struct {
		got, want any
	}{
		{src.GetKind() + " " + src.GetNamespace() + "/" + src.GetName(), "OCIRepository flux-system/shop-web"},
		{ks.GetKind() + " " + ks.GetNamespace() + "/" + ks.GetName(), "Kustomization flux-system/shop-web"},
		{field(src, "spec", "url"), "oci://registry.example.com/fleets/prod/web"},
		{field(src, "spec", "ref", "tag"), "p1"},
		{field(src, "spec", "insecure"), nil},
		{field(src, "spec", "secretRef", "name"), "registry"},
		{field(src, "spec", "interval"), "1m0s"},
		{field(ks, "spec", "sourceRef", "name"), "shop-web"},
		{field(ks, "spec", "prune"), true},
		{field(ks, "spec", "wait"), true},
		{field(ks, "spec", "timeout"), "5m0s"},
		{src.GetLabels()[publish.DeliveryLabel] + " " + ks.GetLabels()[publish.DeliveryLabel], "shop shop"},
	} {
		if c.got != c.want {
			t.Errorf("%v, want %v", c.got, c.want)
		}
	}
	if _, err := r.Bootstrap("Shop_", "web", "p1", publish.Follow{}); err == nil {
		t.Error("a name Kubernetes refuses")
	}
}

// A plain-HTTP registry that fails is said by its own answer, not by the
// HTTPS attempt before it.
func TestRegistryDown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	r, err := publish.ParseRegistry("oci://"+strings.TrimPrefix(srv.URL, "http://")+"/fleets/prod", true)
	if err != nil {
		t.Fatal(err)
	}
	r.Keychain = authn.NewMultiKeychain()
	img, _ := publish.Pack([]*unstructured.Unstructured{cm("a", "1")}, publish.Origin{})
	_, err = r.Push(context.Background(), "web", img)
	if err == nil || !strings.Contains(err.Error(), "503 Service Unavailable: down for maintenance") || strings.Contains(err.Error(), "HTTPS") || strings.HasSuffix(err.Error(), "; ") {
		t.Fatalf("got %v", err)
	}
}

// TestPackStaysTheSame pins the digest of an artifact: a cluster whose
// render did not change must find its artifact the same after an
// upgrade of kubectl fleet, or every tag would move (a new revision per
// cluster and app) for nothing. The objects hold what YAML writes in
// more than one way: quoted and block strings, numbers, lists, long
// lines, keys that need quoting.
func TestPackStaysTheSame(t *testing.T) {
	long := strings.Repeat("word ", 30)
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "web", "labels": map[string]any{"app.kubernetes.io/name": "web", "tier": "1"}}}},
		{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "web"},
			"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "nginx:1.27", "args": []any{"--port=80", "yes", "null", "0x1F", "1e3", ""},
					"resources": map[string]any{"limits": map[string]any{"cpu": 0.5, "memory": "128Mi"}}, "env": []any{map[string]any{"name": "A", "value": "multi\nline\n"}}},
			}}}}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg", "namespace": "web", "annotations": map[string]any{"note": long, "empty": ""}},
			"data": map[string]any{"script.sh": "#!/bin/sh\necho \"hi\" # ok\n\ttab\n", "colon": "a: b", "dash": "- x", "unicode": "héllo ✓", "true": "true", "key with space": "v", "[": "]"}}},
	}
	img, err := publish.Pack(objs, publish.Origin{Source: "https://git.example.com/fleet", Revision: "main@sha1:abc"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if want := "sha256:eda0f256d256296e606ac2309855f52894a83fab398553318628faf7c05b7619"; d.String() != want {
		t.Errorf("the artifact's digest moved:\n got %s\nwant %s", d, want)
	}
}

// rawManifest is a manifest written as given.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error) { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) {
	return types.OCIManifestSchema1, nil
}

// A record is read in one request, its manifest, which embeds it; one
// written before records were embedded (its layer alone) is still read,
// from its layer; embedded data that is not its layer's is refused.
func TestRecordInOneRequest(t *testing.T) {
	var c counting
	r := c.registryOf(t)
	ctx := context.Background()
	h := publish.History{Current: 1, Revisions: []revision.Revision{{App: "web", Number: 1, Digest: "sha256:a"}}}
	if err := r.SaveHistory(ctx, "web", "p1", h); err != nil {
		t.Fatal(err)
	}
	read := func(cluster string) (publish.History, int, error) {
		c.mu.Lock()
		before := c.reads
		c.mu.Unlock()
		got, err := r.History(ctx, "web", cluster)
		c.mu.Lock()
		defer c.mu.Unlock()
		return got, c.reads - before, err
	}
	if got, n, err := read("p1"); err != nil || got.Current != 1 || n != 1 {
		t.Errorf("read in %d requests (want 1): %+v, %v", n, got, err)
	}
	if got, n, err := read("p2"); err != nil || got.Current != 0 || n != 1 {
		t.Errorf("no record: %d requests (want 1): %+v, %v", n, got, err)
	}

	// The same record with its data taken out of the manifest, as
	// records were written before: read from the layer.
	repo, _ := r.Repository("web")
	desc, err := remote.Get(repo.Tag(publish.HistoryTag("p1")))
	if err != nil {
		t.Fatal(err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil || m.Layers[0].Data == nil {
		t.Fatalf("the record is not embedded: %v", err)
	}
	put := func(cluster string, m *v1.Manifest) {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Put(repo.Tag(publish.HistoryTag(cluster)), rawManifest(b)); err != nil {
			t.Fatal(err)
		}
	}
	data := m.Layers[0].Data
	m.Layers[0].Data = nil
	put("old", m)
	if got, n, err := read("old"); err != nil || got.Current != 1 || n != 2 {
		t.Errorf("a record of before: %d requests (want 2): %+v, %v", n, got, err)
	}
	m.Layers[0].Data = bytes.Replace(data, []byte(`"current":1`), []byte(`"current":7`), 1)
	put("forged", m)
	if got, _, err := read("forged"); err == nil || got.Current == 7 {
		t.Errorf("embedded data that is not the layer's was read: %+v, %v", got, err)
	}
}

// Deleting tags, as the history limit drops revisions, pings the
// registry once per repository, not once per tag: one request per tag
// after the first.
func TestUntagPingsOnce(t *testing.T) {
	var c counting
	r := c.registryOf(t)
	ctx := context.Background()
	art, _ := publish.Pack([]*unstructured.Unstructured{cm("a", "1")}, publish.Origin{})
	d, err := r.Push(ctx, "web", art)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"p1.r1", "p1.r2", "p1.r3"} {
		if err := r.Tag(ctx, "web", tag, d); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	pings := c.pings
	c.mu.Unlock()
	for _, tag := range []string{"p1.r1", "p1.r2", "p1.r3"} {
		if err := r.Untag(ctx, "web", tag); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := r.Resolve(ctx, "web", tag); found {
			t.Errorf("%s is still there", tag)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.pings - pings; n != 1 {
		t.Errorf("three tags deleted with %d pings, want 1", n)
	}
}

// A registry that answers a tag's deletion with a redirect does not get
// it followed: the delete token goes to no other host.
func TestUntagFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	r, err := publish.ParseRegistry("oci://"+strings.TrimPrefix(srv.URL, "http://")+"/fleets/prod", true)
	if err != nil {
		t.Fatal(err)
	}
	r.Keychain = authn.NewMultiKeychain()
	ctx := context.Background()
	art, _ := publish.Pack([]*unstructured.Unstructured{cm("a", "1")}, publish.Origin{})
	d, err := r.Push(ctx, "web", art)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Tag(ctx, "web", "p1", d); err != nil {
		t.Fatal(err)
	}
	if err := r.Untag(ctx, "web", "p1"); err == nil {
		t.Error("a deletion answered with a redirect succeeded")
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed: %d requests elsewhere", n)
	}
}
