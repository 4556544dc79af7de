package reconcile

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// fakeMetrics records what a pass tells the metrics.
type fakeMetrics struct{ calls []string }

func (m *fakeMetrics) App(cluster, app string, _ time.Time, ok bool, rev int) {
	m.calls = append(m.calls, fmt.Sprintf("app %s/%s ok=%v r%d", cluster, app, ok, rev))
}

func (m *fakeMetrics) Drift(cluster, app string, n int) {
	m.calls = append(m.calls, fmt.Sprintf("drift %s/%s %d", cluster, app, n))
}

func (m *fakeMetrics) KeepOnly([]render.Result) {}

// TestDecide: what a pass says of each cluster it checked, what it
// applies (with force for --correct-drift's drifted apps), its lists and
// what the metrics are told.
func TestDecide(t *testing.T) {
	verified := revision.Verification{State: revision.Verified}
	current := func(app string, drifted ...string) AppCheck {
		return AppCheck{App: app, Render: "sha256:aaaaaaaaaaaaaaaa", Current: "sha256:aaaaaaaaaaaaaaaa", Revision: 3, Exists: true, Verification: verified, Drifted: drifted}
	}
	checks := []ClusterCheck{
		{Cluster: "c1", Apps: []AppCheck{current("web"), current("db")}},
		{Cluster: "c2", Apps: []AppCheck{{App: "web", Render: "sha256:bbbbbbbbbbbbbbbb", Current: "sha256:aaaaaaaaaaaaaaaa", Revision: 3, Exists: true}}},
		{Cluster: "c3", Apps: []AppCheck{current("web", "configmap/a -n web")}},
		{Cluster: "c4", Err: errors.New("unreachable")},
		{Cluster: "c5", Apps: []AppCheck{{App: "web", Exists: false}}},
	}
	for _, correct := range []bool{false, true} {
		t.Run(fmt.Sprintf("correct-drift=%v", correct), func(t *testing.T) {
			m := &fakeMetrics{}
			var lines []string
			d := decide(Config{Pass: 2, CorrectDrift: correct, RerunGates: true}, checks, m, func(ev rollout.Event) {
				if e := ev.(ClusterEvent); e.Pass != 2 || e.Type != "reconcile" {
					t.Errorf("event %+v", e)
				}
				lines = append(lines, ev.Where()+": "+ev.Text())
			}, time.Now())
			drift := "not corrected (--correct-drift corrects it)"
			c3 := "c3: drifted, not applied"
			applied, drifted := []string{"c2", "c4", "c5"}, []string{"c3"}
			if correct {
				drift, c3, applied, drifted = "correcting", "c3: applying", []string{"c2", "c3", "c4", "c5"}, nil
			}
			want := []string{
				"c1: unchanged, skipped (web r3, db r3)",
				"c2: web: render changed (sha256:bbbbbbbbbbbb, current revision 3 is sha256:aaaaaaaaaaaa)",
				"c2: applying",
				"c3: web: configmap/a -n web drifted: " + drift,
				c3,
				"c4: cannot be checked, applying: unreachable",
				"c5: web: never applied",
				"c5: applying",
			}
			if diff := cmp.Diff(want, lines); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(PassEvent{Applied: applied, Unchanged: []string{"c1"}, Drifted: drifted}, d.Pass); diff != "" {
				t.Errorf("lists (-want +got):\n%s", diff)
			}
			// With --correct-drift a changed render takes drifted fields
			// back too (c2); a first apply (c5) is never forced.
			if d.Forced("c3", "web") != correct || d.Forced("c2", "web") != correct || d.Forced("c5", "web") || d.Apply["c1"] || !d.Apply["c4"] {
				t.Errorf("apply %v, forced: c2/web %v, c3/web %v, c5/web %v", d.Apply, d.Forced("c2", "web"), d.Forced("c3", "web"), d.Forced("c5", "web"))
			}
			wantCalls := []string{"drift c1/web 0", "app c1/web ok=true r3", "drift c1/db 0", "app c1/db ok=true r3", "drift c3/web 1"}
			if !correct {
				wantCalls = append(wantCalls, "app c3/web ok=true r3")
			}
			if diff := cmp.Diff(wantCalls, m.calls); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRefuseProtected: a protected group needs --yes, and the refusal
// names its clusters.
func TestRefuseProtected(t *testing.T) {
	f := &fleet.Fleet{Groups: []fleet.Group{{Name: "staging"}, {Name: "production", Protected: true}}}
	ws := []runner.Wave{{Name: "staging", Group: "staging", Clusters: []string{"s1"}}, {Name: "production", Group: "production", Clusters: []string{"p1", "p2"}}}
	err := RefuseProtected(f, ws, false)
	if err == nil || !strings.Contains(err.Error(), "group production is protected (p1, p2) and reconcile never asks: pass --yes") {
		t.Errorf("got %v", err)
	}
	if err := RefuseProtected(f, ws, true); err != nil {
		t.Errorf("--yes: %v", err)
	}
	if err := RefuseProtected(f, ws[:1], false); err != nil {
		t.Errorf("staging only: %v", err)
	}
}

// TestOwned: the shards split the clusters, each in one; unsharded, all.
func TestOwned(t *testing.T) {
	r := &rendered.Set{Fleet: &fleet.Fleet{}}
	for i := range 20 {
		r.Clusters = append(r.Clusters, &fleet.Cluster{Name: fmt.Sprintf("c%d", i)})
	}
	if Owned(r, fleet.Shard{}) != r {
		t.Error("unsharded: not the whole set")
	}
	seen := map[string]int{}
	for i := range 3 {
		for _, c := range Owned(r, fleet.Shard{Index: i, Count: 3}).Clusters {
			seen[c.Name]++
		}
	}
	for _, c := range r.Clusters {
		if seen[c.Name] != 1 {
			t.Errorf("%s is in %d shards", c.Name, seen[c.Name])
		}
	}
}

// TestPassEvent: a pass's end, in text (its lists and error on one line)
// and as JSON.
func TestPassEvent(t *testing.T) {
	ev := PassEvent{Applied: []string{"a"}, Unchanged: []string{"b", "c"}}.Ended(4, 1234567*time.Microsecond, errors.New("one\ntwo"))
	if want := "pass 4 failed in 1.235s; rolled out to: a; unchanged: b, c: one; two"; ev.Text() != want {
		t.Errorf("text %q, want %q", ev.Text(), want)
	}
	var b strings.Builder
	Log{W: &b, JSON: true}.Say(PassEvent{}.Ended(1, time.Second, nil))
	if want := `{"type":"pass","msg":"pass 1 succeeded in 1s","pass":1,"result":"succeeded","seconds":1}` + "\n"; b.String() != want {
		t.Errorf("json %q, want %q", b.String(), want)
	}
}
