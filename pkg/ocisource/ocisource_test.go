package ocisource_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/ocisource"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// file is one tar entry to write.
type file struct {
	name, body, link string
	typ              byte
	size             int64 // for a header that says more than body
}

// tgz is files as tar+gzip.
func tgz(t *testing.T, files ...file) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: f.typ, Linkname: f.link}
		if f.typ == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.WriteString(tw, f.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// image is an artifact of config media type config and layers.
func image(t *testing.T, config types.MediaType, layerType types.MediaType, layers ...[]byte) v1.Image {
	t.Helper()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), config)
	for _, l := range layers {
		var err error
		if img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(l, layerType), MediaType: layerType}); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// bed is a registry on loopback and a Fetcher with a cache.
type bed struct {
	t    *testing.T
	host string
	srv  *httptest.Server
	f    *ocisource.Fetcher
}

func newBed(t *testing.T) *bed {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return &bed{t: t, host: strings.TrimPrefix(srv.URL, "http://"), srv: srv, f: &ocisource.Fetcher{CacheDir: t.TempDir(), Keychain: authn.NewMultiKeychain()}}
}

// push pushes img as repo:tag and returns its oci:// reference.
func (b *bed) push(repo, tag string, img v1.Image) string {
	b.t.Helper()
	ref := b.host + "/" + repo + ":" + tag
	if err := remote.Write(mustRef(b.t, ref), img); err != nil {
		b.t.Fatal(err)
	}
	return "oci://" + ref
}

const kustomization = "resources: [cm.yaml]\n"
const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\n"

func TestFetchFormats(t *testing.T) {
	b := newBed(t)
	content := tgz(t, file{name: "base/", typ: tar.TypeDir}, file{name: "base/kustomization.yaml", body: kustomization}, file{name: "base/cm.yaml", body: cm})
	for _, tc := range []struct {
		format    string
		img       v1.Image
		wantError string
	}{
		{"flux", image(t, publish.ConfigMediaType, publish.ContentMediaType, content), ""},
		{"timoni", image(t, ocisource.TimoniConfigMediaType, ocisource.TimoniContentMediaType, content), ""},
		{"tarball", image(t, types.OCIConfigJSON, types.OCILayer, content), ""},
		{"helm", image(t, "application/vnd.cncf.helm.config.v1+json", "application/vnd.cncf.helm.chart.content.v1.tar+gzip", content),
			"not a source kubectl fleet reads: config application/vnd.cncf.helm.config.v1+json, layers [application/vnd.cncf.helm.chart.content.v1.tar+gzip]"},
		{"two plain layers", image(t, types.OCIConfigJSON, types.OCILayer, content, content), "not a source kubectl fleet reads"},
	} {
		ref := b.push("bases/"+strings.ReplaceAll(tc.format, " ", "-"), "v1", tc.img)
		got, err := b.f.Fetch(context.Background(), ocisource.Spec{Ref: ref})
		if tc.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantError) {
				t.Errorf("%s: got %v, want %q", tc.format, err, tc.wantError)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		d, _ := tc.img.Digest()
		if got.Format != tc.format || got.Digest != d.String() || got.Ref != "oci://"+b.host+"/bases/"+tc.format+"@"+d.String() {
			t.Errorf("%s: %+v", tc.format, got)
		}
		if data, err := os.ReadFile(filepath.Join(got.Dir, "base", "cm.yaml")); err != nil || string(data) != cm {
			t.Errorf("%s: base/cm.yaml: %q, %v", tc.format, data, err)
		}
	}
}

// Every hostile archive is refused before any file is written.
func TestFetchRefusesHostileArchives(t *testing.T) {
	b := newBed(t)
	var bomb bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&bomb, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	_ = tw.WriteHeader(&tar.Header{Name: "zeros", Mode: 0o644, Size: 2 << 20, Typeflag: tar.TypeReg})
	_, _ = tw.Write(make([]byte, 2<<20))
	_ = tw.Close()
	_ = gz.Close()
	// A GNU sparse file: a header, no data, as large as it says once its
	// holes are read as zeros.
	var sparse bytes.Buffer
	sgz := gzip.NewWriter(&sparse)
	stw := tar.NewWriter(sgz)
	_ = stw.WriteHeader(&tar.Header{Name: "holes", Typeflag: tar.TypeGNUSparse, Format: tar.FormatGNU, Mode: 0o644})
	_ = stw.Close()
	_ = sgz.Close()
	for _, tc := range []struct {
		name  string
		layer []byte
		want  string
	}{
		{"absolute", tgz(t, file{name: "/etc/passwd", body: "x"}), "an absolute path"},
		{"dotdot", tgz(t, file{name: "base/../../escape.yaml", body: "x"}), "leaves its folder"},
		{"symlink out", tgz(t, file{name: "base/kustomization.yaml", body: kustomization}, file{name: "base/cm.yaml", typ: tar.TypeSymlink, link: "/etc/shadow"}), "a link to \"/etc/shadow\""},
		{"hard link", tgz(t, file{name: "l", typ: tar.TypeLink, link: "../x"}), "links are not unpacked"},
		{"device", tgz(t, file{name: "dev", typ: tar.TypeChar}), "neither a file nor a folder"},
		{"fifo", tgz(t, file{name: "fifo", typ: tar.TypeFifo}), "neither a file nor a folder"},
		{"gzip bomb", bomb.Bytes(), "unpacks to more than 1 MiB"},
		{"not gzip", []byte("plain text"), "not tar+gzip"},
		{"sparse", sparse.Bytes(), "a sparse file"},
		{"the same name twice", tgz(t, file{name: "a.yaml", body: "x"}, file{name: "a.yaml", body: "y"}), `it holds "a.yaml" twice`},
		{"names that differ in case", tgz(t, file{name: "base/A.yaml", body: "x"}, file{name: "base/a.yaml", body: "y"}), "one file where case does not count"},
		{"a Windows device name", tgz(t, file{name: "base/con.yaml", body: "x"}), "a reserved device name (con.yaml)"},
		{"a name Windows refuses", tgz(t, file{name: "base/a:b.yaml", body: "x"}), "a character not allowed in a file name"},
		{"a trailing dot", tgz(t, file{name: "base./cm.yaml", body: "x"}), "ending in a dot or a space"},
	} {
		ref := b.push("hostile/"+strings.ToLower(strings.ReplaceAll(tc.name, " ", "-")), "v1", image(t, publish.ConfigMediaType, publish.ContentMediaType, tc.layer))
		f := &ocisource.Fetcher{CacheDir: t.TempDir(), Keychain: authn.NewMultiKeychain(), Limits: ocisource.Limits{Compressed: 1 << 20, Content: 1 << 20, Files: 100}}
		_, err := f.Fetch(context.Background(), ocisource.Spec{Ref: ref})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
		if left, _ := filepath.Glob(filepath.Join(f.CacheDir, "*", "*")); len(left) > 0 {
			t.Errorf("%s: written although refused: %v", tc.name, left)
		}
	}
}

// A manifest that lists layers larger together than the bound (one
// blob many times, each under it) is refused before any is downloaded.
func TestFetchBoundsLayersTogether(t *testing.T) {
	b := newBed(t)
	noise := make([]byte, 400<<10)
	_, _ = rand.Read(noise)
	layer := tgz(t, file{name: "noise", body: string(noise)})
	ref := b.push("hostile/many", "v1", image(t, ocisource.TimoniConfigMediaType, ocisource.TimoniContentMediaType, layer, layer, layer))
	f := &ocisource.Fetcher{CacheDir: t.TempDir(), Keychain: authn.NewMultiKeychain(), Limits: ocisource.Limits{Compressed: 1 << 20, Content: 8 << 20, Files: 100}}
	if _, err := f.Fetch(context.Background(), ocisource.Spec{Ref: ref}); err == nil || !strings.Contains(err.Error(), "its layers are more than 1 MiB together") {
		t.Errorf("three layers of 400 KiB under a bound of 1 MiB: %v", err)
	}
}

func signer(t *testing.T) (*publish.Signer, []byte) {
	t.Helper()
	s, err := publish.LoadSigner(registrytest.SigningKey(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := s.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return s, pub
}

// A key asks for a signature: signed by it is fetched, unsigned or
// signed by another key is refused, naming what was expected.
func TestFetchVerifies(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	s, pub := signer(t)
	_, otherPub := signer(t)
	img := image(t, publish.ConfigMediaType, publish.ContentMediaType, tgz(t, file{name: "cm.yaml", body: cm}))
	ref := b.push("signed/web", "v1", img)
	if _, err := b.f.Fetch(ctx, ocisource.Spec{Ref: ref, Key: pub, KeyName: "cosign.pub"}); err == nil || !strings.Contains(err.Error(), "it is not signed") || !strings.Contains(err.Error(), "wanted a signature by cosign.pub") {
		t.Fatalf("unsigned: %v", err)
	}
	reg, err := publish.ParseRegistry("oci://"+b.host+"/signed", false)
	if err != nil {
		t.Fatal(err)
	}
	reg.Keychain = authn.NewMultiKeychain()
	d, _ := img.Digest()
	if err := reg.Sign(ctx, "web", d, s, publish.Claim{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.f.Fetch(ctx, ocisource.Spec{Ref: ref, Key: otherPub, KeyName: "other.pub"}); err == nil || !strings.Contains(err.Error(), "the signature does not verify") {
		t.Fatalf("signed by another key: %v", err)
	}
	run2 := &ocisource.Fetcher{CacheDir: b.f.CacheDir, Keychain: authn.NewMultiKeychain()} // a run answers once per key
	got, err := run2.Fetch(ctx, ocisource.Spec{Ref: ref, Key: pub, KeyName: "cosign.pub"})
	if err != nil || got.SignedBy != "cosign.pub" {
		t.Fatalf("signed: %+v, %v", got, err)
	}
	// Verified once, in the cache: a later run needs no registry.
	b.srv.Close()
	later := &ocisource.Fetcher{CacheDir: b.f.CacheDir, Keychain: authn.NewMultiKeychain()}
	if got, err := later.Fetch(ctx, ocisource.Spec{Ref: ref, Digest: d.String(), Key: pub, KeyName: "cosign.pub"}); err != nil || got.Dir == "" {
		t.Fatalf("pinned, in the cache, registry down: %+v, %v", got, err)
	}
	if _, err := later.Fetch(ctx, ocisource.Spec{Ref: ref, Digest: d.String(), Key: otherPub, KeyName: "other.pub"}); err == nil {
		t.Fatal("the cache vouched for a key it never verified")
	}
}

// A tag is resolved once per run: every cluster renders the same
// artifact even if the tag moves meanwhile.
func TestFetchOncePerRun(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	ref := b.push("once/web", "v1", image(t, publish.ConfigMediaType, publish.ContentMediaType, tgz(t, file{name: "cm.yaml", body: cm})))
	first, err := b.f.Fetch(ctx, ocisource.Spec{Ref: ref})
	if err != nil {
		t.Fatal(err)
	}
	b.push("once/web", "v1", image(t, publish.ConfigMediaType, publish.ContentMediaType, tgz(t, file{name: "cm.yaml", body: cm + "data: {moved: \"yes\"}\n"})))
	again, err := b.f.Fetch(ctx, ocisource.Spec{Ref: ref})
	if err != nil || again.Digest != first.Digest {
		t.Fatalf("the same run: %s, then %s (%v)", first.Digest, again.Digest, err)
	}
	next := &ocisource.Fetcher{CacheDir: t.TempDir(), Keychain: authn.NewMultiKeychain()}
	if moved, err := next.Fetch(ctx, ocisource.Spec{Ref: ref}); err != nil || moved.Digest == first.Digest {
		t.Fatalf("the next run sees the tag where it is now: %s (%v)", moved.Digest, err)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// staticKeychain answers one set of credentials for every registry.
type staticKeychain struct{ user, password string }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) {
	return authn.FromConfig(authn.AuthConfig{Username: k.user, Password: k.password}), nil
}

// A wrong credential is the registry's refusal, said plainly, and the
// credential is never in it.
func TestFetchWrongCredential(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "right" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	img := image(t, publish.ConfigMediaType, publish.ContentMediaType, tgz(t, file{name: "cm.yaml", body: cm}))
	if err := remote.Write(mustRef(t, host+"/private/web:v1"), img, remote.WithAuth(&authn.Basic{Username: "ci", Password: "right"})); err != nil {
		t.Fatal(err)
	}
	f := &ocisource.Fetcher{CacheDir: t.TempDir(), Keychain: staticKeychain{"ci", "wr0ng-s3cret"}}
	_, err := f.Fetch(context.Background(), ocisource.Spec{Ref: "oci://" + host + "/private/web:v1"})
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wr0ng-s3cret") {
		t.Fatalf("a wrong credential: %v", err)
	}
	f = &ocisource.Fetcher{CacheDir: t.TempDir(), Keychain: staticKeychain{"ci", "right"}}
	if _, err := f.Fetch(context.Background(), ocisource.Spec{Ref: "oci://" + host + "/private/web:v1"}); err != nil {
		t.Fatalf("the right credential: %v", err)
	}
}

// The cache is verified by the artifact's digest each time it is read,
// with no network: a folder someone changed (a file's content, a file
// added) is unpacked again from the blobs kept beside it; blobs someone
// changed are pulled again; and a folder someone put where an artifact
// is unpacked, before any run pulled it, is replaced by the download.
func TestFetchCacheVerifiedOnRead(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	img := image(t, publish.ConfigMediaType, publish.ContentMediaType, tgz(t, file{name: "base/", typ: tar.TypeDir}, file{name: "base/kustomization.yaml", body: kustomization}, file{name: "base/cm.yaml", body: cm}))
	d, _ := img.Digest()
	evil := "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\n"

	// Someone's folder, there before any pull: the download replaces it.
	dir := filepath.Join(b.f.CacheDir, d.Algorithm, d.Hex)
	if err := os.MkdirAll(filepath.Join(dir, "base"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "base", "cm.yaml"), []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := b.push("cached/web", "v1", img)
	got, err := b.f.Fetch(ctx, ocisource.Spec{Ref: ref})
	if err != nil || got.Dir != dir {
		t.Fatalf("fetch: %+v, %v", got, err)
	}
	holds := func(when, want string) {
		t.Helper()
		if data, err := os.ReadFile(filepath.Join(dir, "base", "cm.yaml")); err != nil || string(data) != want {
			t.Fatalf("%s: base/cm.yaml holds %q (%v)", when, data, err)
		}
	}
	holds("a folder there before the pull", cm)

	// The registry gone, the folder changed: unpacked again from the
	// blobs, by the digest fleet.lock pins.
	b.srv.Close()
	for _, change := range []func(){
		func() { _ = os.WriteFile(filepath.Join(dir, "base", "cm.yaml"), []byte(evil), 0o644) },
		func() { _ = os.WriteFile(filepath.Join(dir, "base", "extra.yaml"), []byte(evil), 0o644) },
		func() { _ = os.Remove(filepath.Join(dir, "base", "kustomization.yaml")) },
	} {
		change()
		run := &ocisource.Fetcher{CacheDir: b.f.CacheDir, Keychain: authn.NewMultiKeychain()}
		if _, err := run.Fetch(ctx, ocisource.Spec{Ref: ref, Digest: d.String()}); err != nil {
			t.Fatalf("offline, the folder changed: %v", err)
		}
		holds("offline, the folder changed", cm)
		if _, err := os.Stat(filepath.Join(dir, "base", "extra.yaml")); err == nil {
			t.Fatal("a file someone added to the cache is still there")
		}
		if _, err := os.Stat(filepath.Join(dir, "base", "kustomization.yaml")); err != nil {
			t.Fatal("a file someone removed from the cache is still missing")
		}
	}

	// The blobs changed too: nothing in the cache is trusted, and with
	// the registry down the fetch fails rather than read them.
	blobs, _ := filepath.Glob(filepath.Join(dir+".blobs", "*"))
	for _, p := range blobs {
		if filepath.Base(p) != "manifest" {
			_ = os.WriteFile(p, []byte("not the layer"), 0o644)
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "base", "cm.yaml"), []byte(evil), 0o644)
	run := &ocisource.Fetcher{CacheDir: b.f.CacheDir, Keychain: authn.NewMultiKeychain()}
	if _, err := run.Fetch(ctx, ocisource.Spec{Ref: ref, Digest: d.String()}); err == nil {
		t.Fatal("the blobs changed and the registry down, the cache was read")
	}
}
