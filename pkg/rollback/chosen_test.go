package rollback

import (
	"strings"
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

// An automatic rollback keeps what the failed run changed alone, each
// recorded as automatic with the render it undid; an app with nothing
// to go back to is said, with why.
func TestOnly(t *testing.T) {
	f := &fleet.Fleet{Clusters: []fleet.Cluster{{Name: "eu"}, {Name: "us"}}}
	pl := &Chosen{errs: map[string]error{}, skips: map[string][]Skip{}, records: map[string]revision.Revision{}, from: map[string]string{}}
	var results []render.Result
	results = append(results, pl.note(f, &f.Clusters[0], []Target{
		{App: "web", From: "sha256:bad", Record: revision.Revision{Description: "rollback to 1"}},
		{App: "db", From: "sha256:db2", Record: revision.Revision{Description: "rollback to 4"}},
	}, nil)...)
	results = append(results, pl.note(f, &f.Clusters[1], nil, []Skip{{App: "web", Reason: "nothing to roll back: app web has no verified revision before r1 here", Nothing: true}})...)
	kept, missing := pl.Only(map[string][]string{"eu": {"web"}, "us": {"web"}}, "production/canary failed", results)
	if len(kept) != 1 || kept[0].App != "web" || kept[0].Cluster.Name != "eu" {
		t.Errorf("kept %+v", kept)
	}
	rec, ok := pl.Record("eu", "web")
	if !ok || rec.Description != "rollback (automatic) to 1: production/canary failed" || rec.Undid != "sha256:bad" {
		t.Errorf("eu/web recorded as %+v", rec)
	}
	if _, ok := pl.Record("eu", "db"); ok {
		t.Error("db, which the run did not change, is rolled back too")
	}
	if len(missing["us"]) != 1 || !strings.Contains(missing["us"][0].Reason, "no verified revision before r1") {
		t.Errorf("missing %+v", missing)
	}
}
