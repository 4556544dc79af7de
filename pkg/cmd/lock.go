package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/lock"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
)

// addLockFlags adds --lock-duration and --lock-timeout.
func addLockFlags(cmd *cobra.Command, duration, timeout *time.Duration) {
	cmd.Flags().DurationVar(duration, "lock-duration", lock.DefaultDuration, "how long an app's lock on a cluster outlives a run that died without releasing it (renewed every third of it while the run works)")
	cmd.Flags().DurationVar(timeout, "lock-timeout", 0, "how long to wait for a lock another run holds (0: fail that app on that cluster at once)")
}

// validateLocks checks --lock-duration and --lock-timeout.
func validateLocks(l *rollout.Locks) error {
	switch {
	case l.Duration < time.Second:
		return fmt.Errorf("--lock-duration must be at least 1s")
	case l.Timeout < 0:
		return fmt.Errorf("--lock-timeout must be 0 (do not wait) or more")
	}
	return nil
}

// acquire takes app's lock on cluster, saying what is worth saying (a
// wait, a lock not taken, a lock lost) on p; lost is told when the lock is
// lost while held.
func acquire(ctx context.Context, l *rollout.Locks, client *kube.Client, cluster, app string, p *printer, withApp, noNamespace bool, lost func(error)) error {
	return l.Acquire(ctx, client, cluster, app, rollout.Label(app, withApp), noNamespace, p.emit, lost)
}
