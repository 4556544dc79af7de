package kube

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// IsNamespaceNotFound reports an error about a missing namespace.
func IsNamespaceNotFound(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || !apierrors.IsNotFound(err) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Kind == "namespaces"
}
