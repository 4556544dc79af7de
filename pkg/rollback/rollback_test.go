package rollback

import (
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// TestPrevious: rollback's default target is the latest earlier revision
// of another render: one of the current render (an apply that did not
// finish recorded it, the next apply recorded it again) is passed over.
func TestPrevious(t *testing.T) {
	rev := func(n int, digest string) revision.Revision { return revision.Revision{Number: n, Digest: digest} }
	for _, tt := range []struct {
		name    string
		history []revision.Revision
		current int
		want    int
	}{
		{"the one before", []revision.Revision{rev(1, "a"), rev(2, "b"), rev(3, "c")}, 3, 2},
		{"an unfinished apply of the current render", []revision.Revision{rev(3, "x"), rev(4, "y"), rev(5, "y")}, 5, 3},
		{"a rollback recorded as the current", []revision.Revision{rev(1, "a"), rev(2, "b"), rev(3, "a")}, 3, 2},
		{"none but the same render", []revision.Revision{rev(1, "a"), rev(2, "a")}, 2, 0},
		{"the first", []revision.Revision{rev(1, "a")}, 1, 0},
		{"current unknown: the one before", []revision.Revision{rev(1, "a"), rev(2, "a")}, 3, 2},
		{"later unfinished ones are not earlier", []revision.Revision{rev(1, "a"), rev(2, "b"), rev(3, "c")}, 2, 1},
	} {
		if got := Previous(tt.history, tt.current); got != tt.want {
			t.Errorf("%s: previous = %d, want %d", tt.name, got, tt.want)
		}
	}
}
