package change_test

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
)

func obj(annotations map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("batch/v1")
	o.SetKind("Job")
	o.SetNamespace("web")
	o.SetName("migrate")
	o.SetAnnotations(annotations)
	return o
}

// TestOf is the rule diff and apply both ask, case by case, in its order.
func TestOf(t *testing.T) {
	immutable := apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "migrate", field.ErrorList{field.Invalid(field.NewPath("spec", "template"), "…", "field is immutable")})
	noNS := apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "web")
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "batch", Resource: "jobs"}, "migrate", errors.New("conflict with kubectl-edit"))
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "batch", Kind: "Job"}}
	createOnly := map[string]string{"fleet.kubectl.io/apply": "create-only"}
	force := map[string]string{"fleet.kubectl.io/force": "enabled"}
	tests := []struct {
		name string
		a    change.Answer
		want change.Action
		why  string
		err  bool
	}{
		{"new", change.Answer{}, change.Created, "", false},
		{"changed", change.Answer{Existed: true}, change.Configured, "", false},
		{"same", change.Answer{Existed: true, Same: true}, change.Unchanged, "", false},
		{"adopted and changed", change.Answer{Existed: true, Adopt: true}, change.Adopted, "", false},
		{"adopted, same", change.Answer{Existed: true, Adopt: true, Same: true}, change.Adopted, "", false},
		{"create-only, exists", change.Answer{Existed: true, Adopt: true, Err: immutable, Obj: obj(createOnly)}, change.Unchanged, "exists, not updated (fleet.kubectl.io/apply: create-only)", false},
		{"create-only, new", change.Answer{Obj: obj(createOnly)}, change.Created, "", false},
		{"kind of a CRD of this apply", change.Answer{Err: noMatch, PendingCRD: true}, change.AfterCRD, "would be created after its CRD", false},
		{"kind nobody serves", change.Answer{Err: noMatch}, change.Failed, "", true},
		{"namespace of this apply", change.Answer{Err: noNS, NewNamespace: true}, change.Created, "its namespace is created by this apply; not validated by the server", false},
		{"namespace nobody creates", change.Answer{Err: noNS}, change.Failed, "", true},
		{"immutable, force", change.Answer{Existed: true, Err: immutable, Obj: obj(force), DryRun: true}, change.Replaced, "spec.template is immutable; would be deleted and created again (fleet.kubectl.io/force: enabled)", false},
		{"immutable, force, new", change.Answer{Err: immutable, Obj: obj(force)}, change.Failed, "", true},
		{"immutable", change.Answer{Existed: true, Err: immutable}, change.Failed, "", true},
		{"conflict", change.Answer{Existed: true, Err: conflict}, change.Failed, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.a.Obj == nil {
				tt.a.Obj = obj(nil)
			}
			got, why, err := change.Of(tt.a)
			if got != tt.want || why != tt.why || (err != nil) != tt.err {
				t.Errorf("Of = %s, %q, %v; want %s, %q, error %t", got, why, err, tt.want, tt.why, tt.err)
			}
		})
	}
}

// TestOfSaysHowOut: the failures users act on say what to do, and an
// immutable field's error never quotes the values the server sent.
func TestOfSaysHowOut(t *testing.T) {
	immutable := apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "migrate", field.ErrorList{field.Invalid(field.NewPath("spec", "template"), "SECRET-VALUE", "field is immutable")})
	_, _, err := change.Of(change.Answer{Obj: obj(nil), Existed: true, Err: immutable})
	if err == nil || !contains(err.Error(), "fleet.kubectl.io/force: enabled") || contains(err.Error(), "SECRET-VALUE") {
		t.Errorf("immutable: %v", err)
	}
	conflict := apierrors.NewApplyConflict([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Field: ".data.k"}}, "conflict")
	if _, _, err := change.Of(change.Answer{Obj: obj(nil), Existed: true, Err: conflict}); err == nil || !contains(err.Error(), "--force-conflicts") {
		t.Errorf("conflict: %v", err)
	}
}

// TestPlanned: diff prints today's words for each action.
func TestPlanned(t *testing.T) {
	for a, want := range map[change.Action]string{change.Created: "create", change.Configured: "change", change.Replaced: "change", change.Adopted: "adopt", change.Pruned: "prune", change.Unchanged: "unchanged", change.Kept: "kept", change.AfterCRD: "after-crd"} {
		if got := a.Planned(); got != want {
			t.Errorf("%s.Planned() = %s, want %s", a, got, want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
