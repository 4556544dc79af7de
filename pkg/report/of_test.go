package report

import (
	"errors"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// A rollout's report: each cluster's state with what --atomic did, its
// group and its counts as the summary tallied them.
func TestOfRollout(t *testing.T) {
	f := &fleet.Fleet{Clusters: []fleet.Cluster{{Name: "stg", Group: "staging"}, {Name: "prod", Group: "production"}}}
	var tally summary.Tally
	tally.Add("stg", string(change.Created))
	tally.Add("stg", string(change.Configured))
	outcomes := []runner.Outcome{
		{Cluster: "stg", State: runner.Failed, Err: &rollout.AtomicError{Err: errors.New("check smoke failed"), Note: "rolled back to r2"}},
		{Cluster: "prod", State: runner.NotStarted},
	}
	rep := OfRollout("apply", f, outcomes, &tally, nil, true)
	if rep.Command != "apply (server dry run)" || len(rep.Clusters) != 2 {
		t.Fatalf("%+v", rep)
	}
	stg, prod := rep.Clusters[0], rep.Clusters[1]
	if stg.State != "failed, rolled back to r2" || stg.Group != "staging" || !stg.Failed || stg.Counts.Create != 1 || stg.Counts.Change != 1 || stg.Error != "check smoke failed" {
		t.Errorf("stg: %+v %+v", stg, stg.Counts)
	}
	if prod.State != "not started" || !prod.Failed || prod.Group != "production" {
		t.Errorf("prod: %+v", prod)
	}
}

// A delivered cluster's report says the artifact its tag points at and
// what its Flux was seen to do.
func TestOfRolloutPublished(t *testing.T) {
	f := &fleet.Fleet{Clusters: []fleet.Cluster{{Name: "edge-1", Group: "edge"}}}
	var tally summary.Tally
	tally.SetPublished("edge-1", "web", "sha256:0123456789abcdef0123")
	tally.AddGate("edge-1", "Flux applied web")
	rep := OfRollout("apply", f, []runner.Outcome{{Cluster: "edge-1", State: runner.Succeeded}}, &tally, nil, false)
	if got, want := rep.Clusters[0].State, "succeeded; published web sha256:0123456789ab; Flux applied web"; got != want {
		t.Errorf("state %q, want %q", got, want)
	}
}

// A source read from a registry is named in the report, pinned.
func TestOfRolloutSources(t *testing.T) {
	f := &fleet.Fleet{Clusters: []fleet.Cluster{{Name: "stg", Group: "staging"}}}
	var tally summary.Tally
	tally.SetSource("stg", "web", "oci://ghcr.io/acme/bases/web@sha256:0123456789abcdef0123")
	rep := OfRollout("apply", f, []runner.Outcome{{Cluster: "stg", State: runner.Succeeded}}, &tally, nil, false)
	if got, want := rep.Clusters[0].State, "succeeded; web from oci://ghcr.io/acme/bases/web@sha256:0123456789ab"; got != want {
		t.Errorf("state %q, want %q", got, want)
	}
}
