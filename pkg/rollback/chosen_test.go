package rollback

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Mask masks the values the chosen revisions were decrypted from, those
// of the results only; a nil Chosen (an apply's) masks nothing.
func TestMask(t *testing.T) {
	f := &fleet.Fleet{Metadata: fleet.Metadata{Name: "shop"}}
	c1, c2 := &fleet.Cluster{Name: "c1"}, &fleet.Cluster{Name: "c2"}
	chosen := &Chosen{errs: map[string]error{}, skips: map[string][]Skip{}, records: map[string]revision.Revision{}}
	results := chosen.note(f, c1, []Target{{App: "web", Record: revision.Revision{Sensitive: []string{"hunter2-password"}}}, {App: "api"}}, nil)
	chosen.note(f, c2, []Target{{App: "web", Record: revision.Revision{Sensitive: []string{"not-this-run"}}}}, nil)
	results = append(results, render.Result{Target: render.Target{Cluster: render.ClusterOf(f, c2), App: "db"}}) // no record
	var m mask.Set
	chosen.Mask(&m, results)
	if diff := cmp.Diff([]string{"hunter2-password"}, m.Values()); diff != "" {
		t.Errorf("masked (-want +got):\n%s", diff)
	}
	var none mask.Set
	(*Chosen)(nil).Mask(&none, results)
	if !none.Empty() {
		t.Errorf("a nil Chosen masked %v", none.Values())
	}
}
