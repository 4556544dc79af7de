package rollout

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// What an automatic rollback undoes: the clusters the run changed in the
// group that failed past its budget and the groups before it (not
// another track's), newest wave first; nothing under hold, within the
// budget, or in a run that verifies nothing.
func TestUndo(t *testing.T) {
	empty, staging := []string{}, []string{"staging"}
	fleetOf := func(onFailure string) *fleet.Fleet {
		half, _ := fleet.ParseAmount("50%")
		return &fleet.Fleet{
			OnFailure: onFailure,
			Groups: []fleet.Group{
				{Name: "staging"},
				{Name: "lab", After: &empty}, // a track of its own, rolled out before production
				{Name: "production", After: &staging, MaxFailures: half, Batches: []fleet.Batch{{Name: "canary", Selector: "canary=true"}}},
			},
			Clusters: []fleet.Cluster{
				{Name: "stg", Group: "staging"},
				{Name: "canary", Group: "production", Labels: map[string]string{"canary": "true"}},
				{Name: "prod-1", Group: "production"},
				{Name: "prod-2", Group: "production"},
				{Name: "lab-1", Group: "lab"},
			},
		}
	}
	boom := errors.New("boom")
	tests := []struct {
		name      string
		onFailure string
		o         Options
		outcomes  []runner.Outcome
		want      []string
		why       string
	}{
		{"the canary failed", "rollback", Options{}, []runner.Outcome{
			{Cluster: "stg", Wave: "staging", State: runner.Succeeded}, {Cluster: "lab-1", Wave: "lab", State: runner.Succeeded},
			{Cluster: "canary", Wave: "production/canary", State: runner.Failed, Err: boom},
			{Cluster: "prod-1", Wave: "production/rest", State: runner.NotStarted}, {Cluster: "prod-2", Wave: "production/rest", State: runner.NotStarted},
		}, []string{"canary", "stg"}, "production/canary failed (1 of 1 clusters; maxFailures 50%)"},
		{"hold", "hold", Options{}, []runner.Outcome{{Cluster: "canary", Wave: "production/canary", State: runner.Failed, Err: boom}}, nil, ""},
		{"within the budget", "rollback", Options{}, []runner.Outcome{
			{Cluster: "canary", Wave: "production/canary", State: runner.Succeeded},
			{Cluster: "prod-1", Wave: "production/rest", State: runner.Failed, Err: boom}, {Cluster: "prod-2", Wave: "production/rest", State: runner.Succeeded},
		}, nil, ""},
		{"past it in the last batch", "rollback", Options{}, []runner.Outcome{
			{Cluster: "canary", Wave: "production/canary", State: runner.Succeeded},
			{Cluster: "prod-1", Wave: "production/rest", State: runner.Failed, Err: boom}, {Cluster: "prod-2", Wave: "production/rest", State: runner.Failed, Err: boom},
		}, []string{"prod-1", "prod-2", "canary", "stg"}, "production/rest failed (2 of 2 clusters; maxFailures 50%)"},
		{"a dry run", "rollback", Options{DryRun: true}, []runner.Outcome{{Cluster: "canary", Wave: "production/canary", State: runner.Failed, Err: boom}}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fleetOf(tt.onFailure)
			var clusters []*fleet.Cluster
			for i := range f.Clusters {
				clusters = append(clusters, &f.Clusters[i])
			}
			e := &Engine{}
			e.begin(&rendered.Set{Fleet: f, Clusters: clusters}, tt.o, func(Event) {})
			e.waves = Waves(f, clusters)
			if e.waves[1].Group != "lab" {
				t.Fatalf("lab is not the second wave: %+v", e.waves)
			}
			for _, oc := range tt.outcomes {
				if oc.State != runner.NotStarted {
					e.runOf(oc.Cluster).revised(RevisionEvent{Cluster: oc.Cluster, App: "web", Revision: 2, New: true})
				}
			}
			e.runOf("stg").revised(RevisionEvent{Cluster: "stg", App: "web", Revision: 2, New: true})
			e.runOf("lab-1").revised(RevisionEvent{Cluster: "lab-1", App: "web", Revision: 2, New: true})
			u := e.Undo(tt.outcomes)
			if tt.want == nil {
				if u != nil {
					t.Fatalf("undoes %+v", u)
				}
				return
			}
			if u == nil {
				t.Fatal("undoes nothing")
			}
			var got []string
			for _, c := range u.Clusters {
				got = append(got, c.Name)
				if diff := cmp.Diff([]string{"web"}, u.Apps[c.Name]); diff != "" {
					t.Errorf("%s's apps (-want +got):\n%s", c.Name, diff)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || u.Why != tt.why {
				t.Errorf("clusters (-want +got):\n%s\nwhy %q, want %q", diff, u.Why, tt.why)
			}
		})
	}
}

// What an automatic rollback says before it starts, in text and -o json.
func TestUndoEvent(t *testing.T) {
	u := &Undo{Why: "production/canary failed (1 of 1 clusters; maxFailures 0)", Clusters: []*fleet.Cluster{{Name: "canary-eu"}, {Name: "stg-eu"}}}
	ev := u.Event()
	if got, want := ev.Text(), "Rolling back automatically (onFailure: rollback): production/canary failed (1 of 1 clusters; maxFailures 0); newest first: canary-eu, stg-eu"; got != want {
		t.Errorf("text %q\nwant %q", got, want)
	}
	b, err := json.Marshal(ev)
	if want := `{"type":"rollback","automatic":true,"why":"production/canary failed (1 of 1 clusters; maxFailures 0)","clusters":["canary-eu","stg-eu"]}`; err != nil || string(b) != want {
		t.Errorf("json %s, %v\nwant %s", b, err, want)
	}
}
