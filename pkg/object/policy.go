package object

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Per-object policies, set as annotations on the rendered objects (read
// from the live object for prune, since that is the one being deleted).
const (
	// PruneAnnotation "disabled": never pruned and never deleted by
	// "kubectl fleet delete"; when no longer rendered the object is left in
	// place and leaves the app's set. For PVCs and Namespaces with data.
	// "always": pruned and deleted even when kubectl fleet did not create
	// it (it adopted an object that existed), and, for a CRD or a
	// Namespace, even when others' custom resources or objects remain,
	// which go with it.
	PruneAnnotation = "fleet.kubectl.io/prune"
	// ApplyAnnotation "create-only": created when missing, never updated.
	ApplyAnnotation = "fleet.kubectl.io/apply"
	// ForceAnnotation "enabled": a change the server refuses because a
	// field is immutable deletes the object and creates it again.
	ForceAnnotation = "fleet.kubectl.io/force"
	// PhaseAnnotation "<integer>" (default 0, may be negative): the objects
	// of an app are applied phase by phase, each healthy before the next
	// starts, like Argo CD's sync waves. CRDs and Namespaces go first.
	PhaseAnnotation = "fleet.kubectl.io/phase"
)

// Phase returns an object's phase; 0 when it has none or it is invalid
// (ValidatePolicies refuses those).
func Phase(o *unstructured.Unstructured) int {
	n, _ := strconv.Atoi(annotation(o, PhaseAnnotation))
	return n
}

// policies are the values each policy annotation accepts.
var policies = map[string][]string{
	PruneAnnotation: {"disabled", "enabled", "always"},
	ApplyAnnotation: {"create-only", "always"},
	ForceAnnotation: {"enabled", "disabled"},
}

// PruneDisabled reports fleet.kubectl.io/prune: disabled.
func PruneDisabled(o *unstructured.Unstructured) bool {
	return annotation(o, PruneAnnotation) == "disabled"
}

// PruneAlways reports fleet.kubectl.io/prune: always: the user asks for
// the object's deletion even where kubectl fleet would leave it (adopted,
// or a CRD or Namespace holding what is not the app's).
func PruneAlways(o *unstructured.Unstructured) bool {
	return annotation(o, PruneAnnotation) == "always"
}

// CreateOnly reports fleet.kubectl.io/apply: create-only.
func CreateOnly(o *unstructured.Unstructured) bool {
	return annotation(o, ApplyAnnotation) == "create-only"
}

// ForceEnabled reports fleet.kubectl.io/force: enabled.
func ForceEnabled(o *unstructured.Unstructured) bool {
	return annotation(o, ForceAnnotation) == "enabled"
}

// ValidatePolicies returns an error for a policy annotation with a value
// it does not accept: a typo must not silently turn a policy off.
func ValidatePolicies(o *unstructured.Unstructured) []error {
	var errs []error
	ann := annotations(o)
	for _, k := range policyKeys {
		v, ok := ann[k].(string)
		if !ok {
			continue
		}
		if valid := policies[k]; !slices.Contains(valid, v) {
			errs = append(errs, fmt.Errorf("annotation %s: %q is not one of %q", k, v, valid))
		}
	}
	if v, ok := ann[PhaseAnnotation].(string); ok {
		if _, err := strconv.Atoi(v); err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %q is not an integer", PhaseAnnotation, v))
		}
	}
	return errs
}

// ImmutableChange names the change the server refused: "spec.selector is
// immutable", or without a field "an immutable field changed".
func ImmutableChange(field string) string {
	if field == "" {
		return "an immutable field changed"
	}
	return field + " is immutable"
}

// Replacement says why an object is deleted and created again
// (fleet.kubectl.io/force: enabled), naming the field when known; dryRun
// says it would be.
func Replacement(field string, dryRun bool) string {
	why := ImmutableChange(field)
	if dryRun {
		return why + "; would be deleted and created again (" + ForceAnnotation + ": enabled)"
	}
	return why + "; deleted and created again (" + ForceAnnotation + ": enabled)"
}

// ImmutableError explains a change the server refuses because a field
// cannot change once set, and how to proceed. It never quotes the values
// the server's message carries (a Job's whole pod template).
func ImmutableError(ref, field string) error {
	what := "a field that cannot change"
	if field != "" {
		what = field + ", which cannot change once set"
	}
	return fmt.Errorf("the server refuses the change to %s: delete %s and apply again, or annotate it %s: enabled to have apply delete and create it", what, ref, ForceAnnotation)
}

// policyKeys are the policy annotations, in order.
var policyKeys = slices.Sorted(maps.Keys(policies))

// annotations are o's annotations as they are, not copied: policies are
// read on every object of every cluster (GetAnnotations copies them).
func annotations(o *unstructured.Unstructured) map[string]any {
	ann, _, _ := unstructured.NestedFieldNoCopy(o.Object, "metadata", "annotations")
	m, _ := ann.(map[string]any)
	return m
}

// annotation is o's annotation key, or "" (as GetAnnotations reads it:
// a value that is not a string is none).
func annotation(o *unstructured.Unstructured, key string) string {
	v, _ := annotations(o)[key].(string)
	return v
}
