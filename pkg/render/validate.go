package render

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks one cluster's rendered objects without a cluster: names,
// namespaces, labels and annotations are well formed, no built-in
// cluster-scoped kind carries a namespace, and no object is rendered twice.
// It returns every problem found.
func Validate(objs []*unstructured.Unstructured) []error {
	var errs []error
	seen := map[string]bool{}
	scoped := ClusterScoped(objs)
	for _, o := range objs {
		ref := ObjectRef(o)
		gvk := o.GroupVersionKind()
		key := gvk.Group + "/" + gvk.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
		if seen[key] {
			errs = append(errs, fmt.Errorf("%s: rendered more than once", ref))
		}
		seen[key] = true
		if msgs := path.IsValidPathSegmentName(o.GetName()); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: invalid name: %s", ref, strings.Join(msgs, "; ")))
		} else if len(o.GetName()) > validation.DNS1123SubdomainMaxLength {
			errs = append(errs, fmt.Errorf("%s: name longer than %d characters", ref, validation.DNS1123SubdomainMaxLength))
		}
		if ns := o.GetNamespace(); ns != "" {
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s: invalid namespace %q: %s", ref, ns, strings.Join(msgs, "; ")))
			}
			if scoped(gvk.GroupKind()) {
				errs = append(errs, fmt.Errorf("%s: a %s has no namespace", ref, o.GetKind()))
			}
		}
		fld := field.NewPath("metadata")
		for _, e := range metav1validation.ValidateLabels(o.GetLabels(), fld.Child("labels")) {
			errs = append(errs, fmt.Errorf("%s: %s", ref, e))
		}
		for _, e := range validateAnnotationKeys(o.GetAnnotations(), fld.Child("annotations")) {
			errs = append(errs, fmt.Errorf("%s: %s", ref, e))
		}
	}
	return errs
}

func validateAnnotationKeys(annotations map[string]string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k := range annotations {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(fld, k, msg))
		}
	}
	return errs
}
