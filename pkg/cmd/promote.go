package cmd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// gatesOf is what the gates of a cluster said so far in this run.
func (o *ApplyOptions) gatesOf(cluster string) *rollout.Gates {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.gates == nil {
		o.gates = map[string]*rollout.Gates{}
	}
	g, ok := o.gates[cluster]
	if !ok {
		g = &rollout.Gates{}
		o.gates[cluster] = g
	}
	return g
}

// verifies reports whether this run's gates decide whether the releases
// it applies are verified: a real apply, not a rollback (which restores a
// release and runs no gates).
func (o *ApplyOptions) verifies() bool { return !o.dryRun() && o.rollback == nil }

// soaking reports whether cluster's group watches it after its apply: its
// verdict then waits for the soak.
func (o *ApplyOptions) soaking(f *fleet.Fleet, c *fleet.Cluster) bool {
	g := f.Group(c.Group)
	return o.verifies() && g != nil && g.Soak > 0 && !o.SkipGates
}

// checks reports whether cluster's group runs checks after its apply.
func (o *ApplyOptions) checks(f *fleet.Fleet, c *fleet.Cluster) bool {
	g := f.Group(c.Group)
	return g != nil && len(g.Verify) > 0
}

// settle records, on the revision each app's apply left current on a
// cluster, what the gates said of it (rollout.Gates.Verdict), says it, and
// tells the promotion rule. Nothing is recorded after Ctrl-C: the gates
// did not finish, and the revision stays as it was.
func (o *ApplyOptions) settle(ctx context.Context, client *kube.Client, r *rendered.Set, cluster string, p *printer, tally *summary.Tally) {
	if o.dryRun() || ctx.Err() != nil {
		return
	}
	gates := o.gatesOf(cluster)
	results := r.Of(cluster)
	key, _ := digest.KeyOf(ctx, client) // read by the apply already
	revs := tally.Revisions(cluster)
	for _, res := range results {
		v := gates.Verdict(res.App)
		n, recorded := revs[res.App]
		if rec, ok := o.rollback.recordOf(cluster, res.App); ok && v.State != revision.Failed {
			v = restored(rec)
		}
		if o.promotion != nil && slices.Contains(v.Gates, rollout.Applied) {
			// Known in this run, revision or not (a user who may not
			// write revisions): the next groups need not read it.
			o.promotion.Note(cluster, res.App, rollout.Release{Exists: true, Revision: n, Digest: digest.Render(res.Objects, key), Key: key, Verification: v})
		}
		if !recorded {
			continue // not applied in this run, or no revision recorded
		}
		var err error
		if !gates.Recorded(res.App, v) { // else written with the revision
			err = o.writeVerdict(ctx, client, res.App, n, v)
		}
		p.emit(rollout.Verdict(cluster, res.App, rollout.Label(res.App, len(results) > 1), n, v, err))
	}
}

// writeVerdict records v on revision n of app. It is bounded like a
// lock's release: a cluster that stopped answering does not hold the run
// for --request-timeout, and a verdict not recorded leaves the revision
// as it was.
func (o *ApplyOptions) writeVerdict(ctx context.Context, client *kube.Client, app string, n int, v revision.Verification) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), kube.WriteTimeout(client))
	defer cancel()
	return revision.Verify(wctx, client, app, n, v)
}

// restored is the verdict of a rollback's revision: it re-applies the
// objects of an earlier revision, and runs no gate, so it is what that
// revision was: verified ("rollback to 2" first among its gates), or
// unverified, saying what the earlier one was.
func restored(rec revision.Revision) revision.Verification {
	t := rec.Verification
	if t.State == revision.Verified {
		return revision.Verification{State: revision.Verified, Gates: append([]string{rec.Description}, t.Gates...)}
	}
	return revision.Verification{State: revision.Unverified, Reason: fmt.Sprintf("%s, which is %s", rec.Description, t)}
}

// promote builds the promotion rule of a rollout of r: the renders of
// every group's clusters that the run's apps go to, those of earlier
// groups that are not selected rendered too (a render error stops the
// command before anything is written). Dry runs, rollbacks and
// --skip-gates have none.
func (o *ApplyOptions) promote(ctx context.Context, r *rendered.Set) error {
	if !o.verifies() || o.SkipGates {
		return nil
	}
	upstream, err := o.renderUpstream(ctx, r)
	if err != nil {
		return err
	}
	o.promotion = &rollout.Promotion{Groups: promotionGroups(r.Fleet, slices.Concat(r.Results, upstream)), Parallel: o.Parallel, Reader: rollout.ClusterReader{Connect: func(ctx context.Context, name string) (*kube.Client, error) {
		return o.connect(ctx, r.Fleet, r.Fleet.Cluster(name))
	}}}
	return nil
}

// promotionGroups are the fleet's groups in order, each with the digest of
// the render of each app for each of its clusters that results hold.
func promotionGroups(f *fleet.Fleet, results []render.Result) []rollout.Group {
	var groups []rollout.Group
	for _, g := range f.Groups {
		rg := rollout.Group{Name: g.Name, MaxFailures: g.MaxFailures, Renders: map[string]map[string]rollout.Render{}}
		for _, res := range results {
			c := res.Cluster.Name
			if res.Cluster.Group != g.Name {
				continue
			}
			if rg.Renders[c] == nil {
				rg.Renders[c] = map[string]rollout.Render{}
				rg.Clusters = append(rg.Clusters, c)
			}
			rg.Renders[c][res.App] = rollout.Objects(res.Objects)
		}
		groups = append(groups, rg)
	}
	return groups
}

// renderUpstream renders the run's apps for the clusters of the groups
// before the last selected one that are not selected: what they must
// have verified before a selected group gets the release.
func (o *ApplyOptions) renderUpstream(ctx context.Context, r *rendered.Set) ([]render.Result, error) {
	ws := waves(r.Fleet, r.Clusters)
	if len(ws) == 0 {
		return nil, nil
	}
	last := groupIndex(r.Fleet, ws[len(ws)-1].Name)
	var names []string
	for i := range r.Fleet.Clusters {
		c := &r.Fleet.Clusters[i]
		if groupIndex(r.Fleet, c.Group) >= last || slices.ContainsFunc(r.Clusters, func(s *fleet.Cluster) bool { return s.Name == c.Name }) {
			continue
		}
		if _, err := o.SourceOptions.Resolve(r.Fleet, []*fleet.Cluster{c}, o.namespace()); err == nil {
			names = append(names, c.Name) // an app of the run goes there
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	src := o.SourceOptions
	src.withTests, src.warm = false, nil
	if src.Manifests == "-" {
		return nil, fmt.Errorf("the earlier groups' clusters (%s) must have verified what -f - renders, and standard input is read once: select them too, or pass --skip-gates", strings.Join(names, ", "))
	}
	up, err := o.render(ctx, fleet.Selection{Clusters: names}, &src, true)
	if err != nil {
		return nil, fmt.Errorf("checking what the earlier groups verified (--skip-gates does not): %w", err)
	}
	return up.Results, nil
}

// groupIndex is the position of a group in the fleet file.
func groupIndex(f *fleet.Fleet, name string) int {
	return slices.IndexFunc(f.Groups, func(g fleet.Group) bool { return g.Name == name })
}

// appsByWave lists the apps each wave deploys.
func appsByWave(r *rendered.Set, ws []runner.Wave) map[string][]string {
	out := map[string][]string{}
	for _, w := range ws {
		for _, c := range w.Clusters {
			for _, res := range r.Of(c) {
				if !slices.Contains(out[w.Name], res.App) {
					out[w.Name] = append(out[w.Name], res.App)
				}
			}
		}
	}
	return out
}
