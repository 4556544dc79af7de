package kube

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"syscall"

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

// immutableMessages are how the API server and CRD validation rules say
// that a field cannot change once set.
var immutableMessages = []string{"immutable", "may not change", "are forbidden", "cannot be changed", "can not be changed"}

// Immutable reports whether the server refused a change because a field
// cannot be changed, and names the field when the server did.
func Immutable(err error) (field string, ok bool) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || !apierrors.IsInvalid(err) {
		return "", false
	}
	matches := func(msg string) bool {
		msg = strings.ToLower(msg)
		return slices.ContainsFunc(immutableMessages, func(m string) bool { return strings.Contains(msg, m) })
	}
	if d := se.Status().Details; d != nil {
		for _, c := range d.Causes {
			if matches(c.Message) {
				return c.Field, true
			}
		}
	}
	return "", matches(se.Status().Message)
}

// WhyUnreachable names, in a few words, why the API server could not be
// asked (an error IsUnreachable accepts): "connection refused", "no such
// host", "timed out", "connection reset", else "no answer".
func WhyUnreachable(err error) string {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dns) && dns.IsNotFound:
		return "no such host"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	return "no answer"
}

// IsUnreachable reports an error of the connection to the API server, not
// an answer from it: refused, reset, cut, timed out (--request-timeout).
// The server did not say no; it could not be asked.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return false
	}
	var (
		ue *url.Error
		ne net.Error
	)
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, context.DeadlineExceeded)
}
