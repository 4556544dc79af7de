package rollout

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// publishAll packs every delivered cluster's renders and pushes each
// artifact by digest (a dry run only packs them), before any wave: no
// tag moves, so nothing a cluster pulls changes, and a push that fails
// fails the run before anything is written anywhere. It streams: at most
// --parallel clusters at once, each cluster's render made again if it
// was let go (rendered.Set.Shed) and let go again once its artifacts
// are pushed, so that a publish of 10,000 clusters holds the renders in
// flight, not every one. A render that holds a Secret or a value
// decrypted for the run is refused before its push: a registry keeps
// what it is given, for whoever may pull.
func (e *Engine) publishAll(ctx context.Context) error {
	var (
		pushes  []*publish.Pushes // one per registry
		origin  publish.Origin
		pending []string // clusters with artifacts to push
		of      = map[string]*publish.Pushes{}
	)
	if len(e.r.Results) > 0 {
		origin.Revision = e.source(ctx, e.r.Results[0]).Commit
	}
	for _, c := range e.r.Clusters {
		p := e.delivered(c.Name)
		if p == nil {
			continue
		}
		d := p.d
		reg, err := publish.For(e.r.Fleet, d)
		if err != nil {
			return fmt.Errorf("cluster %s: delivery: %w", c.Name, err)
		}
		if d.Signing != nil && !e.o.DryRun {
			if _, err := e.signer(d.Signing); err != nil {
				return fmt.Errorf("cluster %s: delivery: %w", c.Name, err) // before anything is pushed
			}
		}
		i := slices.IndexFunc(pushes, func(ps *publish.Pushes) bool {
			return ps.Registry().Base == reg.Base && ps.Registry().Insecure == reg.Insecure
		})
		if i < 0 {
			pushes, i = append(pushes, reg.Pushes(origin, e.o.DryRun)), len(pushes)
		}
		reg, push := pushes[i].Registry(), false
		for _, app := range e.r.Apps(c.Name) {
			rev, ok := e.o.Rollback.Record(c.Name, app)
			if !ok || rev.Artifact == "" {
				push = true
				continue
			}
			if err := e.keep(c.Name, app, reg, rev.Artifact, nil); err != nil {
				return err
			}
			// Back to exactly that artifact, which this run does not
			// sign: it must carry this delivery's signature for the
			// cluster and app already.
			if err := e.signedFor(ctx, d, c.Name, app); err != nil {
				return fmt.Errorf("cluster %s: cannot roll back app %s: %w", c.Name, app, err)
			}
		}
		if push {
			pending, of[c.Name] = append(pending, c.Name), pushes[i]
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(e.o.Parallel, 1))
	for _, name := range pending {
		g.Go(func() error { return e.pushCluster(ctx, name, of[name]) })
	}
	return g.Wait()
}

// pushCluster pushes the artifacts of a delivered cluster's apps that
// the run does not roll back (publishAll). An app whose render is the
// one its current revision recorded, from the same commit, is not
// packed again, nor its render made again: its artifact is that
// revision's (unchanged).
func (e *Engine) pushCluster(ctx context.Context, name string, pushes *publish.Pushes) error {
	reg := pushes.Registry()
	var made []render.Result // the cluster's render, made again once needed
	for _, res := range e.r.Kept(name) {
		if rev, ok := e.o.Rollback.Record(name, res.App); ok && rev.Artifact != "" {
			continue // kept (publishAll)
		}
		if res.Err != nil {
			return res.Err
		}
		if d, ok := e.unchanged(ctx, reg, name, res, pushes.Origin()); ok {
			if err := e.keep(name, res.App, reg, d, nil); err != nil {
				return err
			}
			continue
		}
		if made == nil {
			made = e.r.Of(name)
		}
		res = resultOf(made, res.App)
		if res.Err != nil {
			return res.Err
		}
		if err := e.publishable(res); err != nil {
			return err
		}
		e.noteRenders([]render.Result{res})
		d, err := pushes.Push(ctx, publish.Target{App: res.App, Cluster: name, Objects: res.Objects})
		if err != nil {
			return fmt.Errorf("publishing to oci://%s: %w", reg.Base, err)
		}
		if err := e.keep(name, res.App, reg, d.String(), pushes.Manifest(res.App, d)); err != nil {
			return err
		}
	}
	return nil
}

// renderFacts are what a delivered cluster's run needs of an app's
// render once its objects are let go: its digest (no key: nothing
// published holds a Secret), how many objects, why it must not be
// published (publish.Refuse), and the decrypted values it holds.
type renderFacts struct {
	digest    string
	objects   int
	refused   error
	sensitive []string
}

// noteRenders notes the facts of each of results, once per cluster and
// app (the render, right before it lets the objects of a delivered
// cluster go; the push, for those it made).
func (e *Engine) noteRenders(results []render.Result) {
	for _, res := range results {
		if res.Err != nil {
			continue
		}
		e.renders.Do(res.Cluster.Name+"/"+res.App, func() (renderFacts, error) {
			f := renderFacts{digest: digest.Render(res.Objects, nil), objects: len(res.Objects), refused: publish.Refuse(res.Cluster.Name, res.App, res.Objects, res.Decrypted)}
			if e.r != nil {
				f.sensitive = e.r.Mask.In(objectMaps(res.Objects)...)
			}
			return f, nil
		})
	}
}

// factsOf are the facts noted of cluster's render of app.
func (e *Engine) factsOf(cluster, app string) (renderFacts, bool) {
	return e.renders.Peek(cluster + "/" + app)
}

// unchanged is the artifact of the current revision of res's app on a
// delivered cluster when res renders what it recorded (the same digest
// and objects) from the same commit, which Pack would make again byte
// for byte; the history read for it serves the wave (recordRevision)
// while fresh. Not on a dry run, nor for a render whose facts were not
// noted (not let go), nor for one refused.
func (e *Engine) unchanged(ctx context.Context, reg publish.Registry, cluster string, res render.Result, origin publish.Origin) (string, bool) {
	f, ok := e.factsOf(cluster, res.App)
	if !ok || e.o.DryRun || f.refused != nil {
		return "", false
	}
	h, err := reg.History(ctx, res.App, cluster)
	if err != nil {
		return "", false // packed and pushed, which says the error
	}
	e.delivered(cluster).readHistory(res.App, h)
	cur, ok := h.Record()
	if !ok || cur.Artifact == "" || cur.Digest != f.digest || cur.Objects != f.objects || cur.Source.Commit != origin.Revision {
		return "", false
	}
	return cur.Artifact, true
}

// signer is the signer of a delivery's signing key, read once per run.
func (e *Engine) signer(s *fleet.Signing) (*publish.Signer, error) {
	return publish.SignerOf(e.r.Fleet, s)
}

// claim is what a signature of cluster's artifact of app decides in
// this run: its revision n (0: a delete).
func (e *Engine) claim(cluster, app string, n int) publish.Claim {
	return publish.Claim{Fleet: e.r.Fleet.Metadata.Name, Cluster: cluster, App: app, Revision: n}
}

// signAt signs cluster's artifact a of app for its revision n, when its
// delivery d signs: called right before its tag moves, after every
// gate, approval, pause, window and the plan check said yes, never
// ahead. A rollback signs nothing (publishAll checked the signature its
// artifact has).
func (e *Engine) signAt(ctx context.Context, d *fleet.Delivery, cluster, app string, a artifact, n int) error {
	if d.Signing == nil || e.o.Rollback != nil {
		return nil
	}
	s, err := e.signer(d.Signing)
	if err != nil {
		return err
	}
	// One writer of an artifact's signature manifest at a time, and
	// once a run: an artifact is signed once per key (Registry.Sign), so
	// the clusters of a run that get the same artifact after the first
	// need not read its signatures again.
	once, _ := e.signing.Do(a.registry.Base+"/"+app+"@"+a.digest.String(), func() (*signedOnce, error) { return &signedOnce{}, nil })
	once.mu.Lock()
	defer once.mu.Unlock()
	if once.signed {
		return nil
	}
	if err := a.registry.Sign(ctx, app, a.digest, s, e.claim(cluster, app, n)); err != nil {
		return fmt.Errorf("app %s: %w", app, err)
	}
	once.signed = true
	return nil
}

// signedOnce is an artifact's signing in a run: signed says the run
// signed it (or found it signed); a failure is tried again by the next
// cluster.
type signedOnce struct {
	mu     sync.Mutex
	signed bool
}

// signedFor checks, when d signs, that cluster's artifact of app (as
// kept) carries a signature of d's key whose claim names this fleet,
// cluster and app.
func (e *Engine) signedFor(ctx context.Context, d *fleet.Delivery, cluster, app string) error {
	if d.Signing == nil {
		return nil
	}
	s, err := e.signer(d.Signing)
	if err != nil {
		return err
	}
	pub, err := s.PublicKey()
	if err != nil {
		return err
	}
	a := e.delivered(cluster).artifacts[app]
	return a.registry.SignedFor(ctx, a.digest, pub, e.claim(cluster, app, 0))
}

// keep notes the artifact d in reg that cluster's tag of app is to
// point at, and its manifest when this run pushed it (else nil).
func (e *Engine) keep(cluster, app string, reg publish.Registry, d string, manifest []byte) error {
	h, err := v1.NewHash(d)
	if err != nil {
		return fmt.Errorf("cluster %s, app %s: artifact %q: %w", cluster, app, d, err)
	}
	p := e.delivered(cluster)
	if p.artifacts == nil {
		p.artifacts = map[string]artifact{}
	}
	p.artifacts[app] = artifact{registry: reg, digest: h, manifest: manifest}
	return nil
}

// publishable refuses a render that must not go to a registry
// (publish.Refuse).
func (e *Engine) publishable(res render.Result) error {
	return publish.Refuse(res.Cluster.Name, res.App, res.Objects, res.Decrypted)
}

// diff is what publishing would change for a delivered
// cluster, app by app, against the artifacts its tags point at (no
// cluster is asked), said as DiffEvents; with o.Plan, what apply --plan
// checks of each app: its render's digest and where its tag was.
func (p *registryTarget) diff(ctx context.Context, o DiffOptions) (diff.Summary, []plan.App, error) {
	e, c := p.e, p.run.cluster
	reg, err := publish.For(e.r.Fleet, p.d)
	if err != nil {
		return diff.Summary{}, nil, err
	}
	var (
		all   []diff.Object
		plans []plan.App
	)
	for _, res := range e.r.Of(c.Name) {
		diffs, at, err := e.diffArtifact(ctx, reg, c.Name, res, !o.All)
		if err != nil {
			return diff.Summarize(all), plans, fmt.Errorf("app %s: %w", res.App, err)
		}
		e.emit(DiffEvent{Cluster: c.Name, App: res.App, Diffs: diffs})
		all = append(all, diffs...)
		if o.Plan {
			plans = append(plans, plan.App{App: res.App, Digest: digest.Render(res.Objects, nil), Source: e.source(ctx, res), Published: at})
		}
	}
	return diff.Summarize(all), plans, nil
}

// diffArtifact diffs an app's render for a delivered cluster against
// the artifact the cluster's tag points at, and says where the tag
// was (plan.NoTag for nowhere).
func (e *Engine) diffArtifact(ctx context.Context, reg publish.Registry, cluster string, res render.Result, skipUnchanged bool) ([]diff.Object, string, error) {
	if err := e.publishable(res); err != nil {
		return nil, "", err
	}
	before, at, found, err := reg.Pull(ctx, res.App, cluster)
	if err != nil {
		return nil, "", err
	}
	tag := plan.NoTag
	if found {
		tag = at.String()
	}
	diffs, err := diff.Published(res.Objects, before, diff.Options{App: res.App, Cluster: cluster, Context: 3, SkipUnchanged: skipUnchanged})
	return diffs, tag, err
}
