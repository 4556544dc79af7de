package rollout

import (
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Waves turns the selected clusters into rollout waves: the fleet's
// steps (fleet.Steps: its groups in rollout order, each group's batches
// in order) with the selected clusters they hold, each with its group's
// policy, its percentages taken of the whole group. A wave needs the
// waves of the groups its group waits for (after:) and its group's
// earlier batches: a wave only they stopped after is held.
func Waves(f *fleet.Fleet, clusters []*fleet.Cluster) []runner.Wave {
	selected := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		selected[c.Name] = true
	}
	size := map[string]int{}
	for i := range f.Clusters {
		size[f.Clusters[i].Group]++
	}
	var out []runner.Wave
	for _, s := range f.Steps() {
		g := s.Group
		w := runner.Wave{Name: s.Name, Group: g.Name, Batch: s.Batch, MaxParallel: g.MaxParallel.Up(size[g.Name]), MaxFailures: g.MaxFailures.Down(size[g.Name])}
		for _, c := range s.Clusters {
			if selected[c] {
				w.Clusters = append(w.Clusters, c)
			}
		}
		if len(w.Clusters) == 0 {
			continue
		}
		w.Needs = needs(f, out, g.Name)
		out = append(out, w)
	}
	return out
}

// needs are the waves of before that a wave of group waits for: those
// of the groups upstream of it, and its group's own (earlier batches).
func needs(f *fleet.Fleet, before []runner.Wave, group string) []string {
	up := map[string]bool{group: true}
	for _, u := range f.Upstream(group) {
		up[u] = true
	}
	out := []string{}
	for _, w := range before {
		if up[w.Group] {
			out = append(out, w.Name)
		}
	}
	return out
}

// units are what must have verified a release before the wave of step
// s starts: each group upstream of its group, whole (all its batches),
// and its group's earlier batches. A unit's budget is its group's
// maxFailures, a percentage taken of the unit's clusters: 10% tolerates
// no failure among a canary batch of 1.
func units(f *fleet.Fleet, s fleet.Step) []unit {
	var out []unit
	for _, name := range f.Upstream(s.Group.Name) {
		g := f.Group(name)
		u := unit{Name: name}
		for _, b := range f.Batches(g) {
			u.Clusters = append(u.Clusters, b.Clusters...)
		}
		u.MaxFailures = g.MaxFailures.Down(len(u.Clusters))
		out = append(out, u)
	}
	if s.N > 1 {
		g := s.Group
		u := unit{Name: "the batches of " + g.Name + " before " + s.Name}
		for _, b := range f.Batches(g)[:s.N-1] {
			u.Clusters = append(u.Clusters, b.Clusters...)
		}
		u.MaxFailures = g.MaxFailures.Down(len(u.Clusters))
		out = append(out, u)
	}
	return out
}

// upstream are the clusters the promotion rule reads before the waves
// ws start (units) that are not selected: what must have verified a
// release before a selected group or batch gets it, rendered for the
// promotion rule.
func upstream(f *fleet.Fleet, ws []runner.Wave, selected []*fleet.Cluster) []*fleet.Cluster {
	in := map[string]bool{}
	for _, c := range selected {
		in[c.Name] = true
	}
	steps := map[string]fleet.Step{}
	for _, s := range f.Steps() {
		steps[s.Name] = s
	}
	all := make([]*fleet.Cluster, len(f.Clusters))
	for i := range f.Clusters {
		all[i] = &f.Clusters[i]
	}
	_, byName := fleet.Index(all)
	var out []*fleet.Cluster
	for _, w := range ws {
		for _, u := range units(f, steps[w.Name]) {
			for _, c := range u.Clusters {
				if !in[c] {
					in[c] = true
					out = append(out, byName[c])
				}
			}
		}
	}
	return out
}

// FirstProtected is the first protected group among the waves ws, with
// all its clusters there (every batch's); "" when none is protected.
func FirstProtected(f *fleet.Fleet, ws []runner.Wave) (group string, clusters []string) {
	for _, w := range ws {
		if g := f.Group(w.Group); g != nil && g.Protected && (group == "" || group == w.Group) {
			group, clusters = w.Group, append(clusters, w.Clusters...)
		}
	}
	return group, clusters
}
