package publish_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// The observation checks the cluster's Flux objects against what
// bootstrap writes for its tag: an OCIRepository that points at another
// URL or tag, lost its verify or never verified what it fetched, or a
// Kustomization that reads another source or path, is Tampered, and
// none of it is trusted; as bootstrap wrote them, nothing is.
func TestReadFluxTampered(t *testing.T) {
	r, err := publish.ParseRegistry("oci://registry.example.com/fleets/shop", false)
	if err != nil {
		t.Fatal(err)
	}
	d := &fleet.Delivery{OCI: "oci://registry.example.com/fleets/shop", Signing: &fleet.Signing{KeyEnv: "K"}}
	for _, tc := range []struct {
		name string
		edit func(src, ks *unstructured.Unstructured)
		want string // "" for none
	}{
		{"as bootstrap wrote them", func(src, ks *unstructured.Unstructured) {}, ""},
		{"another URL", func(src, ks *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(src.Object, "oci://evil.example.com/web", "spec", "url")
		}, `the OCIRepository's url is "oci://evil.example.com/web", not "oci://registry.example.com/fleets/shop/web"`},
		{"another tag", func(src, ks *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(src.Object, map[string]any{"tag": "edge-2"}, "spec", "ref")
		}, `the OCIRepository's ref is {"tag":"edge-2"}, not {"tag":"edge-1"}`},
		{"a digest pinned", func(src, ks *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(src.Object, map[string]any{"digest": "sha256:0000"}, "spec", "ref")
		}, `the OCIRepository's ref is {"digest":"sha256:0000"}`},
		{"verify removed", func(src, ks *unstructured.Unstructured) {
			unstructured.RemoveNestedField(src.Object, "spec", "verify")
		}, `the OCIRepository's verify is none, not {"provider":"cosign","secretRef":{"name":"shop-cosign"}}`},
		{"verify with another key", func(src, ks *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(src.Object, "mine", "spec", "verify", "secretRef", "name")
		}, `the OCIRepository's verify is {"provider":"cosign","secretRef":{"name":"mine"}}`},
		{"nothing verified", func(src, ks *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(src.Object, []any{map[string]any{"type": "Ready", "status": "True"}}, "status", "conditions")
		}, "the OCIRepository verified no signature of what it fetched"},
		{"another source", func(src, ks *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(ks.Object, "GitRepository", "spec", "sourceRef", "kind")
		}, `the Kustomization reads {"kind":"GitRepository","name":"shop-web"}, not OCIRepository shop-web`},
		{"another path", func(src, ks *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(ks.Object, "./only-this", "spec", "path")
		}, `the Kustomization applies path "./only-this"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := r.Bootstrap("shop", "web", "edge-1", publish.FollowOf(d, publish.VerifySecretName("shop")))
			if err != nil {
				t.Fatal(err)
			}
			src, ks := objs[0], objs[1]
			_ = unstructured.SetNestedField(src.Object, "edge-1@sha256:1111", "status", "artifact", "revision")
			_ = unstructured.SetNestedSlice(src.Object, []any{map[string]any{"type": "Ready", "status": "True"}, map[string]any{"type": "SourceVerified", "status": "True"}}, "status", "conditions")
			tc.edit(src, ks)
			scheme := runtime.NewScheme()
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{publish.OCIRepositories: "OCIRepositoryList", publish.Kustomizations: "KustomizationList"}, src, ks)
			f, err := r.ReadFlux(context.Background(), dyn, d, "shop", "web", "edge-1")
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(f.Tampered, "; ")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("tampered %q, want %q", got, tc.want)
			}
		})
	}
}
