package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// manyFleet is n staging and m production clusters.
func manyFleet(n, m int) []*fleet.Cluster {
	var cs []*fleet.Cluster
	for i := range n + m {
		c := &fleet.Cluster{Name: fmt.Sprintf("stg-%03d", i), Group: "staging"}
		if i >= n {
			c = &fleet.Cluster{Name: fmt.Sprintf("prod-%03d", i-n), Group: "production"}
		}
		cs = append(cs, c)
	}
	return cs
}

// With many clusters the summary says identical outcomes once and names
// only the clusters that differ; -o json stays per cluster.
func TestSummaryGroupsIdenticalOutcomes(t *testing.T) {
	clusters := manyFleet(2, 38)
	byName := map[string]*fleet.Cluster{}
	var outcomes []runner.Outcome
	var tally summary.Tally
	for _, c := range clusters {
		byName[c.Name] = c
		oc := runner.Outcome{Cluster: c.Name, State: runner.Succeeded}
		switch c.Name {
		case "stg-001":
			oc.State, oc.Err = runner.Failed, errors.New("boom")
		case "prod-000", "prod-001", "prod-002":
			oc.State, oc.Err = runner.NotStarted, errors.New("staging failed")
		}
		for range 40 {
			tally.Add(c.Name, apply.Unchanged)
		}
		outcomes = append(outcomes, oc)
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
		{many: 30, json: true, want: []string{`"cluster":"prod-010"`}, lines: 40},
	} {
		var out bytes.Buffer
		g := &GlobalOptions{IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}, NoColor: true}
		p := g.newPrinter(clusters, tc.json)
		p.many = tc.many
		if failed := printSummary(p, outcomes, &tally, byName, false, "applied"); failed != 4 {
			t.Errorf("%d failed, want 4", failed)
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
