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

// TestBack: what a rollback goes back to, by what it was asked: a
// revision, the previous one, or the latest one its gates verified.
func TestBack(t *testing.T) {
	rev := func(n int, digest string, state revision.State) revision.Revision {
		return revision.Revision{Number: n, Digest: digest, Verification: revision.Verification{State: state}}
	}
	history := []revision.Revision{rev(1, "a", revision.Verified), rev(2, "b", revision.Failed), rev(3, "c", revision.Unverified), rev(4, "a", revision.Verified), rev(5, "d", revision.Failed)}
	for _, tt := range []struct {
		name        string
		history     []revision.Revision
		current, to int
		want        int
		none        bool
		missing     string
	}{
		{"previous", history, 5, 0, 4, false, ""},
		{"previous verified", history, 5, PreviousVerified, 4, false, ""},
		{"previous verified skips failed and unverified", history, 4, PreviousVerified, 0, true, "verified revision before r4 here"},
		{"previous verified of another render", append(history[:3:3], rev(4, "x", revision.Verified), rev(5, "x", revision.Failed)), 5, PreviousVerified, 1, false, ""},
		{"a number", history, 5, 2, 2, false, ""},
		{"a number not there", history, 5, 9, 0, false, "revision 9 here"},
		{"nothing before", history[:1], 1, 0, 0, true, "revision before r1 here"},
	} {
		got, none, missing := Back(tt.history, tt.current, tt.to)
		if got != tt.want || none != tt.none || missing != tt.missing {
			t.Errorf("%s: %d %v %q, want %d %v %q", tt.name, got, none, missing, tt.want, tt.none, tt.missing)
		}
	}
}
