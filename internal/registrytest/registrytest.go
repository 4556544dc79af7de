// Package registrytest is an OCI registry on loopback for unit tests
// (go-containerregistry's, in memory), and deliveries to it.
package registrytest

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// Delivery starts a registry until the test ends, and returns a
// delivery to the repository base fleets/prod there, and its Registry.
func Delivery(t testing.TB) (*fleet.Delivery, publish.Registry) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	d := &fleet.Delivery{OCI: "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/fleets/prod", Insecure: true}
	reg, err := publish.For(d)
	if err != nil {
		t.Fatal(err)
	}
	return d, reg
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
