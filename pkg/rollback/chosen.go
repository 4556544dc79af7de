package rollback

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Chosen is what a rollback chose in each cluster before writing
// anything (Choose, on every cluster): the apps skipped and why, the
// clusters whose revisions could not be read, and how each app's new
// revision is recorded. A nil Chosen is an apply's: nothing skipped,
// nothing failed, nothing recorded as a rollback.
type Chosen struct {
	mu      sync.Mutex
	errs    map[string]error
	skips   map[string][]Skip
	records map[string]revision.Revision // by cluster/app
	// from is the digest each goes back from, by cluster/app.
	from map[string]string
}

// Read reads, on every cluster (parallel at once; a delivered one asks
// delivered), the revision each of
// apps (none: every app of the fleet there) goes back to: to, or the one
// before the current. It returns what it chose and the revisions' objects as
// the run's results. Nothing is written.
func Read(ctx context.Context, conn kube.Connector, delivered Delivered, f *fleet.Fleet, clusters []*fleet.Cluster, apps []string, to, parallel int) (*Chosen, []render.Result) {
	chosen := &Chosen{errs: map[string]error{}, skips: map[string][]Skip{}, records: map[string]revision.Revision{}}
	perCluster := make([][]render.Result, len(clusters))
	index := make(map[string]int, len(clusters))
	for i, c := range clusters {
		index[c.Name] = i // results stay in cluster order
	}
	for _, oc := range kube.EachTarget(ctx, conn, f, clusters, parallel, kube.Reach{Written: func(ctx context.Context, c *fleet.Cluster, client *kube.Client) error {
		targets, skips, err := Choose(ctx, client, f.Metadata.Name, apps, to)
		perCluster[index[c.Name]] = chosen.note(f, c, targets, skips)
		return err
	}, Delivered: func(ctx context.Context, c *fleet.Cluster) error {
		targets, skips, err := delivered.Choose(ctx, c, apps, to)
		perCluster[index[c.Name]] = chosen.note(f, c, targets, skips)
		return err
	}}) {
		if oc.Err != nil {
			chosen.errs[oc.Cluster] = oc.Err // not started (Ctrl-C) included
		}
	}
	return chosen, slices.Concat(perCluster...)
}

// Delivered is what a cluster delivered through a registry answers a
// rollback (package target/registry): Choose, from the histories kept
// beside its tags.
type Delivered interface {
	Choose(ctx context.Context, c *fleet.Cluster, apps []string, to int) ([]Target, []Skip, error)
}

// note keeps what was chosen on c, and returns the revisions' objects
// as c's results.
func (pl *Chosen) note(f *fleet.Fleet, c *fleet.Cluster, targets []Target, skips []Skip) []render.Result {
	var out []render.Result
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.skips[c.Name] = append(pl.skips[c.Name], skips...)
	for _, t := range targets {
		out = append(out, render.Result{Target: render.Target{Cluster: render.ClusterOf(f, c), App: t.App}, Objects: t.Objects, Decrypted: len(t.Record.Sensitive) > 0})
		pl.records[c.Name+"/"+t.App] = t.Record
		if pl.from == nil {
			pl.from = map[string]string{}
		}
		pl.from[c.Name+"/"+t.App] = t.From
	}
	return out
}

// Failed is why a cluster's revisions could not be read, if they could
// not.
func (pl *Chosen) Failed(cluster string) error {
	if pl == nil {
		return nil
	}
	return pl.errs[cluster]
}

// Skipped are the apps skipped on a cluster, and why.
func (pl *Chosen) Skipped(cluster string) []Skip {
	if pl == nil {
		return nil
	}
	return pl.skips[cluster]
}

// Record is how a rollback records an app's new revision on a cluster:
// its description and the source of the revision it brings back; false
// for an app it does not roll back there (or an apply's nil Chosen).
func (pl *Chosen) Record(cluster, app string) (revision.Revision, bool) {
	if pl == nil {
		return revision.Revision{}, false
	}
	r, ok := pl.records[cluster+"/"+app]
	return r, ok
}

// Mask adds to m the values the revisions chosen for results were
// decrypted from (Revision.Sensitive): a rollback masks them as a
// render's would be.
func (pl *Chosen) Mask(m *mask.Set, results []render.Result) {
	for _, res := range results {
		if rev, ok := pl.Record(res.Cluster.Name, res.App); ok {
			for _, v := range rev.Sensitive {
				m.Add(v)
			}
		}
	}
}

// Only keeps, of what was chosen, the apps named on each cluster (an
// automatic rollback's: those the failed run changed there), each
// recorded as done for why ("rollback (automatic) to 3: production/canary
// failed …") with the render it undid (Revision.Undid), and returns
// their results. An app named for which nothing
// was chosen (it has no earlier verified revision) is in missing, by
// cluster, with why.
func (pl *Chosen) Only(apps map[string][]string, why string, results []render.Result) (kept []render.Result, missing map[string][]Skip) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	missing = map[string][]Skip{}
	for _, res := range results {
		if slices.Contains(apps[res.Cluster.Name], res.App) {
			kept = append(kept, res)
		}
	}
	for key, rec := range pl.records {
		cluster, app, _ := strings.Cut(key, "/")
		if !slices.Contains(apps[cluster], app) {
			delete(pl.records, key)
			continue
		}
		rec.Description = strings.Replace(rec.Description, "rollback", "rollback (automatic)", 1) + ": " + why
		rec.Undid = pl.from[key]
		pl.records[key] = rec
	}
	for cluster, names := range apps {
		for _, app := range names {
			if _, ok := pl.records[cluster+"/"+app]; ok {
				continue
			}
			reason := "not read"
			for _, s := range pl.skips[cluster] {
				if s.App == app || s.App == "" {
					reason = s.Reason
				}
			}
			if err := pl.errs[cluster]; err != nil {
				reason = err.Error()
			}
			missing[cluster] = append(missing[cluster], Skip{App: app, Reason: reason})
		}
	}
	return kept, missing
}
