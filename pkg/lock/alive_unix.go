//go:build !windows

package lock

import (
	"errors"
	"syscall"
)

// alive reports whether a process of this machine runs: signal 0 checks
// without sending anything. Not allowed to signal it means it runs.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}
