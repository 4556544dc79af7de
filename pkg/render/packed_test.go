package render

import (
	"math"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPacked: objects packed read back as they were, value for value
// and type for type (an integer stays int64, a float float64, however
// whole), each of its own; what JSON cannot hold is refused.
func TestPacked(t *testing.T) {
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "labels": map[string]any{}}, "data": map[string]any{"ünï": "çødé ✓", "bytes": "\xff\xfe not UTF-8", "empty": ""}}},
		{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "annotations": nil},
			"spec": map[string]any{"replicas": int64(3), "big": int64(math.MaxInt64), "neg": int64(-7), "whole": float64(2), "ratio": 0.25, "tiny": 1e-300, "on": true, "off": false,
				"list": []any{}, "nested": []any{map[string]any{"a": []any{int64(1), "b", nil, 1.5}}}}}},
	}
	p, err := pack(objs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := p.objects()
	if err != nil {
		t.Fatal(err)
	}
	for i := range objs {
		if !reflect.DeepEqual(objs[i].Object, back[i].Object) {
			t.Errorf("object %d read back:\n%#v\nwant:\n%#v", i, back[i].Object, objs[i].Object)
		}
	}
	again, _ := p.objects()
	again[0].SetName("changed")
	if back[0].GetName() != "cm" {
		t.Error("two reads share their maps")
	}
	if _, err := pack([]*unstructured.Unstructured{{Object: map[string]any{"kind": "X", "metadata": map[string]any{"name": "x"}, "v": math.NaN()}}}); err == nil {
		t.Error("a NaN was packed")
	}
}
