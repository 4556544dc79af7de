package kube

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// fakeGetter serves objects by "kind/namespace/name".
type fakeGetter map[string]*unstructured.Unstructured

func (f fakeGetter) Get(_ context.Context, _, kind, namespace, name string) (*unstructured.Unstructured, error) {
	if o, ok := f[kind+"/"+namespace+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(kind) + "s"}, name)
}

func TestReadAttributes(t *testing.T) {
	g := fakeGetter{
		"Namespace//kube-system":     {Object: map[string]any{"metadata": map[string]any{"name": "kube-system", "uid": "uid-1"}}},
		"ConfigMap/kube-system/info": {Object: map[string]any{"data": map[string]any{"region": "eu", "zones": "a,b"}}},
	}
	ns := fleet.AttributeFrom{APIVersion: "v1", Kind: "Namespace", Name: "kube-system", Attributes: map[string]string{"clusterUID": "{.metadata.uid}"}}
	cm := fleet.AttributeFrom{APIVersion: "v1", Kind: "ConfigMap", Namespace: "kube-system", Name: "info", Attributes: map[string]string{"region": "{.data.region}", "zones": "{.data.zones}"}}
	missing := fleet.AttributeFrom{APIVersion: "v1", Kind: "ConfigMap", Namespace: "x", Name: "nope", Attributes: map[string]string{"a": "{.data.a}"}}
	missingField := fleet.AttributeFrom{APIVersion: "v1", Kind: "ConfigMap", Namespace: "kube-system", Name: "info", Attributes: map[string]string{"a": "{.data.nope}"}}

	got, err := ReadAttributes(context.Background(), g, []fleet.AttributeFrom{ns, cm})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"clusterUID": "uid-1", "region": "eu", "zones": "a,b"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	for _, tt := range []struct {
		name string
		from fleet.AttributeFrom
		want string
	}{
		{"missing object", missing, `attributesFrom ConfigMap x/nope: configmaps "nope" not found`},
		{"missing field", missingField, "attributesFrom ConfigMap kube-system/info: attribute a: {.data.nope} finds nothing"},
	} {
		_, err := ReadAttributes(context.Background(), g, []fleet.AttributeFrom{tt.from})
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
		tt.from.Optional = true
		got, err := ReadAttributes(context.Background(), g, []fleet.AttributeFrom{tt.from})
		if err != nil || len(got) != 0 {
			t.Errorf("%s, optional: %v, %v", tt.name, got, err)
		}
	}
}
