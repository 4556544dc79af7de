package render

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// NamespacesToCreate is the rule of apps[].createNamespace over one
// cluster's targets, in order: create[i] is the Namespace target i's app
// asks to be created (""), rendered[i] the Namespaces its render has. It
// says, for each target, the Namespace to put first in its render: the
// one it asks for, when no render of the cluster has it and no target
// before it was given it; "" for none. apply, diff, status and render
// (its stream and --output-dir) all ask it, so that all of them send or
// show the same objects.
func NamespacesToCreate(create []string, rendered [][]string) []string {
	have := map[string]bool{}
	for _, names := range rendered {
		for _, n := range names {
			have[n] = true
		}
	}
	out := make([]string, len(create))
	for i, ns := range create {
		if ns != "" && !have[ns] {
			have[ns] = true
			out[i] = ns
		}
	}
	return out
}

// NamespacesIn are the names of the v1 Namespaces among objs.
func NamespacesIn(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1" {
			out = append(out, o.GetName())
		}
	}
	return out
}

// Namespace is a Namespace object, as createNamespace makes it.
func Namespace(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
}
