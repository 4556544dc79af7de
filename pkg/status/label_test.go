package status

import (
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// A revision an automatic rollback made says so, in the table and the
// details.
func TestRolledBackLabel(t *testing.T) {
	v := &revision.Verification{State: revision.Verified}
	a := App{App: "web", Revision: 3, Verification: v, RolledBack: "rollback (automatic) to 1: production/canary failed"}
	if got := a.RevisionLabel(); got != "r3 verified, rolled back automatically" {
		t.Errorf("label %q", got)
	}
	if got := a.revisionLine(); got != "revision 3 verified (rollback (automatic) to 1: production/canary failed)" {
		t.Errorf("line %q", got)
	}
	if got := (revision.Revision{Description: "rollback to 1"}).AutomaticRollback(); got != "" {
		t.Errorf("a rollback by hand is %q", got)
	}
}
