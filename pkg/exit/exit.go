// Package exit is how a command ends: the exit codes every command
// shares, and the error that carries one.
package exit

import "fmt"

// Exit codes, shared by every command.
const (
	// OK means success (for diff: no differences).
	OK = 0
	// Failed means an error, or for vet: problems found; for diff:
	// differences.
	Failed = 1
	// DiffError is diff's code for errors (kubectl diff's convention).
	DiffError = 2
	// Skipped means done, except for clusters --skip-unreachable
	// skipped.
	Skipped = 3
	// AwaitingApproval means a group marked approval: required was not
	// started: its release is not approved yet (kubectl fleet approve).
	AwaitingApproval = 4
	// NotObserved is status's: everything it could read is as it should
	// be, but a delivered cluster no context reads is published, not
	// observed: nothing says what it runs.
	NotObserved = 5
	// RolledBack is apply's: a group failed past its maxFailures and,
	// as its onFailure: rollback asks, every cluster the run changed
	// there and before it was rolled back to its last verified revision.
	RolledBack = 6
	// Unnotified means the run did all it was asked, but a sink of the
	// fleet file's notify: marked required: true missed an event.
	Unnotified = 7
	// Interrupted means the run was stopped by Ctrl-C.
	Interrupted = 130
)

// Error ends a command with a given exit code. A nil Err means the
// command already reported what went wrong.
type Error struct {
	Code int
	Err  error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }
