package publish_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// TestPull reads back what was published, by tag.
func TestPull(t *testing.T) {
	var c counting
	r := c.registryOf(t)
	ctx := context.Background()
	if _, _, found, err := r.Pull(ctx, "web", "p1"); found || err != nil {
		t.Fatalf("no tag: found %v, %v", found, err)
	}
	objs := []*unstructured.Unstructured{cm("a", "1"), cm("b", "2")}
	img, _ := publish.Pack(objs, publish.Origin{})
	d, err := r.Push(ctx, "web", img)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Tag(ctx, "web", "p1", d); err != nil {
		t.Fatal(err)
	}
	got, gd, found, err := r.Pull(ctx, "web", "p1")
	if err != nil || !found || gd != d {
		t.Fatalf("pull: %s %v %v", gd, found, err)
	}
	if diff := cmp.Diff(objs, got); diff != "" {
		t.Errorf("pulled objects differ (-pushed +pulled):\n%s", diff)
	}
	none, _ := publish.Pack(nil, publish.Origin{})
	if got, err := publish.Unpack(none); err != nil || len(got) != 0 {
		t.Errorf("the artifact of nothing: %v, %v", got, err)
	}
}

// TestUnpackRefuses what kubectl fleet never writes: other media types,
// other files, links, and content past the bound.
func TestUnpackRefuses(t *testing.T) {
	layer := func(entries ...tar.Header) v1.Layer {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		for _, h := range entries {
			tw.WriteHeader(&h)
			io.WriteString(tw, strings.Repeat("x", int(min(h.Size, 16)))) // a header past the bound is refused before its data
		}
		tw.Close()
		gz.Close()
		b := buf.Bytes()
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(publish.ContentMediaType))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	image := func(config types.MediaType, layers ...v1.Layer) v1.Image {
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), config)
		for _, l := range layers {
			mt, _ := l.MediaType()
			img, _ = mutate.Append(img, mutate.Addendum{Layer: l, MediaType: mt})
		}
		return img
	}
	file := tar.Header{Name: publish.File, Typeflag: tar.TypeReg, Size: 3, Mode: 0o644}
	for _, tt := range []struct {
		name string
		img  v1.Image
		want string
	}{
		{"an image", image("application/vnd.oci.image.config.v1+json", layer(file)), "not an artifact kubectl fleet published: config application/vnd.oci.image.config.v1+json"},
		{"two layers", image(publish.ConfigMediaType, layer(file), layer(file)), "not an artifact kubectl fleet published"},
		{"another file", image(publish.ConfigMediaType, layer(tar.Header{Name: "../etc/passwd", Typeflag: tar.TypeReg, Size: 3})), `holds "../etc/passwd"`},
		{"a link", image(publish.ConfigMediaType, layer(tar.Header{Name: publish.File, Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})), `holds "manifests.yaml"`},
		{"twice", image(publish.ConfigMediaType, layer(file, file)), `holds "manifests.yaml"`},
		{"empty", image(publish.ConfigMediaType, layer()), "no manifests.yaml in it"},
		{"past the bound", image(publish.ConfigMediaType, layer(tar.Header{Name: publish.File, Typeflag: tar.TypeReg, Size: publish.MaxContent + 1})), "larger than 256 MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := publish.Unpack(tt.img); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// A registry that answers a layer with bytes its digest does not name
// after the tar's end (where a reader that stops early never looks) is
// refused: Unpack reads the layer to its end, where its digest is
// checked.
func TestUnpackChecksTheLayersDigest(t *testing.T) {
	var tamper atomic.Bool
	srv := httptest.NewServer(tamperedBlobs(registry.New(registry.Logger(log.New(io.Discard, "", 0))), &tamper))
	t.Cleanup(srv.Close)
	r, err := publish.ParseRegistry("oci://"+strings.TrimPrefix(srv.URL, "http://")+"/fleets/prod", true)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	img, _ := publish.Pack([]*unstructured.Unstructured{cm("a", "1")}, publish.Origin{})
	d, err := r.Push(ctx, "web", img)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.PullDigest(ctx, "web", d.String()); err != nil {
		t.Fatalf("as pushed: %v", err)
	}
	tamper.Store(true)
	if objs, err := r.PullDigest(ctx, "web", d.String()); err == nil {
		t.Fatalf("a layer with bytes its digest does not name was read: %v", objs)
	}
}

// tamperedBlobs changes the last byte of every blob next answers while
// tamper is set.
func tamperedBlobs(next http.Handler, tamper *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !tamper.Load() || req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/blobs/") {
			next.ServeHTTP(w, req)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		if len(body) > 0 {
			body[len(body)-1] ^= 0xff // the gzip trailer's last byte: after the tar's end
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}
