package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/status"
)

// Release is what one cluster runs of one app.
type Release struct {
	// Exists: the app's set exists on the cluster.
	Exists bool
	// Revision is the current revision (0: none recorded), Digest its
	// render's digest.
	Revision int
	Digest   string
	// Verification is what the gates said of the current revision.
	Verification revision.Verification
	// Key is the cluster's digest key, under which Digest was computed.
	Key digest.Key
	// Undid is the render an automatic rollback took away, when the
	// current revision is one (Revision.Undid).
	Undid string
}

// A Render is an app's render for a cluster, as the promotion rule
// compares it with the digest the cluster recorded: under that cluster's
// digest key.
type Render interface {
	Digest(key digest.Key) string
}

// objects is a render by its objects.
type objects []*unstructured.Unstructured

// Digest is the render's digest under key.
func (o objects) Digest(key digest.Key) string { return digest.Render(o, key) }

// renderDigest is a render known by its digest, whatever the key.
type renderDigest string

// Digest is d.
func (d renderDigest) Digest(digest.Key) string { return string(d) }

// Reader reads what a cluster runs of an app: its target (targetReader) on real
// clusters, a fake in tests.
type Reader interface {
	Release(ctx context.Context, cluster, app string) (Release, error)
}

// A unit is what the promotion rule checks before a wave (units): a
// group upstream of it, or its group's earlier batches: clusters that
// must run a verified release of their renders, with a budget of
// clusters that need not (maxFailures).
type unit struct {
	Name        string
	MaxFailures int
	// Clusters are the unit's clusters that something is rendered for,
	// in fleet order.
	Clusters []string
	// Renders maps cluster, then app, to its render.
	Renders map[string]map[string]Render
}

// promotion is the promotion rule: a wave (a group) starts only when
// every cluster of every earlier group that the wave's apps target runs
// a verified revision of its current render; clusters that do not count
// against their group's maxFailures. A cluster the Reader skips (a
// *runner.SkipError: unreachable, with --skip-unreachable) does not
// count, as it does not within a run.
type promotion struct {
	// Units are the units of the fleet's waves in order, each with its
	// renders.
	Units []unit
	// Before, when set, names the Units each wave waits for, by wave
	// (a group's batches and the groups after: names); nil: the Units
	// before the wave's own.
	Before map[string][]string
	Reader Reader
	// Parallel bounds the clusters read at once (0: 16).
	Parallel int
	// Vouched, when set, reports whether a person vouches for wave (its
	// group requires an approval, checked next): a delivered cluster
	// published, not observed, then holds it no more than a verified
	// one. Without it such a cluster holds every wave after it.
	Vouched func(wave string) bool

	mu sync.Mutex
	// known are the releases this run verified or failed, or read, by
	// cluster/app: they need not be read (again), and count even where
	// the cluster did not let the verdict be recorded.
	known map[string]Release
}

// Note records what this run left a cluster running of an app.
func (p *promotion) Note(cluster, app string, r Release) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known == nil {
		p.known = map[string]Release{}
	}
	p.known[cluster+"/"+app] = r
}

// Brake is the rule as wave's brake: the wave, which deploys apps,
// starts once Check lets it; a wave it holds is said to emit.
func (p *promotion) Brake(wave string, apps []string, emit Sink) Brake {
	return Brake{Name: brakePromotion, Check: func(ctx context.Context) error {
		err := p.Check(ctx, wave, apps)
		if blocked, ok := err.(*BlockedError); ok {
			emit(WaveEvent{Type: typeWave, Wave: wave, State: "not started", Brake: brakePromotion, Reasons: blocked.Reasons})
		}
		return err
	}}
}

// Holds reports whether the rule reads cluster's renders: it is in a
// group some wave waits for.
func (p *promotion) Holds(cluster string) bool {
	return slices.ContainsFunc(p.Units, func(g unit) bool { return g.Renders[cluster] != nil })
}

// BlockedError says why a wave did not start.
type BlockedError struct {
	Wave string
	// Reasons name each cluster that holds the wave back.
	Reasons []string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s not started: %s", e.Wave, strings.Join(e.Reasons, "; "))
}

// Check returns nil when wave, which deploys apps, may start, else a
// *BlockedError naming the clusters of the first earlier group whose
// unverified clusters exceed its maxFailures.
func (p *promotion) Check(ctx context.Context, wave string, apps []string) error {
	for _, g := range p.Units {
		if p.Before == nil && g.Name == wave {
			return nil
		}
		if p.Before != nil && !slices.Contains(p.Before[wave], g.Name) {
			continue
		}
		reasons := p.unverified(ctx, g, apps, p.Vouched != nil && p.Vouched(wave))
		if len(reasons) > g.MaxFailures {
			return &BlockedError{Wave: wave, Reasons: reasons}
		}
	}
	return nil
}

// unverified returns, for each cluster of g that does not run a verified
// revision of its render of one of apps, why.
func (p *promotion) unverified(ctx context.Context, g unit, apps []string, vouched bool) []string {
	reasons := make([]string, len(g.Clusters))
	var eg errgroup.Group
	eg.SetLimit(max(1, p.parallel()))
	for i, cluster := range g.Clusters {
		eg.Go(func() error {
			for _, app := range apps {
				render, ok := g.Renders[cluster][app]
				if !ok {
					continue // the app does not go to this cluster
				}
				if why := p.why(ctx, cluster, app, render, vouched); why != "" {
					reasons[i] = why
					return nil
				}
			}
			return nil
		})
	}
	_ = eg.Wait()
	var out []string
	for _, r := range reasons {
		if r != "" {
			out = append(out, r)
		}
	}
	return out
}

func (p *promotion) parallel() int {
	if p.Parallel > 0 {
		return p.Parallel
	}
	return 16
}

// why says why cluster does not run a verified revision of render, or ""
// when it does, or when the Reader skipped the cluster.
func (p *promotion) why(ctx context.Context, cluster, app string, render Render, vouched bool) string {
	p.mu.Lock()
	r, ok := p.known[cluster+"/"+app]
	p.mu.Unlock()
	if !ok {
		var err error
		var skip *runner.SkipError
		r, err = p.Reader.Release(ctx, cluster, app)
		switch {
		case errors.As(err, &skip):
			return "" // not counted, as within a run
		case err != nil:
			return fmt.Sprintf("%s: %s cannot be read: %v", cluster, app, err)
		}
		p.Note(cluster, app, r) // a later wave need not read it again
	}
	d := render.Digest(r.Key)
	if vouched && r.Exists && r.Digest == d && r.Verification.State == revision.Unverified && strings.HasPrefix(r.Verification.Reason, NotObserved) {
		return "" // published, not observed, and an approval vouches for the next wave
	}
	return why(cluster, app, d, r)
}

// why says why a release r of app on cluster is not a verified revision
// of the render whose digest is given, or "" when it is.
func why(cluster, app, d string, r Release) string {
	switch {
	case !r.Exists:
		return fmt.Sprintf("%s does not run %s yet", cluster, app)
	case r.Digest == "":
		return fmt.Sprintf("%s runs %s without a recorded revision", cluster, app)
	case !digest.Comparable(d):
		return fmt.Sprintf("%s: %s cannot be compared with what it runs without the cluster's digest key (%s/%s not readable)", cluster, app, digest.Namespace, digest.KeySecret)
	case r.Digest != d:
		return fmt.Sprintf("%s runs %s r%d, not this render (%s, rendered %s)", cluster, app, r.Revision, revision.ShortDigest(r.Digest), revision.ShortDigest(d))
	case r.Verification.State == revision.Verified:
		return ""
	case r.Verification.Reason != "":
		return fmt.Sprintf("%s runs %s r%d, not verified (%s)", cluster, app, r.Revision, r.Verification)
	}
	return fmt.Sprintf("%s runs %s r%d, not verified (its gates have not passed)", cluster, app, r.Revision)
}

// StatusReader serves the releases a status read found, by cluster: what
// "kubectl fleet status" says of the promotion rule without reading the
// clusters again.
type StatusReader map[string][]status.App

// Release is what the status read found of app on cluster.
func (s StatusReader) Release(_ context.Context, cluster, app string) (Release, error) {
	for _, a := range s[cluster] {
		if a.App == app {
			r := Release{Exists: a.LastApplied != "" || a.Revision > 0, Revision: a.Revision, Digest: a.Digest, Key: a.Key}
			if a.Verification != nil {
				r.Verification = *a.Verification
			}
			return r, nil
		}
	}
	return Release{}, fmt.Errorf("status could not read it")
}

// releaseOf reads what the cluster of client runs of app.
func releaseOf(ctx context.Context, client *kube.Client, app string) (Release, error) {
	set, err := inventory.Load(ctx, client, app)
	if err != nil {
		return Release{}, err
	}
	r := Release{Exists: set.Exists, Revision: set.Revision, Digest: set.Digest}
	if r.Key, err = digest.KeyOf(ctx, client); err != nil {
		return Release{}, err
	}
	if !set.Exists || set.Revision == 0 {
		return r, nil
	}
	rev, err := revision.Recorded(ctx, client, app, set.Revision)
	r.Verification, r.Undid = rev.Verification, rev.Undid
	return r, err
}

// Held says, for each group of r after the first, why a rollout of r
// would not start it now (a status.Hold: a note under status's report),
// the releases read by reader (status's StatusReader: what it read of
// the clusters).
func Held(ctx context.Context, r *rendered.Set, reader Reader) []status.Hold {
	if len(r.Results) == 0 {
		return nil // nothing rendered: no render to compare with
	}
	p := promotionOf(r.Fleet, r.Results)
	p.Reader = reader
	var out []status.Hold
	ws := Waves(r.Fleet, r.Clusters)
	for _, w := range ws[min(1, len(ws)):] {
		if err := p.Check(ctx, w.Name, appsByWave(r, []runner.Wave{w})[w.Name]); err != nil {
			out = append(out, status.Hold{Type: typePromotion, Group: w.Name, Message: err.Error()})
		}
	}
	return out
}

// promote is the promotion rule of the run: the renders of Promote (nil:
// the run's), group by group, read back from the clusters that are not
// in the run.
func (e *Engine) promote() *promotion {
	f, renders := e.r.Fleet, e.o.Promote
	if renders == nil {
		renders = e.r.Results // at least the run's own groups hold each other
	}
	p := promotionOf(f, renders)
	p.Parallel, p.Reader = e.o.Parallel, targetReader{e}
	p.Vouched = func(wave string) bool {
		group, _, _ := strings.Cut(wave, "/") // a batch's wave is group/batch
		g := f.Group(group)
		return g != nil && g.Approval.Required
	}
	return p
}

// promotionOf is the promotion rule over results: for each step of the
// fleet (a group, or a batch), the units that must have verified a
// release before it (units), each with the digest of the render of each
// app for each of its clusters that results hold.
func promotionOf(f *fleet.Fleet, results []render.Result) *promotion {
	renders := map[string]map[string]Render{}
	for _, res := range results {
		c := res.Cluster.Name
		if renders[c] == nil {
			renders[c] = map[string]Render{}
		}
		renders[c][res.App] = objects(res.Objects)
	}
	p := &promotion{Before: map[string][]string{}}
	made := map[string]bool{}
	for _, s := range f.Steps() {
		for _, u := range units(f, s) {
			p.Before[s.Name] = append(p.Before[s.Name], u.Name)
			if made[u.Name] {
				continue
			}
			made[u.Name] = true
			g := unit{Name: u.Name, MaxFailures: u.MaxFailures, Renders: map[string]map[string]Render{}}
			for _, c := range u.Clusters {
				if renders[c] != nil {
					g.Clusters = append(g.Clusters, c)
					g.Renders[c] = renders[c]
				}
			}
			p.Units = append(p.Units, g)
		}
	}
	return p
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
	for _, c := range upstream(r.Fleet, Waves(r.Fleet, r.Clusters), r.Clusters) {
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
	cfg.Fleet, cfg.Selection, cfg.Tests, cfg.Warm, cfg.Shed = r.Fleet, fleet.Selection{Clusters: names}, false, nil, nil // the rule reads these renders whole
	up, err := rendered.Render(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("checking what the earlier groups verified (--skip-gates does not): %w", err)
	}
	return slices.Concat(r.Results, up.Results), nil
}
