package rollout

import (
	"context"
	"fmt"
	"slices"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// gatesOf is what the gates of a cluster said so far in this run.
func (e *Engine) gatesOf(cluster string) *gateSet { return &e.runOf(cluster).gates }

// Verifies reports whether a run's gates decide whether the releases it
// applies are verified: a real apply, not a rollback (which restores a
// release and runs no gates).
func (o Options) Verifies() bool { return !o.DryRun && o.Rollback == nil }

// Gated reports whether a run's gates and promotion rule apply: it
// verifies, and they are not skipped.
func (o Options) Gated() bool { return o.Verifies() && !o.SkipGates }

func (e *Engine) verifies() bool { return e.o.Verifies() }
func (e *Engine) gated() bool    { return e.o.Gated() }

// soaking reports whether cluster's group watches it after its apply:
// its verdict then waits for the soak.
func (e *Engine) soaking(c *fleet.Cluster) bool {
	_, ok := e.soakedIn[c.Name]
	return ok
}

// gatesAfter are the gates that follow app's apply (and health) on c in
// a gated run, in the order they run: its tests, its group's checks,
// its soak. An apply verifies its app by itself (App.Final: the verdict
// is written with the revision) only when none follows: a new gate is
// added here, or a release it has not judged yet is recorded verified.
func (e *Engine) gatesAfter(c *fleet.Cluster, app App) []string {
	var out []string
	if app.Tests {
		out = append(out, "tests")
	}
	if g := e.r.Fleet.Group(c.Group); g != nil {
		for _, chk := range g.Verify {
			out = append(out, "check "+chk.Name)
		}
	}
	if e.soaking(c) {
		out = append(out, "soak") // and its analyses
	}
	return out
}

// checks reports whether cluster's group runs checks after its apply.
func checks(f *fleet.Fleet, c *fleet.Cluster) bool {
	g := f.Group(c.Group)
	return g != nil && len(g.Verify) > 0
}

// settle records, on the revision each app's apply left current on a
// cluster, what the gates said of it (Gates.Verdict), says it, and tells
// the promotion rule. Nothing is recorded after Ctrl-C: the gates did
// not finish, and the revision stays as it was.
func (e *Engine) settle(ctx context.Context, cluster string) {
	if e.o.DryRun || ctx.Err() != nil {
		return
	}
	run := e.runOf(cluster)
	// As the cluster's work left them: a delivered cluster's let go
	// (needsObjects) are not made again, its revisions carry the digest.
	results := e.r.Kept(cluster)
	key := run.target.key(ctx)
	for _, res := range results {
		v := run.gates.Verdict(res.App)
		rev, recorded := run.revision(res.App)
		n := rev.Revision
		if rec, ok := e.o.Rollback.Record(cluster, res.App); ok && v.State != revision.Failed {
			v = restored(rec)
		}
		if e.promotion != nil && (slices.Contains(v.Gates, applied) || slices.Contains(v.Gates, published)) {
			// Known in this run, revision or not (a user who may not
			// write revisions): the next groups need not read it. The
			// apply computed the render's digest already.
			d := rev.Digest
			if d == "" {
				d = digest.Render(res.Objects, key)
			}
			e.promotion.Note(cluster, res.App, Release{Exists: true, Revision: n, Digest: d, Key: key, Verification: v})
		}
		ev := verdictOf(cluster, res.App, labelOf(res.App, len(results) > 1), n, v, nil)
		if run.target.verdict(ctx, &ev, recorded, v) {
			e.emit(ev)
		}
	}
}

// writeVerdict records v on revision n of app. It is bounded like a
// lock's release: a cluster that stopped answering does not hold the run
// for --request-timeout, and a verdict not recorded leaves the revision
// as it was.
func writeVerdict(ctx context.Context, client *kube.Client, app string, n int, v revision.Verification) error {
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
