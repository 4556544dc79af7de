package summary

import (
	"context"
	"errors"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/status"
)

// TestStatus: status's exit, in its order: interrupted before anything,
// then a cluster not read or an app not healthy, then skipped clusters
// (3 only when every one was unreachable), then an app nobody observes.
func TestStatus(t *testing.T) {
	current := status.App{App: "web", Objects: []status.Object{{Ref: "configmap/a", Health: status.Current}}}
	failing := status.App{App: "web", Objects: []status.Object{{Ref: "deployment/web", Health: status.Failed}}}
	unobserved := status.App{App: "web", Published: &status.Published{Artifact: "sha256:1"}}
	ok := runner.Outcome{Cluster: "c1", State: runner.Succeeded}
	unreachable := runner.Outcome{Cluster: "c2", State: runner.Skipped, Err: &runner.SkipError{Reason: "unreachable", Unreachable: true}}
	skipped := runner.Outcome{Cluster: "c3", State: runner.Skipped, Err: &runner.SkipError{Reason: "paused"}}
	read := func(apps ...status.App) []status.Cluster { return []status.Cluster{{Name: "c1", Apps: apps}} }
	for _, tt := range []struct {
		name        string
		interrupted bool
		outcomes    []runner.Outcome
		clusters    []status.Cluster
		want        int // exit code; exit.OK for nil
	}{
		{"all current", false, []runner.Outcome{ok}, read(current), exit.OK},
		{"interrupted", true, []runner.Outcome{ok}, read(failing), exit.Interrupted},
		{"an app failing", false, []runner.Outcome{ok}, read(current, failing), exit.Failed},
		{"a cluster not read", false, []runner.Outcome{ok, {Cluster: "c2", State: runner.Failed, Err: errors.New("forbidden")}}, read(current), exit.Failed},
		{"unhealthy before skipped", false, []runner.Outcome{ok, unreachable}, read(failing), exit.Failed},
		{"skipped, unreachable", false, []runner.Outcome{ok, unreachable}, read(current), exit.Skipped},
		{"skipped, not all unreachable", false, []runner.Outcome{ok, unreachable, skipped}, read(current), exit.Failed},
		{"skipped before not observed", false, []runner.Outcome{ok, unreachable}, read(unobserved), exit.Skipped},
		{"not observed", false, []runner.Outcome{ok}, read(current, unobserved), exit.NotObserved},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.interrupted {
				cancel()
			}
			code := exit.OK
			if err := Status(ctx, tt.outcomes, tt.clusters); err != nil {
				var e *exit.Error
				if !errors.As(err, &e) {
					t.Fatalf("%v: not an exit.Error", err)
				}
				code = e.Code
			}
			if code != tt.want {
				t.Errorf("exit %d, want %d", code, tt.want)
			}
		})
	}
}
