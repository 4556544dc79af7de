package publish

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// MaxContent bounds what an artifact's content may unpack to: a render
// is megabytes; a registry that answers more is refused, not read on.
const MaxContent = 256 << 20

// Unpack is the objects an artifact Pack made holds, in their order. It
// reads only that format (Flux's config media type, one content layer
// holding File), bounded by MaxContent: anything else is an error
// naming what was found.
func Unpack(img v1.Image) ([]*unstructured.Unstructured, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	if m.Config.MediaType != ConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != ContentMediaType {
		var found []string
		for _, l := range m.Layers {
			found = append(found, string(l.MediaType))
		}
		return nil, fmt.Errorf("not an artifact kubectl fleet published: config %s, layers %v", m.Config.MediaType, found)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	gz, err := gzip.NewReader(io.LimitReader(rc, MaxContent))
	if err != nil {
		return nil, fmt.Errorf("the artifact's content: %w", err)
	}
	data, err := readFile(tar.NewReader(io.LimitReader(gz, MaxContent+1)))
	if err != nil {
		return nil, fmt.Errorf("the artifact's content: %w", err)
	}
	// To its end: the layer's digest (and size) is checked there, and a
	// tar that ends early hides what follows it.
	if _, err := io.Copy(io.Discard, io.LimitReader(rc, MaxContent)); err != nil {
		return nil, fmt.Errorf("the artifact's content: %w", err)
	}
	return decode(data)
}

// readFile is File's bytes from an artifact's tar, which holds nothing
// else.
func readFile(tr *tar.Reader) ([]byte, error) {
	var data []byte
	for {
		h, err := tr.Next()
		switch {
		case errors.Is(err, io.EOF):
			if data == nil {
				return nil, fmt.Errorf("no %s in it", File)
			}
			return data, nil
		case err != nil:
			return nil, err
		case h.Name != File || h.Typeflag != tar.TypeReg || data != nil:
			return nil, fmt.Errorf("it holds %q, which kubectl fleet does not write", h.Name)
		case h.Size > MaxContent:
			return nil, fmt.Errorf("%s is larger than %d MiB", File, MaxContent>>20)
		}
		if data, err = io.ReadAll(tr); err != nil {
			return nil, err
		}
	}
}

// decode reads a stream of YAML documents as objects.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := d.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", File, err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// Pull reads the objects of app's artifact that tag points at; found is
// false when there is no such tag.
func (r Registry) Pull(ctx context.Context, app, tag string) (objs []*unstructured.Unstructured, d v1.Hash, found bool, err error) {
	d, found, err = r.Resolve(ctx, app, tag)
	if err != nil || !found {
		return nil, d, found, err
	}
	objs, err = r.PullDigest(ctx, app, d.String())
	return objs, d, true, err
}

// PullDigest reads the objects of app's artifact d (sha256:…).
func (r Registry) PullDigest(ctx context.Context, app, d string) ([]*unstructured.Unstructured, error) {
	repo, err := r.Repository(app)
	if err != nil {
		return nil, err
	}
	if _, err := v1.NewHash(d); err != nil {
		return nil, fmt.Errorf("artifact %q: %w", d, err)
	}
	img, err := remote.Image(repo.Digest(d), r.options(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("reading %s@%s: %w", repo, d, Plain(err))
	}
	objs, err := Unpack(img)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", repo, d, err)
	}
	return objs, nil
}
