package object

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMaskSecret(t *testing.T) {
	s := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "data": map[string]any{"k": "c2VjcmV0"}, "stringData": map[string]any{"p": "secret"}}}
	m := MaskSecret(s)
	if m.Object["data"].(map[string]any)["k"] != Masked || m.Object["stringData"].(map[string]any)["p"] != Masked {
		t.Errorf("not masked: %v", m.Object)
	}
	if s.Object["data"].(map[string]any)["k"] != "c2VjcmV0" {
		t.Error("MaskSecret changed its input")
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"}}}
	if MaskSecret(cm).Object["data"].(map[string]any)["k"] != "v" {
		t.Error("a ConfigMap was masked")
	}
}
