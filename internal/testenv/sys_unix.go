//go:build !windows

package testenv

import "syscall"

// sysProcAttr puts children in their own process group, so a Ctrl-C in
// the terminal reaches the test, which then stops them in order.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
