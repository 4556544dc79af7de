package report

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
)

// TestCollector: an app's failed objects join its error; diffs are kept
// per cluster; a nil Collector gathers nothing and says nothing.
func TestCollector(t *testing.T) {
	c := NewCollector()
	c.Failed("prod", "web", "deployment.apps/web: forbidden")
	c.App("prod", Outcome("web", errors.New("1 object failed")))
	c.App("prod", Outcome("db", nil))
	c.Diffs("prod", []diff.Object{{Ref: "configmap/a", Action: change.Configured, Text: "--- live/a\n+++ merged/a\n"}})
	apps, d := c.Of("prod")
	want := []App{{Name: "web", State: "failed", Failed: true, Error: "1 object failed\ndeployment.apps/web: forbidden"}, {Name: "db", State: "ok"}}
	if diff := cmp.Diff(want, apps); diff != "" {
		t.Errorf("apps (-want +got):\n%s", diff)
	}
	if d != "--- live/a\n+++ merged/a\n" {
		t.Errorf("diff %q", d)
	}
	if apps, d := c.Of("stg"); apps != nil || d != "" {
		t.Errorf("a cluster with nothing: %v %q", apps, d)
	}
	var none *Collector
	none.App("prod", Outcome("web", nil))
	none.Failed("prod", "web", "x")
	if apps, d := none.Of("prod"); apps != nil || d != "" {
		t.Errorf("a nil Collector: %v %q", apps, d)
	}
}
