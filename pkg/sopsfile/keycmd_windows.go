//go:build windows

package sopsfile

import "os/exec"

// ownGroup leaves cmd as it is: Windows has no process groups to kill
// as one (a job object would be; the command itself is stopped).
func ownGroup(*exec.Cmd) {}

// stopGroup kills cmd.
func stopGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
