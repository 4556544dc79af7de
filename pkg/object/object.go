// Package object names, normalises and compares Kubernetes objects the
// same way for every engine: identity (Ref, Path), the noise a diff leaves
// out (Normalize, Same), Secret masking, and the kinds that go first (CRDs
// and Namespaces).
package object

import (
	"maps"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubectldiff "k8s.io/kubectl/pkg/cmd/diff"
	"sigs.k8s.io/yaml"
)

// serverAnnotations are added by the API server or kubectl, not by users.
var serverAnnotations = []string{
	"deployment.kubernetes.io/revision",
	"kubectl.kubernetes.io/last-applied-configuration",
}

// CopyMeta returns a copy of o whose metadata is its own and whose other
// fields are o's: for a caller that changes only the copy's metadata
// (namespace, labels) and replaces, never changes, the rest (KeepLive
// copies the object before it writes into it). A fleet's renders are not
// copied whole per apply (a fifth of a 300-cluster no-op's live heap).
func CopyMeta(o *unstructured.Unstructured) *unstructured.Unstructured {
	out := maps.Clone(o.Object)
	if m, ok := o.Object["metadata"]; ok {
		out["metadata"] = runtime.DeepCopyJSONValue(m)
	}
	return &unstructured.Unstructured{Object: out}
}

// InNamespace moves o to namespace ns ("": none) without writing into the
// maps o shares with others (a shell over a render's object): o's root
// and metadata become copies of their own, whose other fields are still
// shared, as CopyMeta's are.
func InNamespace(o *unstructured.Unstructured, ns string) {
	md, _ := o.Object["metadata"].(map[string]any)
	md = maps.Clone(md)
	if md == nil {
		md = map[string]any{}
	}
	if ns == "" {
		delete(md, "namespace")
	} else {
		md["namespace"] = ns
	}
	root := maps.Clone(o.Object)
	if root == nil {
		root = map[string]any{}
	}
	root["metadata"] = md
	o.Object = root
}

// Identity is a new object with o's apiVersion, kind, name and namespace
// alone: for a caller that puts it in its scope (kube.Client.Scope) or
// names it, and reads nothing else of it.
func Identity(o *unstructured.Unstructured) *unstructured.Unstructured {
	meta := map[string]any{"name": o.GetName()}
	if ns := o.GetNamespace(); ns != "" {
		meta["namespace"] = ns
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(), "metadata": meta}}
}

// Normalize returns a copy of o without the fields that are noise in a
// diff: managedFields, resourceVersion, generation, uid, creationTimestamp,
// selfLink, status and annotations the server adds. nil stays nil.
func Normalize(o *unstructured.Unstructured) *unstructured.Unstructured {
	if o == nil {
		return nil
	}
	o = o.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(o.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(o.Object, "status")
	if ann := o.GetAnnotations(); ann != nil {
		for _, a := range serverAnnotations {
			delete(ann, a)
		}
		if len(ann) == 0 {
			unstructured.RemoveNestedField(o.Object, "metadata", "annotations")
		} else {
			o.SetAnnotations(ann)
		}
	}
	return o
}

// Mask hides Secret values the way kubectl diff does: "***" for a value,
// "*** (before)" and "*** (after)" where a value changed. It works on
// copies; non-Secrets come back unchanged.
func Mask(live, merged *unstructured.Unstructured) (*unstructured.Unstructured, *unstructured.Unstructured, error) {
	isSecret := func(o *unstructured.Unstructured) bool {
		return o != nil && o.GetKind() == "Secret" && o.GroupVersionKind().Group == ""
	}
	if !isSecret(live) && !isSecret(merged) {
		return live, merged, nil
	}
	// stringData only exists in objects the server has not seen yet.
	live, merged = maskStringData(live), maskStringData(merged)
	from, to := live, merged
	if from == nil {
		from = &unstructured.Unstructured{Object: map[string]any{}}
	}
	if to == nil {
		to = &unstructured.Unstructured{Object: map[string]any{}}
	}
	m, err := kubectldiff.NewMasker(from.DeepCopy(), to.DeepCopy())
	if err != nil {
		return nil, nil, err
	}
	var outLive, outMerged *unstructured.Unstructured
	if live != nil {
		outLive = m.From().(*unstructured.Unstructured)
	}
	if merged != nil {
		outMerged = m.To().(*unstructured.Unstructured)
	}
	return outLive, outMerged, nil
}

func maskStringData(o *unstructured.Unstructured) *unstructured.Unstructured {
	if o == nil {
		return nil
	}
	if _, ok := o.Object["stringData"]; !ok {
		return o
	}
	masked := MaskSecret(o)
	masked.Object["data"] = o.Object["data"]
	if masked.Object["data"] == nil {
		delete(masked.Object, "data")
	}
	return masked
}

// ToYAML prints an object for a diff; nil is empty.
func ToYAML(o *unstructured.Unstructured) (string, error) {
	if o == nil {
		return "", nil
	}
	b, err := yaml.Marshal(o.Object)
	return string(b), err
}

// Path names an object in diff headers and external-diff folders:
// <kind>.<group>/<namespace>/<name>, without empty parts.
func Path(o *unstructured.Unstructured) string {
	// Written in one allocation: apply asks it of each object several
	// times, on every cluster.
	gvk, ns, name := o.GroupVersionKind(), o.GetNamespace(), o.GetName()
	var b strings.Builder
	b.Grow(len(gvk.Kind) + len(gvk.Group) + len(ns) + len(name) + 3)
	b.WriteString(gvk.Kind)
	if gvk.Group != "" {
		b.WriteByte('.')
		b.WriteString(gvk.Group)
	}
	if ns != "" {
		b.WriteByte('/')
		b.WriteString(ns)
	}
	b.WriteByte('/')
	b.WriteString(name)
	return b.String()
}

// Ref names an object the way kubectl's output does: kind.group/name.
func Ref(o *unstructured.Unstructured) string {
	gvk, name := o.GroupVersionKind(), o.GetName()
	var b strings.Builder
	b.Grow(len(gvk.Kind) + len(gvk.Group) + len(name) + 2)
	for _, r := range gvk.Kind {
		b.WriteRune(unicode.ToLower(r))
	}
	if gvk.Group != "" {
		b.WriteByte('.')
		b.WriteString(gvk.Group)
	}
	b.WriteByte('/')
	b.WriteString(name)
	return b.String()
}

// Namespaces lists the Namespaces among objs.
func Namespaces(objs []*unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GroupVersionKind().Group == "" {
			out[o.GetName()] = true
		}
	}
	return out
}

// CRDKinds lists the kinds the CRDs among objs define.
func CRDKinds(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		out[schema.GroupKind{Group: group, Kind: kind}] = true
	}
	return out
}

// Same reports whether two versions of an object differ only in noise.
func Same(a, b *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(Normalize(a).Object, Normalize(b).Object)
}

// IsFirst reports whether o is applied before the rest of a render (and
// deleted after it): a Namespace or a CustomResourceDefinition.
func IsFirst(o *unstructured.Unstructured) bool {
	gk := o.GroupVersionKind().GroupKind()
	return gk == (schema.GroupKind{Kind: "Namespace"}) || gk == (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"})
}

// DeletedLast orders objects for deletion: Namespaces and CRDs after
// the rest (IsFirst), since deleting them takes their contents along;
// for slices.SortStableFunc.
func DeletedLast(a, b *unstructured.Unstructured) int {
	switch first := IsFirst(a); {
	case first == IsFirst(b):
		return 0
	case first:
		return 1
	}
	return -1
}

// Project returns the parts of live that the fields of shape name: maps
// keep only shape's keys, lists are projected item by item, and values
// come from live. It shows what a render would change in the fields it
// sets, without the fields the server defaulted; nil stays nil.
func Project(live, shape *unstructured.Unstructured) *unstructured.Unstructured {
	if live == nil || shape == nil {
		return live
	}
	out, _ := project(live.Object, shape.Object).(map[string]any)
	return &unstructured.Unstructured{Object: out}
}

func project(live, shape any) any {
	switch s := shape.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return live
		}
		out := make(map[string]any, len(s))
		for k, sv := range s {
			if lv, ok := l[k]; ok {
				out[k] = project(lv, sv)
			}
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok {
			return live
		}
		out := make([]any, len(l))
		for i, lv := range l {
			if i < len(s) {
				lv = project(lv, s[i])
			}
			out[i] = lv
		}
		return out
	}
	return live
}
