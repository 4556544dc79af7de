package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/lock"
)

// addLockFlags adds --lock-duration and --lock-timeout.
func addLockFlags(cmd *cobra.Command, duration, timeout *time.Duration) {
	cmd.Flags().DurationVar(duration, "lock-duration", lock.DefaultDuration, "how long an app's lock on a cluster outlives a run that died without releasing it (renewed every third of it while the run works)")
	cmd.Flags().DurationVar(timeout, "lock-timeout", 0, "how long to wait for a lock another run holds (0: fail that app on that cluster at once)")
}

// validateLocks checks --lock-duration and --lock-timeout.
func validateLocks(duration, timeout time.Duration) error {
	switch {
	case duration < time.Second:
		return fmt.Errorf("--lock-duration must be at least 1s")
	case timeout < 0:
		return fmt.Errorf("--lock-timeout must be 0 (do not wait) or more")
	}
	return nil
}
