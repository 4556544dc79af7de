package summary

import (
	"context"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/status"
)

// Status is the exit of "kubectl fleet status" after it read outcomes
// and found clusters: 130 when interrupted (ctx done); 1 when a cluster
// was not read or an app is not healthy; then Skipped's (3 when every
// skipped cluster was unreachable, else 1); 5 when an app is published
// to a cluster no context observes; else nil.
func Status(ctx context.Context, outcomes []runner.Outcome, clusters []status.Cluster) error {
	if ctx.Err() != nil {
		return &exit.Error{Code: exit.Interrupted}
	}
	if !status.Healthy(outcomes, clusters) {
		return &exit.Error{Code: exit.Failed}
	}
	if err := Skipped(outcomes, exit.Failed); err != nil {
		return err
	}
	if status.Unobserved(clusters) {
		return &exit.Error{Code: exit.NotObserved}
	}
	return nil
}
