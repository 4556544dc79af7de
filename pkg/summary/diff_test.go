package summary

import (
	"errors"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// TestDiffLine: what diff's summary says of a cluster; one that failed
// part way keeps the counts of what it did diff, as -o json does.
func TestDiffLine(t *testing.T) {
	fail := errors.New("app db: 1 object failed")
	tests := []struct {
		name string
		oc   runner.Outcome
		s    diff.Summary
		want string
	}{
		{"in sync", runner.Outcome{State: runner.Succeeded}, diff.Summary{Unchanged: 3}, "0 to create, 0 to change, 0 to prune, 3 unchanged"},
		{"conflicts", runner.Outcome{State: runner.Succeeded}, diff.Summary{Change: 1, Conflicts: 1}, "0 to create, 1 to change, 0 to prune, 0 unchanged (apply needs --force-conflicts for 1)"},
		{"failed part way", runner.Outcome{State: runner.Failed, Err: fail}, diff.Summary{Create: 2, Unchanged: 1, Errors: 1}, "error: app db: 1 object failed (of what it diffed: 2 to create, 0 to change, 0 to prune, 1 unchanged)"},
		{"failed at once", runner.Outcome{State: runner.Failed, Err: fail}, diff.Summary{}, "error: app db: 1 object failed"},
		{"skipped", runner.Outcome{State: runner.Skipped, Err: errors.New("unreachable")}, diff.Summary{}, "skipped: unreachable"},
		{"interrupted", runner.Outcome{State: runner.NotStarted}, diff.Summary{}, "not diffed (interrupted)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := diffLine(tt.oc, tt.s); got != tt.want {
				t.Errorf("diffLine = %q, want %q", got, tt.want)
			}
		})
	}
}
