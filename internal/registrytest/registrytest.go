// Package registrytest is an OCI registry on loopback for unit tests
// (go-containerregistry's, in memory), and deliveries to it.
package registrytest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// Delivery starts a registry until the test ends, and returns a
// delivery to the repository base fleets/prod there, and its Registry.
func Delivery(t testing.TB) (*fleet.Delivery, publish.Registry) {
	t.Helper()
	return DeliveryWith(t, func(h http.Handler) http.Handler { return h })
}

// DeliveryWith is Delivery with the registry behind wrap: requests
// seen, delayed or refused.
func DeliveryWith(t testing.TB, wrap func(http.Handler) http.Handler) (*fleet.Delivery, publish.Registry) {
	t.Helper()
	srv := httptest.NewServer(wrap(registry.New(registry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(srv.Close)
	d := &fleet.Delivery{OCI: "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/fleets/prod", Insecure: true}
	reg, err := publish.For(nil, d)
	if err != nil {
		t.Fatal(err)
	}
	return d, reg
}

// SignedDelivery is Delivery with a signing key (a file of a new key,
// in a fleet of its own folder): its Registry signs and verifies
// records.
func SignedDelivery(t testing.TB) (*fleet.Fleet, *fleet.Delivery, publish.Registry) {
	t.Helper()
	d, _ := Delivery(t)
	f := &fleet.Fleet{Dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(f.Dir, "cosign.key"), SigningKey(t), 0o600); err != nil {
		t.Fatal(err)
	}
	d.Signing = &fleet.Signing{Key: "cosign.key"}
	reg, err := publish.For(f, d)
	if err != nil {
		t.Fatal(err)
	}
	return f, d, reg
}

// KeylessDelivery is d of SignedDelivery as a machine without its
// private key has it: the key's variable unset, its public half written
// as cosign.pub in f's folder and named by signing.publicKey.
func KeylessDelivery(t testing.TB, f *fleet.Fleet, d *fleet.Delivery) *fleet.Delivery {
	t.Helper()
	signer, err := publish.SignerOf(f, d.Signing)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signer.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.Dir, "cosign.pub"), pub, 0o644); err != nil {
		t.Fatal(err)
	}
	keyless := *d
	keyless.Signing = &fleet.Signing{KeyEnv: "KUBECTL_FLEET_NO_SUCH_KEY", PublicKey: "cosign.pub"}
	return &keyless
}

// Pushed packs objs as an artifact, pushes it to app's repository, and
// returns its digest.
func Pushed(t testing.TB, reg publish.Registry, app string, objs ...*unstructured.Unstructured) v1.Hash {
	t.Helper()
	img, err := publish.Pack(objs, publish.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	dg, err := reg.Push(context.Background(), app, img)
	if err != nil {
		t.Fatal(err)
	}
	return dg
}

// FluxArtifact is files (name: content, in name order) packed as flux
// push artifact packs a folder: Flux's config media type and one
// tar+gzip content layer.
func FluxArtifact(files map[string][]byte) (v1.Image, error) {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[name]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), publish.ConfigMediaType)
	return mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(b.Bytes(), publish.ContentMediaType), MediaType: publish.ContentMediaType})
}

// SigningKey is a new ECDSA P-256 private key as PKCS #8 PEM: what a
// delivery's signing and cosign sign --key take.
func SigningKey(t testing.TB) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
