package fleet

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// Amount is a number of clusters, or a percentage of a group's clusters
// ("10%"): a group's maxParallel and maxFailures, a batch's size.
type Amount struct {
	N       int
	Percent bool
}

// ParseAmount reads "3" or "10%".
func ParseAmount(s string) (Amount, error) {
	s = strings.TrimSpace(s)
	num, pct := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(num)
	if err != nil || strings.HasPrefix(num, "+") {
		return Amount{}, fmt.Errorf("want a number of clusters or a percentage of the group's (3, 10%%), got %q", s)
	}
	return Amount{N: n, Percent: pct}, nil
}

func (a Amount) String() string {
	if a.Percent {
		return strconv.Itoa(a.N) + "%"
	}
	return strconv.Itoa(a.N)
}

// Up is the amount of total clusters, a percentage rounded up: 10% of 3
// clusters is 1 (a batch's size, a group's maxParallel).
func (a Amount) Up(total int) int {
	if !a.Percent {
		return a.N
	}
	return int(math.Ceil(float64(total) * float64(a.N) / 100))
}

// Down is the amount of total clusters, a percentage rounded down: 10%
// of 3 clusters is 0 (a group's maxFailures: a budget never grows by
// rounding).
func (a Amount) Down(total int) int {
	if !a.Percent {
		return a.N
	}
	return total * a.N / 100
}

// Batch is a step inside a group: the clusters of a label selector, or
// of a size, not taken by an earlier batch.
type Batch struct {
	// Name names the batch in output ("production/canary"); default its
	// number, from 1.
	Name string `yaml:"name"`
	// Selector takes the group's clusters with these labels
	// ("canary=true").
	Selector string `yaml:"selector"`
	// Size takes clusters in name order until this batch and the earlier
	// ones hold this many of the group's (1, 10%, 100%): sizes count
	// from the group's first cluster, not from the batch's.
	Size *Amount `yaml:"size"`
	// Optional lets a selector batch match no cluster of its group (a
	// canary batch of a group whose canaries come later); otherwise that
	// is a fleet-file error: a typo would drop the canary unseen.
	Optional bool `yaml:"optional"`
	// Analysis are measured on the batch's clusters while it soaks, after
	// the group's own.
	Analysis []Analysis `yaml:"analysis"`
}

// Step is one wave of a rollout: a group, or one batch of a group, with
// every cluster of the fleet in it (not only a selection's).
type Step struct {
	// Name is the group's name, or "group/batch" for a batch.
	Name  string
	Group *Group
	// Batch is the batch's name ("" for a group without batches); N its
	// number from 1 and Of the group's batch count.
	Batch string
	N, Of int
	// Clusters are the step's clusters, in the order they roll out.
	Clusters []string
}

// Steps are the fleet's groups in rollout order (Order), each split into
// its batches (Batches); an empty batch is no step.
func (f *Fleet) Steps() []Step {
	var out []Step
	for _, g := range f.Order() {
		out = append(out, f.Batches(g)...)
	}
	return out
}

// groupClusters are g's clusters in file order.
func (f *Fleet) groupClusters(g *Group) []*Cluster {
	var out []*Cluster
	for i := range f.Clusters {
		if f.Clusters[i].Group == g.Name {
			out = append(out, &f.Clusters[i])
		}
	}
	return out
}

// Batches are g's steps: one with all its clusters in file order when it
// has no batches, else one per batch that takes clusters, in order. A
// batch takes, from the clusters no earlier batch took (by name), those
// its selector matches, or the first ones until its size is reached; the
// clusters no batch took make a last batch, "rest", so that a group's
// batches never leave a cluster out.
func (f *Fleet) Batches(g *Group) []Step {
	members := f.groupClusters(g)
	if len(g.Batches) == 0 {
		s := Step{Name: g.Name, Group: g, N: 1, Of: 1}
		for _, c := range members {
			s.Clusters = append(s.Clusters, c.Name)
		}
		return []Step{s}
	}
	slices.SortStableFunc(members, func(a, b *Cluster) int { return strings.Compare(a.Name, b.Name) })
	taken, total := map[string]bool{}, len(members)
	var out []Step
	for i, b := range g.Batches {
		s := Step{Group: g, Batch: batchName(b, i)}
		sel := labels.Nothing()
		if b.Selector != "" {
			sel, _ = labels.Parse(b.Selector) // validated on load
		}
		for _, c := range members {
			switch {
			case taken[c.Name]:
			case b.Size != nil && len(taken) < b.Size.Up(total), b.Size == nil && sel.Matches(labels.Set(c.Labels)):
				taken[c.Name] = true
				s.Clusters = append(s.Clusters, c.Name)
			}
		}
		out = append(out, s)
	}
	rest := Step{Group: g, Batch: "rest"}
	for _, c := range members {
		if !taken[c.Name] {
			rest.Clusters = append(rest.Clusters, c.Name)
		}
	}
	out = append(out, rest)
	return numbered(g, out)
}

// numbered drops the steps without clusters, and names and numbers the
// others.
func numbered(g *Group, steps []Step) []Step {
	steps = slices.DeleteFunc(steps, func(s Step) bool { return len(s.Clusters) == 0 })
	for i := range steps {
		steps[i].Name, steps[i].N, steps[i].Of = g.Name+"/"+steps[i].Batch, i+1, len(steps)
	}
	return steps
}

// batchName is batch i's name: its own, else its number from 1.
func batchName(b Batch, i int) string {
	if b.Name != "" {
		return b.Name
	}
	return strconv.Itoa(i + 1)
}

// Order is the fleet's groups in rollout order: each after the groups it
// waits for (after:; by default the group before it in the file), in
// file order where the graph leaves a choice. A group in a cycle (an
// error on load) comes last.
func (f *Fleet) Order() []*Group {
	placed := map[string]bool{}
	var out []*Group
	for len(out) < len(f.Groups) {
		progress := false
		for i := range f.Groups {
			g := &f.Groups[i]
			if placed[g.Name] || !f.ready(i, placed) {
				continue
			}
			placed[g.Name], progress = true, true
			out = append(out, g)
			break // the first ready group in file order, then look again
		}
		if !progress {
			for i := range f.Groups {
				if !placed[f.Groups[i].Name] {
					placed[f.Groups[i].Name] = true
					out = append(out, &f.Groups[i])
				}
			}
		}
	}
	return out
}

// ready reports whether every group group i waits for is placed.
func (f *Fleet) ready(i int, placed map[string]bool) bool {
	for _, a := range f.after(i) {
		if !placed[a] {
			return false
		}
	}
	return true
}

// after are the groups group i waits for directly: its after:, else the
// group before it in the file.
func (f *Fleet) after(i int) []string {
	if a := f.Groups[i].After; a != nil {
		return *a
	}
	if i == 0 {
		return nil
	}
	return []string{f.Groups[i-1].Name}
}

// After are the groups g waits for directly (after:, else the group
// before it in the file).
func (f *Fleet) After(g string) []string {
	for i := range f.Groups {
		if f.Groups[i].Name == g {
			return f.after(i)
		}
	}
	return nil
}

// Progressive reports whether the fleet's rollout is more than its
// groups in file order: a group has batches or says after:.
func (f *Fleet) Progressive() bool {
	for _, g := range f.Groups {
		if len(g.Batches) > 0 || g.After != nil {
			return true
		}
	}
	return false
}

// BatchOf is the batch each cluster of a group with batches is in, by
// cluster name.
func (f *Fleet) BatchOf() map[string]string {
	out := map[string]string{}
	for _, s := range f.Steps() {
		if s.Batch != "" {
			for _, c := range s.Clusters {
				out[c] = s.Batch
			}
		}
	}
	return out
}

// Upstream are the groups g waits for, directly or through others, in
// rollout order: what must have verified a release before g gets it.
func (f *Fleet) Upstream(g string) []string {
	index := map[string]int{}
	for i := range f.Groups {
		index[f.Groups[i].Name] = i
	}
	seen := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		i, ok := index[name]
		if !ok {
			return
		}
		for _, a := range f.after(i) {
			if !seen[a] {
				seen[a] = true
				walk(a)
			}
		}
	}
	walk(g)
	var out []string
	for _, grp := range f.Order() {
		if seen[grp.Name] && grp.Name != g {
			out = append(out, grp.Name)
		}
	}
	return out
}

// cycle is a path of after: edges from group i back to it ("a", "b",
// "a"), or nil when there is none.
func (f *Fleet) cycle(i int) []string {
	index := map[string]int{}
	for j := range f.Groups {
		index[f.Groups[j].Name] = j
	}
	start := f.Groups[i].Name
	seen := map[string]bool{}
	var walk func(j int, path []string) []string
	walk = func(j int, path []string) []string {
		for _, a := range f.after(j) {
			k, ok := index[a]
			switch {
			case a == start:
				return append(path, a)
			case !ok || seen[a]:
				continue
			}
			seen[a] = true
			if c := walk(k, append(path, a)); c != nil {
				return c
			}
		}
		return nil
	}
	return walk(i, []string{start})
}
