package rollout

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// gatesOf is what the gates of a cluster said so far in this run.
func (e *Engine) gatesOf(cluster string) *Gates {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gates == nil {
		e.gates = map[string]*Gates{}
	}
	g, ok := e.gates[cluster]
	if !ok {
		g = &Gates{}
		e.gates[cluster] = g
	}
	return g
}

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
	g := e.r.Fleet.Group(c.Group)
	return e.gated() && g != nil && g.Soak > 0
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
func (e *Engine) settle(ctx context.Context, client *kube.Client, cluster string) {
	if e.o.DryRun || ctx.Err() != nil {
		return
	}
	gates := e.gatesOf(cluster)
	results := e.r.Of(cluster)
	var key digest.Key // a delivered cluster's renders hold no Secret: no key
	if client != nil && e.delivered(e.clusters[cluster]) == nil {
		key, _ = digest.KeyOf(ctx, client) // read by the apply already
	}
	for _, res := range results {
		v := gates.Verdict(res.App)
		rev, recorded := e.revision(cluster, res.App)
		n := rev.Revision
		if rec, ok := e.o.Rollback.Record(cluster, res.App); ok && v.State != revision.Failed {
			v = restored(rec)
		}
		if e.promotion != nil && (slices.Contains(v.Gates, Applied) || slices.Contains(v.Gates, Published)) {
			// Known in this run, revision or not (a user who may not
			// write revisions): the next groups need not read it. The
			// apply computed the render's digest already.
			d := rev.Digest
			if d == "" {
				d = digest.Render(res.Objects, key)
			}
			e.promotion.Note(cluster, res.App, Release{Exists: true, Revision: n, Digest: d, Key: key, Verification: v})
		}
		if a, ok := e.artifacts[cluster][res.App]; ok {
			var err error // a delivered cluster: recorded in the registry
			if recorded {
				err = verifyPublished(ctx, a.registry, cluster, res.App, n, v)
			}
			ev := Verdict(cluster, res.App, Label(res.App, len(results) > 1), n, v, err)
			ev.Digest = a.digest.String()
			e.emit(ev)
			continue
		}
		if !recorded {
			continue // not applied in this run, or no revision recorded
		}
		var err error
		if !gates.Recorded(res.App, v) { // else written with the revision
			err = writeVerdict(ctx, client, res.App, n, v)
		}
		e.emit(Verdict(cluster, res.App, Label(res.App, len(results) > 1), n, v, err))
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

// promote is the promotion rule of the run: the renders of Promote (nil:
// the run's), group by group, read back from the clusters that are not
// in the run.
func (e *Engine) promote() *Promotion {
	f, renders := e.r.Fleet, e.o.Promote
	if renders == nil {
		renders = e.r.Results // at least the run's own groups hold each other
	}
	p := promotionOf(f, renders)
	p.Parallel, p.Reader = e.o.Parallel, PublishedReader{Fleet: f, Next: ClusterReader{Connect: e.connect}}
	p.Vouched = func(wave string) bool {
		group, _, _ := strings.Cut(wave, "/") // a batch's wave is group/batch
		g := f.Group(group)
		return g != nil && g.Approval == fleet.ApprovalRequired
	}
	return p
}

// promotionOf is the promotion rule over results: for each step of the
// fleet (a group, or a batch), the units that must have verified a
// release before it (units), each with the digest of the render of each
// app for each of its clusters that results hold.
func promotionOf(f *fleet.Fleet, results []render.Result) *Promotion {
	renders := map[string]map[string]Render{}
	for _, res := range results {
		c := res.Cluster.Name
		if renders[c] == nil {
			renders[c] = map[string]Render{}
		}
		renders[c][res.App] = Objects(res.Objects)
	}
	p := &Promotion{Before: map[string][]string{}}
	made := map[string]bool{}
	for _, s := range f.Steps() {
		for _, u := range units(f, s) {
			p.Before[s.Name] = append(p.Before[s.Name], u.Name)
			if made[u.Name] {
				continue
			}
			made[u.Name] = true
			g := Group{Name: u.Name, MaxFailures: u.MaxFailures, Renders: map[string]map[string]Render{}}
			for _, c := range u.Clusters {
				if renders[c] != nil {
					g.Clusters = append(g.Clusters, c)
					g.Renders[c] = renders[c]
				}
			}
			p.Groups = append(p.Groups, g)
		}
	}
	return p
}

// soaks are the soaks of the waves whose group has one: after the group
// succeeded, its applied objects are watched that long (Soak), and an
// object that is no longer healthy fails its cluster (and so, by the
// group's budget, the rollout; --atomic rolls it back). The last group
// soaks too: nothing follows it, but its verdict, --atomic and the exit
// code wait for the soak. A cluster's locks cover its soak, verdict and
// restore (its Writes, Locks.Writes), and go once its soak is over: a
// lock lost meanwhile stops the soak, and nothing is recorded or
// restored there.
func (e *Engine) soaks(ws []runner.Wave) map[string]Soak {
	out := map[string]Soak{}
	for i := range ws {
		g := e.r.Fleet.Group(ws[i].Group)
		if g == nil {
			continue
		}
		d := g.Soak // after the group's last wave
		if i+1 < len(ws) && ws[i+1].Group == g.Name && g.BatchSoak > 0 {
			d = g.BatchSoak // after a batch another follows
		}
		if d <= 0 {
			continue
		}
		out[ws[i].Name] = Soak{
			Duration: d, Interval: e.o.SoakInterval,
			Health: e.soakCheck,
			Gates:  e.gatesOf,
			Emit:   e.emit,
			Stage:  func(cluster, stage string) { e.emit(StageEvent{Cluster: cluster, Stage: stage}) },
			Ended: func(ctx context.Context, cluster string, err error) error {
				if client, cerr := e.connect(ctx, cluster); cerr == nil || !e.clusters[cluster].Observed() {
					e.settle(ctx, client, cluster) // else soakCheck said so
				}
				return e.rollBack(ctx, cluster, err)
			},
			Writes: e.Locks.Writes,
			Release: func(ctx context.Context, cluster string) {
				e.Locks.ReleaseCluster(ctx, cluster, e.Log)
				e.Connector.Idle(cluster)
			},
		}
	}
	return out
}

// soakCheck reads every object applied to a cluster and returns an error
// for the first one that is not healthy; a cluster it cannot read passes,
// unverified (published).
func (e *Engine) soakCheck(ctx context.Context, name string) error {
	if !e.clusters[name].Observed() {
		return nil // published, not observed: its verdict says so
	}
	client, err := e.connect(ctx, name)
	if err != nil {
		return err
	}
	for _, res := range e.r.Of(name) {
		for _, obj := range res.Objects {
			obj = obj.DeepCopy()
			h, err := apply.Health(context.WithoutCancel(ctx), client, obj)
			switch {
			case apierrors.IsNotFound(err):
				return fmt.Errorf("%s is gone", object.Ref(obj))
			case err != nil:
				return fmt.Errorf("%s: %w", object.Ref(obj), err)
			case h.Status != kstatus.CurrentStatus:
				return fmt.Errorf("%s is %s: %s", object.Ref(obj), h.Status, h.Message)
			}
		}
	}
	return nil
}

// runChecks runs the checks of the cluster's group (groups[].verify)
// through Checks, each on this machine with a kubeconfig that reaches
// only this cluster, and returns the first failure. What they print is
// said line by line (OutputEvent).
func (e *Engine) runChecks(ctx context.Context, c *fleet.Cluster, cluster render.Cluster, gates *Gates) error {
	f := e.r.Fleet
	if !checks(f, c) {
		return nil
	}
	kubeconfig, remove, err := e.Connector.Kubeconfig(f, c)
	if err != nil {
		gates.Fail("", "checks: "+err.Error())
		return fmt.Errorf("checks: %w", err)
	}
	defer remove()
	out := &lines{say: func(line string) { e.emit(OutputEvent{Cluster: c.Name, Line: line}) }}
	emit := func(ev Event) {
		if _, ended := ev.(CheckEvent); ended {
			out.flush() // a last line without a newline, before the check's outcome
		}
		e.emit(ev)
	}
	return Checks{
		Dir: f.Dir, Checks: f.Group(c.Group).Verify, Kubeconfig: kubeconfig, Env: CheckEnv(cluster), Secret: credentialEnvs(f), Out: out,
		Emit: emit, Gates: gates, Stage: func(stage string) { e.emit(StageEvent{Cluster: c.Name, Stage: stage}) },
	}.Run(ctx, c.Name)
}

// credentialEnvs are the environment variables the fleet's
// kubeconfigFrom reads kubeconfigs from (every cluster's and the
// defaults'): a check, which reaches one cluster, gets none of them.
func credentialEnvs(f *fleet.Fleet) []string {
	var out []string
	for i := range f.Clusters {
		if _, from := f.KubeconfigOf(&f.Clusters[i]); from != nil && from.Env != "" && !slices.Contains(out, from.Env) {
			out = append(out, from.Env)
		}
	}
	return out
}

// lines is a writer that says each whole line it is given; flush says
// the last one when it has no newline.
type lines struct {
	say func(string)
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.buf.Write(p)
	for {
		i := bytes.IndexByte(l.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.buf.Next(i + 1))
		l.say(strings.TrimSuffix(line, "\n"))
	}
}

func (l *lines) flush() {
	if l.buf.Len() > 0 {
		l.say(l.buf.String())
		l.buf.Reset()
	}
}

// Promoted are the renders the promotion rule of a rollout of r holds
// its waves to (Options.Promote): r's, and those of the earlier groups'
// clusters that are not selected, rendered from cfg (what rendered r)
// too; a render error stops the command before anything is written.
// Runs that are not gated (Options.Gated) have none.
func Promoted(ctx context.Context, cfg rendered.Config, r *rendered.Set, o Options) ([]render.Result, error) {
	if !o.Gated() {
		return nil, nil
	}
	var names []string
	for _, c := range Upstream(r.Fleet, Waves(r.Fleet, r.Clusters), r.Clusters) {
		if _, err := cfg.Source.Resolve(r.Fleet, []*fleet.Cluster{c}, cfg.Namespace); err == nil {
			names = append(names, c.Name) // an app of the run goes there
		}
	}
	if len(names) == 0 {
		return r.Results, nil
	}
	if cfg.Source.Manifests == "-" {
		return nil, fmt.Errorf("the earlier groups' clusters (%s) must have verified what -f - renders, and standard input is read once: select them too, or pass --skip-gates", strings.Join(names, ", "))
	}
	cfg.Fleet, cfg.Selection, cfg.Tests, cfg.Warm = r.Fleet, fleet.Selection{Clusters: names}, false, nil
	up, err := rendered.Render(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("checking what the earlier groups verified (--skip-gates does not): %w", err)
	}
	return slices.Concat(r.Results, up.Results), nil
}
