package diff

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConflictNote(t *testing.T) {
	conflict := func(causes ...metav1.StatusCause) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 409, Reason: metav1.StatusReasonConflict,
			Details: &metav1.StatusDetails{Causes: causes}}}
	}
	cause := func(manager, field string) metav1.StatusCause {
		return metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "` + manager + `" using v1`, Field: field}
	}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{conflict(cause("kubectl-patch", ".data.level")), `conflicts with "kubectl-patch" (.data.level): apply needs --force-conflicts to take these fields back`},
		{conflict(cause("hpa", ".spec.replicas"), cause("kubectl-edit", ".spec.paused"), cause("hpa", ".spec.x")), `conflicts with "hpa" (.spec.replicas, .spec.x), "kubectl-edit" (.spec.paused): apply needs --force-conflicts to take these fields back`},
		{conflict(), "conflicts with another field manager: apply needs --force-conflicts to take these fields back"},
		{errors.New("plain"), "conflicts with another field manager: apply needs --force-conflicts to take these fields back"},
	} {
		if got := conflictNote(tt.err); got != tt.want {
			t.Errorf("conflictNote(%v)\n got %s\nwant %s", tt.err, got, tt.want)
		}
	}
}
