package status_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/status"
)

// report is printed()'s clusters as a report: web and db rendered, c2
// paused, and the promotion rule holding production back.
func report() status.Report {
	cs := printed()
	set := &rendered.Set{Results: []render.Result{{Target: render.Target{App: "web"}}, {Target: render.Target{App: "db"}}}}
	results := map[string][]status.App{}
	for _, c := range cs {
		set.Clusters = append(set.Clusters, &fleet.Cluster{Name: c.Name})
		results[c.Name] = c.Apps
	}
	paused := map[string][]pause.Pause{"c2": {{By: "alice", At: time.Now().Add(-10 * time.Minute), Reason: "INC-1"}}}
	held := func() []status.Hold {
		return []status.Hold{{Type: "promotion", Group: "production", Message: "production not started: c1 runs web r2"}}
	}
	return status.Report{Set: set, Clusters: cs, Results: results, Pauses: paused, Held: held}
}

// printReport prints r as status does (JSON with jsonOut), and returns
// its stdout and stderr.
func printReport(t *testing.T, r status.Report, jsonOut, verbose bool) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	p := output.NewPrinter(&out, jsonOut, output.NewPrefixer([]string{"c1", "c2", "c3", "c4"}, false), 10)
	if err := r.Print(p, &errOut, verbose); err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String()
}

const notes = `Paused: c2 paused 10m ago by alice: "INC-1"
Skew: app web differs within group prod: c1 r2 (abc1234), c2 r3
Promotion: production not started: c1 runs web r2
`

// The matrix's columns are the apps rendered, in order, then the others
// found; under it the pauses, the skew and the promotion rule's holds.
func TestReportMatrix(t *testing.T) {
	out, errOut := printReport(t, report(), false, false)
	want := `CLUSTER   GROUP   WEB                                          DB        CACHE
c1        prod    1 of 2 InProgress, 1 drifted (r2 verified)   -         -
c2        prod    1 of 1 Current (r3)                          -         1 of 1 NotFound
c3        prod    Error                                        Error     Error
c4        dev     Skipped                                      Skipped   Skipped
drifted: edited live since the last apply (apply puts it back; status -o wide names the objects)
` + notes
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if want := "error: c3: app web: forbidden\nskipped: c4: unreachable\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

// -o wide lists every object after its cluster's prefix, then the notes.
func TestReportVerbose(t *testing.T) {
	out, _ := printReport(t, report(), false, true)
	if !strings.HasPrefix(out, "[c1] web: 1 of 2 InProgress, 1 drifted, revision 2 verified from abc1234") || !strings.HasSuffix(out, "\n"+notes) {
		t.Errorf("stdout:\n%s", out)
	}
}

// -o json: a line per app and unread cluster, then a line per note.
func TestReportJSON(t *testing.T) {
	out, _ := printReport(t, report(), true, false)
	var types []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v struct{ Type string }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		types = append(types, v.Type)
	}
	want := []string{"app", "app", "app", "cluster", "cluster", "pause", "skew", "promotion"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	if last, want := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:], `{"type":"promotion","group":"production","message":"production not started: c1 runs web r2"}`+"\n"; last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
}

// The promotion rule is not asked of a fleet that runs nothing: every
// app not deployed.
func TestReportHeldOnlyDeployed(t *testing.T) {
	r := report()
	r.Clusters = []status.Cluster{{Name: "c1", Group: "prod", Apps: []status.App{{App: "web", NotDeployed: true}}}}
	r.Results = map[string][]status.App{"c1": r.Clusters[0].Apps}
	r.Pauses = nil
	r.Held = func() []status.Hold { t.Error("Held asked of a fleet that runs nothing"); return nil }
	if out, _ := printReport(t, r, false, false); strings.Contains(out, "Promotion") {
		t.Errorf("stdout:\n%s", out)
	}
	r.Held = nil // no rule to ask: no note, no panic
	r.Results["c1"] = []status.App{{App: "web"}}
	printReport(t, r, false, false)
}
