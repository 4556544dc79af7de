package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestImmutable(t *testing.T) {
	job := schema.GroupKind{Group: "batch", Kind: "Job"}
	invalid := func(errs ...*field.Error) error { return apierrors.NewInvalid(job, "migrate", errs) }
	for _, tt := range []struct {
		name      string
		err       error
		field     string
		immutable bool
	}{
		{"job template", invalid(field.Invalid(field.NewPath("spec", "template"), "...", "field is immutable")), "spec.template", true},
		{"service clusterIP", invalid(field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), "10.0.0.1", "may not change once set")), "spec.clusterIPs[0]", true},
		{"statefulset", invalid(field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas' are forbidden")), "spec", true},
		{"immutable configmap", invalid(field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set")), "data", true},
		{"second cause", invalid(field.Required(field.NewPath("spec", "x"), ""), field.Invalid(field.NewPath("spec", "selector"), "", "field is immutable")), "spec.selector", true},
		{"plain invalid", invalid(field.Required(field.NewPath("spec", "containers"), "")), "", false},
		{"conflict", apierrors.NewConflict(schema.GroupResource{Resource: "jobs"}, "migrate", fmt.Errorf("immutable")), "", false},
		{"wrapped", fmt.Errorf("apply: %w", invalid(field.Invalid(field.NewPath("spec", "selector"), "", "field is immutable"))), "spec.selector", true},
		{"nil", nil, "", false},
	} {
		f, ok := Immutable(tt.err)
		if f != tt.field || ok != tt.immutable {
			t.Errorf("%s: Immutable = %q, %v; want %q, %v", tt.name, f, ok, tt.field, tt.immutable)
		}
	}
}

func TestIsUnreachable(t *testing.T) {
	refused := &url.Error{Op: "Patch", URL: "https://127.0.0.1:1/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused", refused, true},
		{"wrapped", fmt.Errorf("app web: %w", refused), true},
		{"timeout", &url.Error{Op: "Get", URL: "https://x", Err: context.DeadlineExceeded}, true},
		{"body cut", fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", io.ErrUnexpectedEOF), true},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", fmt.Errorf("no")), false},
		{"server timeout", apierrors.NewServerTimeout(schema.GroupResource{Resource: "configmaps"}, "patch", 1), false},
		{"no kind", fmt.Errorf("no matches for kind \"Widget\""), false},
		{"nil", nil, false},
	} {
		if got := IsUnreachable(tt.err); got != tt.want {
			t.Errorf("%s: IsUnreachable = %v, want %v", tt.name, got, tt.want)
		}
	}
}
