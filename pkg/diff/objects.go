package diff

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubectldiff "k8s.io/kubectl/pkg/cmd/diff"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// serverAnnotations are added by the API server or kubectl, not by users.
var serverAnnotations = []string{
	"deployment.kubernetes.io/revision",
	"kubectl.kubernetes.io/last-applied-configuration",
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
	masked := output.MaskSecret(o)
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
	gvk := o.GroupVersionKind()
	parts := []string{gvk.Kind}
	if gvk.Group != "" {
		parts[0] += "." + gvk.Group
	}
	if ns := o.GetNamespace(); ns != "" {
		parts = append(parts, ns)
	}
	return strings.Join(append(parts, o.GetName()), "/")
}

// Ref names an object the way kubectl's output does: kind.group/name.
func Ref(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	kind := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		kind += "." + gvk.Group
	}
	return fmt.Sprintf("%s/%s", kind, o.GetName())
}
