// Package publish delivers a cluster's render through a registry instead
// of the cluster's API server: the objects an app renders for a cluster
// are packed as a Flux OCI artifact (the format `flux push artifact`
// writes, which Flux's source-controller pulls through an OCIRepository
// and kustomize-controller applies), pushed by digest, and the cluster's
// tag moved to it only when its wave starts. Clusters behind NAT, in
// air-gapped sites or on private endpoints pull; nothing writes to them.
package publish

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/encode"
)

// The media types and annotations of a Flux artifact (fluxcd/pkg/oci:
// CanonicalConfigMediaType, CanonicalContentMediaType, and the OCI
// image-spec annotations Flux reads back as the artifact's origin).
const (
	ConfigMediaType  types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	ContentMediaType types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"

	SourceAnnotation   = "org.opencontainers.image.source"
	RevisionAnnotation = "org.opencontainers.image.revision"
)

// File is the one file an artifact holds: kustomize-controller applies
// every manifest under its path (it writes a kustomization.yaml for a
// folder that has none).
const File = "manifests.yaml"

// Origin is where a render came from, as Flux shows it: the source
// (the fleet repository's URL) and its revision ("main@sha1:…").
type Origin struct {
	Source, Revision string
}

// Pack is the Flux artifact of objects: one layer, a tar.gz holding File
// with the objects in their order, written so that the same objects give
// the same bytes (no times, owners or names that vary), hence the same
// digest: identical renders share their blobs in the registry. The
// origin is in the manifest's annotations, so two clusters whose render
// is the same share the layer, not necessarily the manifest.
func Pack(objects []*unstructured.Unstructured, origin Origin) (v1.Image, error) {
	var docs []byte
	for i, o := range objects {
		if i > 0 {
			docs = append(docs, "---\n"...)
		}
		var err error
		if docs, err = encode.AppendYAML(docs, o.Object); err != nil {
			return nil, fmt.Errorf("packing %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	content, err := tarGz(File, docs)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(content)), nil
	}, tarball.WithMediaType(ContentMediaType))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ConfigMediaType)
	ann := map[string]string{}
	if origin.Source != "" {
		ann[SourceAnnotation] = origin.Source
	}
	if origin.Revision != "" {
		ann[RevisionAnnotation] = origin.Revision
	}
	if len(ann) > 0 {
		img = mutate.Annotations(img, ann).(v1.Image)
	}
	return mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: ContentMediaType})
}

// tarGz is a gzipped tar of one regular file, with nothing in its
// headers that varies between two packings of the same data.
func tarGz(name string, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Refuse is why the render of app for cluster must not be published,
// or nil: a registry keeps what it is given, for whoever may pull, so no
// Secret goes there, nor an object holding a value decrypted for the run
// (decrypted). Flux decrypts SOPS files on the cluster itself: publish
// them encrypted, from a source that does not decrypt them.
func Refuse(cluster, app string, objects []*unstructured.Unstructured, decrypted bool) error {
	for _, o := range objects {
		if o.GetKind() == "Secret" && o.GetAPIVersion() == "v1" {
			return fmt.Errorf("cluster %s is delivered through a registry, and app %s renders Secret %s: a registry keeps a Secret's values for whoever may pull; nothing was published", cluster, app, o.GetName())
		}
	}
	if decrypted {
		return fmt.Errorf("cluster %s is delivered through a registry, and app %s renders values decrypted with SOPS: a registry keeps them in the clear for whoever may pull; nothing was published", cluster, app)
	}
	return nil
}
