// Package change is what applying an app does to one of its objects, in
// one word and by one rule (Of): diff says what apply would do, apply
// says what it did, and both ask Of, as fluxcd/pkg ssa's ChangeSetEntry
// is both a dry run's answer and a real apply's. Health and test results
// are not changes: they are apply's (apply.HealthResult).
package change

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

// Action is what happens to one object. Its value is the word apply
// prints once it is done; Planned is the word diff prints for it.
type Action string

// The actions.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	// Adopted: the object existed and kubectl fleet had not created it;
	// the app takes it over, and prune, delete and rollback release it
	// rather than delete it.
	Adopted Action = "adopted"
	// Replaced: deleted and created again, because an immutable field
	// changed and the object asks for it (fleet.kubectl.io/force: enabled).
	Replaced Action = "replaced"
	// AfterCRD: the object's kind comes from a CRD of the same apply
	// that the cluster does not serve yet; it is created after it.
	AfterCRD Action = "after-crd"
	// Pruned: no longer rendered, deleted by apply --prune.
	Pruned Action = "pruned"
	// Kept: no longer rendered, but not pruned (the ownership rule's
	// reason: prune disabled, adopted, handed to another app, or an input
	// of the decision could not be read).
	Kept Action = "kept"
	// Deleted: removed by delete.
	Deleted Action = "deleted"
	// Skipped: not applied (an earlier stage failed, the cluster stopped
	// answering, a pause).
	Skipped Action = "skipped"
	Failed  Action = "failed"
)

// Planned is the word diff prints for a, and a plan file records: what
// apply would do. A replacement is a change there, with a note.
func (a Action) Planned() string {
	switch a {
	case Created:
		return "create"
	case Configured, Replaced:
		return "change"
	case Adopted:
		return "adopt"
	case Pruned:
		return "prune"
	case Deleted:
		return "delete"
	}
	return string(a)
}

// Changes reports whether a changes the cluster (or would).
func (a Action) Changes() bool {
	switch a {
	case Created, Configured, Adopted, Replaced, AfterCRD, Pruned, Deleted:
		return true
	}
	return false
}

// NotValidated is why a dry run's object is created without the server
// having checked it: its namespace does not exist yet.
const NotValidated = "its namespace is created by this apply; not validated by the server"

// Updates reports whether a changes an object that exists (configured,
// adopted or replaced): what status calls drift when the render did not
// move.
func (a Action) Updates() bool {
	return a == Configured || a == Adopted || a == Replaced
}

// Answer is what the server answered an object's server-side apply, and
// what the apply knew of the object before it.
type Answer struct {
	// Obj is the object as sent.
	Obj *unstructured.Unstructured
	// Existed: the live object existed before the apply.
	Existed bool
	// Err is the apply's error.
	Err error
	// Same: of an object that existed, the apply changed nothing.
	Same bool
	// PendingCRD: Obj's kind comes from a CRD of the same apply that the
	// cluster does not serve yet, so it was not (or could not be) sent.
	PendingCRD bool
	// NewNamespace: Obj's namespace is created by the same apply, so a
	// dry run cannot validate it yet.
	NewNamespace bool
	// Adopt: the ownership rule's claim (inventory.Claim.Adopt): the
	// object exists and kubectl fleet did not create it.
	Adopt bool
	// DryRun: nothing was written.
	DryRun bool
}

// Of is the rule: what the apply did, or in a dry run would do, to the
// object, why when it is not plain, and the error of a failure. A
// replacement (Replaced) is decided here and made by the caller.
func Of(a Answer) (Action, string, error) {
	field, immutable := kube.Immutable(a.Err)
	switch {
	case a.Existed && object.CreateOnly(a.Obj):
		return Unchanged, "exists, not updated (" + object.ApplyAnnotation + ": create-only)", nil
	case a.PendingCRD:
		return AfterCRD, "would be created after its CRD", nil
	case a.Err != nil && a.NewNamespace && kube.IsNamespaceNotFound(a.Err):
		return Created, NotValidated, nil
	case immutable && a.Existed && object.ForceEnabled(a.Obj):
		return Replaced, object.Replacement(field, a.DryRun), nil
	case immutable:
		return Failed, "", object.ImmutableError(object.Ref(a.Obj), field)
	case apierrors.IsConflict(a.Err):
		return Failed, "", fmt.Errorf("%w (another field manager owns these fields; --force-conflicts takes them over)", a.Err)
	case a.Err != nil:
		return Failed, "", a.Err
	case !a.Existed:
		return Created, "", nil
	case a.Adopt:
		return Adopted, "", nil
	case a.Same:
		return Unchanged, "", nil
	}
	return Configured, "", nil
}
