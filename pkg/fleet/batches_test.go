package fleet

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// group makes a fleet of one group of n clusters c000… (every third
// labelled canary=true) with batches, as a fleet file says them.
func group(t *testing.T, n int, batches string) *Fleet {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups:\n  - name: prod\n    batches: %s\nclusters:\n", batches)
	for i := n - 1; i >= 0; i-- { // file order is not name order
		labels := "{}"
		if i%3 == 0 {
			labels = "{canary: 'true'}"
		}
		fmt.Fprintf(&b, "  - {name: c%03d, group: prod, context: c%d, labels: %s}\n", i, i, labels)
	}
	f, err := Parse([]byte(b.String()), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sizes are the steps' names and cluster counts: "prod/1:1".
func sizes(steps []Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, fmt.Sprintf("%s:%d", s.Name, len(s.Clusters)))
	}
	return out
}

// TestBatches: sizes count from the group's first cluster, percentages
// round up, a batch whose size is already reached is empty (and no
// step), and the clusters no batch took are a last batch, "rest".
func TestBatches(t *testing.T) {
	for _, tt := range []struct {
		n       int
		batches string
		want    []string
	}{
		{1, "[1, 1%, 10%, 100%]", []string{"prod/1:1"}},
		{3, "[1, 1%, 10%, 100%]", []string{"prod/1:1", "prod/4:2"}},
		{10, "[1, 1%, 10%, 100%]", []string{"prod/1:1", "prod/4:9"}},
		{1000, "[1, 1%, 10%, 100%]", []string{"prod/1:1", "prod/2:9", "prod/3:90", "prod/4:900"}},
		{10, "[2, 50%]", []string{"prod/1:2", "prod/2:3", "prod/rest:5"}},
		{3, "[100%, 1]", []string{"prod/1:3"}},
		// c000, c003, c006, c009 are canaries; the second selector
		// overlaps the first and takes only what it left.
		{10, "[{selector: canary=true, name: canary}, {selector: 'canary in (true,yes)'}, 50%]", []string{"prod/canary:4", "prod/3:1", "prod/rest:5"}},
		{10, "[{selector: nobody=here, optional: true}, 1]", []string{"prod/2:1", "prod/rest:9"}},
	} {
		t.Run(fmt.Sprintf("%d %s", tt.n, tt.batches), func(t *testing.T) {
			f := group(t, tt.n, tt.batches)
			got := sizes(f.Batches(&f.Groups[0]))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			steps := f.Batches(&f.Groups[0])
			seen := map[string]bool{}
			for i, s := range steps {
				if s.N != i+1 || s.Of != len(steps) {
					t.Errorf("%s numbered %d of %d, want %d of %d", s.Name, s.N, s.Of, i+1, len(steps))
				}
				for _, c := range s.Clusters {
					if seen[c] {
						t.Errorf("%s in two batches", c)
					}
					seen[c] = true
				}
			}
			if len(seen) != tt.n {
				t.Errorf("%d of %d clusters in a batch", len(seen), tt.n)
			}
		})
	}
}

// TestBatchOrder: size batches take clusters by name, whatever the file
// order; a selector batch comes first where it is listed first.
func TestBatchOrder(t *testing.T) {
	f := group(t, 5, "[{selector: canary=true}, 1]")
	got := [][]string{}
	for _, s := range f.Batches(&f.Groups[0]) {
		got = append(got, s.Clusters)
	}
	// The size batch (1) is reached by the canaries already: empty.
	want := [][]string{{"c000", "c003"}, {"c001", "c002", "c004"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
}

// TestTracks: after: makes the groups a graph; the rollout order puts
// each group after those it waits for, in file order otherwise, and
// Upstream follows the graph, not the file.
func TestTracks(t *testing.T) {
	f, err := Parse([]byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: f}
groups:
  - name: eu-prod
    after: [eu-staging]
  - name: eu-staging
    after: []
  - name: us-staging
    after: []
  - name: us-prod
    after: [us-staging]
  - name: global
    after: [eu-prod, us-prod]
  - name: last
clusters:
  - {name: a, group: eu-prod, context: a}
`), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, g := range f.Order() {
		order = append(order, g.Name)
	}
	if diff := cmp.Diff([]string{"eu-staging", "eu-prod", "us-staging", "us-prod", "global", "last"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	for g, want := range map[string][]string{
		"eu-prod":    {"eu-staging"},
		"us-prod":    {"us-staging"},
		"eu-staging": nil,
		"global":     {"eu-staging", "eu-prod", "us-staging", "us-prod"},
		"last":       {"eu-staging", "eu-prod", "us-staging", "us-prod", "global"},
	} {
		if diff := cmp.Diff(want, f.Upstream(g)); diff != "" {
			t.Errorf("upstream of %s (-want +got):\n%s", g, diff)
		}
	}
}

func TestAmount(t *testing.T) {
	for _, tt := range []struct {
		in       string
		total    int
		up, down int
		invalid  bool
	}{
		{"3", 10, 3, 3, false},
		{"10%", 3, 1, 0, false},
		{"10%", 1000, 100, 100, false},
		{"33%", 10, 4, 3, false},
		{"0%", 10, 0, 0, false},
		{"ten", 0, 0, 0, true},
		{"+1", 0, 0, 0, true},
		{"%", 0, 0, 0, true},
	} {
		a, err := ParseAmount(tt.in)
		if (err != nil) != tt.invalid {
			t.Errorf("%q: err %v", tt.in, err)
			continue
		}
		if err == nil && (a.Up(tt.total) != tt.up || a.Down(tt.total) != tt.down || a.String() != tt.in) {
			t.Errorf("%q of %d: up %d down %d (%s), want %d %d", tt.in, tt.total, a.Up(tt.total), a.Down(tt.total), a, tt.up, tt.down)
		}
	}
}
