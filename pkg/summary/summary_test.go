package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// With many clusters the summary says identical outcomes once and names
// only the clusters that differ; -o json stays per cluster.
func TestSummaryGroupsIdenticalOutcomes(t *testing.T) {
	clusters := []string{"stg-000", "stg-001"}
	for i := range 38 {
		clusters = append(clusters, fmt.Sprintf("prod-%03d", i))
	}
	r := Rollout{Tally: &Tally{}, Done: "applied", Group: func(c string) string { return c[:strings.Index(c, "-")] }}
	for _, c := range clusters {
		oc := runner.Outcome{Cluster: c, State: runner.Succeeded}
		switch c {
		case "stg-001":
			oc.State, oc.Err = runner.Failed, errors.New("boom")
		case "prod-000", "prod-001", "prod-002":
			oc.State, oc.Err = runner.NotStarted, errors.New("staging failed")
		}
		for range 40 {
			r.Tally.Add(c, string(change.Unchanged))
		}
		r.Outcomes = append(r.Outcomes, oc)
	}
	if failed := r.Failed(); failed != 4 {
		t.Errorf("%d failed, want 4", failed)
	}
	for _, tc := range []struct {
		many      int
		json      bool
		want      []string
		lines     int
		notWanted string
	}{
		{many: 30, want: []string{"36 clusters applied: 40 unchanged\n", "[stg-001]  failed: 40 unchanged: boom\n", "3 clusters not started: 40 unchanged: staging failed\n"}, lines: 4, notWanted: "[prod-010]"},
		{many: 100, want: []string{"[prod-010] applied: 40 unchanged\n"}, lines: 41},
		{many: 30, json: true, want: []string{`"cluster":"prod-010","group":"prod","state":"succeeded"`}, lines: 40},
	} {
		var out bytes.Buffer
		if tc.json {
			for _, res := range r.Results() {
				b, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				out.Write(append(b, '\n'))
			}
		} else {
			r.Print(&out, output.NewPrefixer(clusters, false), tc.many, nil)
		}
		got := out.String()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("many %d, json %v: no %q in\n%s", tc.many, tc.json, w, got)
			}
		}
		if n := strings.Count(got, "\n"); n != tc.lines {
			t.Errorf("many %d, json %v: %d lines, want %d:\n%s", tc.many, tc.json, n, tc.lines, got)
		}
		if tc.notWanted != "" && strings.Contains(got, tc.notWanted) {
			t.Errorf("many %d: %q in\n%s", tc.many, tc.notWanted, got)
		}
	}
}

// rollbackError is a failure that --atomic rolled back.
type rollbackError struct{ note string }

func (e *rollbackError) Error() string { return "apply failed" }

// A cluster's line says its state, its objects' actions in a fixed
// order, its gates and its error on one line.
func TestRolloutLine(t *testing.T) {
	tally := &Tally{}
	for _, a := range []string{string(change.Unchanged), string(change.Created), string(change.Unchanged), string(change.Failed)} {
		tally.Add("a", a)
	}
	tally.AddGate("a", "tests of web passed")
	tally.AddGate("a", "check smoke failed")
	rolledBack := func(err error) string {
		var rb *rollbackError
		if errors.As(err, &rb) {
			return rb.note
		}
		return ""
	}
	for _, tc := range []struct {
		oc      runner.Outcome
		dryRun  bool
		nothing string
		want    string
	}{
		{oc: runner.Outcome{Cluster: "b", State: runner.Succeeded}, nothing: "nothing to delete", want: "nothing to delete"},
		{oc: runner.Outcome{Cluster: "a", State: runner.Succeeded}, nothing: "nothing to delete", want: "applied: 1 created, 2 unchanged, 1 failed; tests of web passed, check smoke failed"},
		{oc: runner.Outcome{Cluster: "a", State: runner.Succeeded}, want: "applied: 1 created, 2 unchanged, 1 failed; tests of web passed, check smoke failed"},
		{oc: runner.Outcome{Cluster: "b", State: runner.Succeeded}, dryRun: true, want: "applied (server dry run)"},
		{oc: runner.Outcome{Cluster: "b", State: runner.Failed, Err: errors.New("one\ntwo")}, want: "failed: one; two"},
		{oc: runner.Outcome{Cluster: "b", State: runner.Failed, Err: fmt.Errorf("web: %w", &rollbackError{note: "rolled back to r2"})}, want: "failed, rolled back to r2: web: apply failed"},
		{oc: runner.Outcome{Cluster: "b", State: runner.NotStarted, Err: &rollout.BlockedError{Wave: "prod"}}, want: "not started: the earlier groups have not verified this release (above)"},
		{oc: runner.Outcome{Cluster: "b", State: runner.Skipped, Err: errors.New("unreachable")}, want: "skipped: unreachable"},
	} {
		r := Rollout{Tally: tally, Done: "applied", Nothing: tc.nothing, DryRun: tc.dryRun, RolledBack: rolledBack}
		if got := r.line(tc.oc); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.oc.Cluster, tc.oc.State, got, tc.want)
		}
	}
}
