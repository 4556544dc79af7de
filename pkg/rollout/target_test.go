package rollout

import (
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
)

// An apply verifies its app by itself (App.Final: the verdict written
// with the revision) only when no gate follows it in the run: a group's
// check or soak, or the app's tests, each keeps it open; so do a run
// that is not gated and tests that were skipped.
func TestAppFinal(t *testing.T) {
	groups := []fleet.Group{
		{Name: "plain"},
		{Name: "checked", Verify: []fleet.Check{{Name: "smoke", Command: []string{"true"}}}},
		{Name: "soaked", Soak: time.Minute},
	}
	for _, tt := range []struct {
		name, group string
		o           Options
		tests       bool
		want        bool
	}{
		{"no gate follows", "plain", Options{}, false, true},
		{"a check follows", "checked", Options{}, false, false},
		{"a soak follows", "soaked", Options{}, false, false},
		{"its tests follow", "plain", Options{}, true, false},
		{"tests skipped", "plain", Options{SkipTests: true}, true, false},
		{"gates skipped", "plain", Options{SkipGates: true}, false, false},
		{"a dry run", "plain", Options{DryRun: true}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fleet.Fleet{Groups: groups, Clusters: []fleet.Cluster{{Name: "c1", Group: tt.group}}, Apps: []fleet.App{{Name: "web"}}}
			if tt.tests {
				f.Apps[0].Tests = "tests"
			}
			r := &rendered.Set{Fleet: f}
			if tt.tests {
				test := render.Result{Target: render.Target{App: "web", Cluster: render.Cluster{Name: "c1"}}, Objects: Objects{kubetest.Object("v1", "Pod", "default", "test")}}
				r.Tests = []render.Result{test}
			}
			e := &Engine{}
			e.begin(r, tt.o, func(Event) {})
			res := render.Result{Target: render.Target{App: "web"}}
			if got := e.runOf("c1").target.app(res, []render.Result{res}).Final; got != tt.want {
				t.Errorf("Final = %v, want %v", got, tt.want)
			}
		})
	}
}
