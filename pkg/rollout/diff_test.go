package rollout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// WritePlan writes what a diff of every cluster whole saw; a cluster not
// diffed whole, or a file that cannot be written, writes no plan.
func TestWritePlan(t *testing.T) {
	f := &fleet.Fleet{Clusters: []fleet.Cluster{{Name: "a", Group: "g"}, {Name: "b", Group: "g"}}}
	f.Metadata.Name = "shop"
	d := Diffs{
		Outcomes: []runner.Outcome{{Cluster: "a", State: runner.Succeeded}, {Cluster: "b", State: runner.Succeeded}},
		Plans:    map[string][]plan.App{"a": {{App: "web"}}, "b": {{App: "web"}}},
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := d.WritePlan(f, path, time.Now()); err != nil {
		t.Fatal(err)
	}
	if p, err := plan.Load(path); err != nil || p.Fleet != "shop" || p.Cluster("b").Group != "g" || p.Cluster("b").App("web") == nil {
		t.Errorf("the plan written: %+v, %v", p, err)
	}
	if err := d.WritePlan(f, filepath.Join(t.TempDir(), "no", "such", "folder"), time.Now()); err == nil || !strings.HasPrefix(err.Error(), "writing the plan: ") {
		t.Errorf("an unwritable file: %v", err)
	}
	d.Outcomes[1].State = runner.Failed
	other := filepath.Join(t.TempDir(), "plan.json")
	if err := d.WritePlan(f, other, time.Now()); err == nil || !strings.Contains(err.Error(), "no plan written: cluster b was not diffed whole") {
		t.Errorf("a cluster failed: %v", err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("a plan was written: %v", err)
	}
}
