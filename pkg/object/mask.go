package object

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Masked is what a Secret value is replaced with, as kubectl diff does.
const Masked = "***"

// MaskSecret returns o with every value of a Secret's data and stringData
// replaced by "***"; any other object is returned as it is.
func MaskSecret(o *unstructured.Unstructured) *unstructured.Unstructured {
	if o.GetKind() != "Secret" || o.GroupVersionKind().Group != "" {
		return o
	}
	o = o.DeepCopy()
	for _, field := range []string{"data", "stringData"} {
		m, ok := o.Object[field].(map[string]any)
		if !ok {
			continue
		}
		for k := range m {
			m[k] = Masked
		}
	}
	return o
}
