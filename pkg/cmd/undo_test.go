package cmd

import (
	"errors"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollback"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// An automatic rollback that did not finish says where each cluster is:
// rolled back, still on the failed release (why), an app with nothing
// to go back to.
func TestWhere(t *testing.T) {
	outcomes := []runner.Outcome{
		{Cluster: "canary-eu", State: runner.Succeeded},
		{Cluster: "stg-eu", State: runner.Failed, Err: errors.New("connection refused")},
		{Cluster: "stg-us", State: runner.NotStarted},
		{Cluster: "edge-1", State: runner.Succeeded},
	}
	missing := map[string][]rollback.Skip{"edge-1": {{App: "web", Reason: "nothing to roll back: app web has no verified revision before r1 here"}}}
	want := "canary-eu rolled back; stg-eu still on the failed release (failed: connection refused); stg-us still on the failed release (not started); edge-1: web not rolled back (nothing to roll back: app web has no verified revision before r1 here)"
	if got := where(outcomes, missing); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
