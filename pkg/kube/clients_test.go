package kube

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// A cluster that never answered is said unreachable, with the way out;
// any other error, a skip, or a run that was stopped is left as it is.
func TestExplain(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/version", Err: syscall.ECONNREFUSED}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var k Clients
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		said bool
	}{
		{"refused", context.Background(), refused, true},
		{"said already", context.Background(), &UnreachableError{Err: refused}, false},
		{"skipped", context.Background(), &runner.SkipError{Reason: "unreachable"}, false},
		{"another error", context.Background(), errors.New("forbidden"), false},
		{"stopped", cancelled, refused, false},
		{"none", context.Background(), nil, false},
	} {
		got := k.Explain(tc.ctx, "prod-eu", tc.err)
		var u *UnreachableError
		if said := errors.As(got, &u) && !errors.As(tc.err, &u); said != tc.said {
			t.Errorf("%s: %v", tc.name, got)
		}
		if tc.said && !strings.Contains(got.Error(), "--skip-unreachable reports such a cluster as skipped") {
			t.Errorf("%s: no way out in %q", tc.name, got)
		}
	}
}
