package rollout

import (
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
)

// TestDeleteWhat: delete's question names the apps, then the clusters,
// in their order.
func TestDeleteWhat(t *testing.T) {
	got := DeleteWhat([]rendered.App{{Name: "web"}, {Name: "api"}}, []*fleet.Cluster{{Name: "c2"}, {Name: "c1"}})
	if want := "app web, api from c2, c1"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
