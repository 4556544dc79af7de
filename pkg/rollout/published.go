package rollout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/version"
)

// A delivered cluster (fleet.Delivery) is never written to: each app's
// render for it is an artifact in a registry, pushed by digest before
// the first wave (publishAll), and the cluster's tag moves to it when
// its wave starts (published). Its Flux pulls the tag and applies it;
// the rollout reads, through the cluster's context when it has one,
// that Flux applied exactly that artifact and is Ready, and the gates
// and the promotion rule go on from there as for any cluster.

// artifact is one app's render for a delivered cluster, in its registry.
type artifact struct {
	registry publish.Registry
	digest   v1.Hash
	// manifest is the artifact's manifest when this run pushed it: its
	// tags move without reading it back (publish.Registry.TagPushed).
	manifest []byte
}

// registryTarget is a cluster delivered through a registry: never
// written to. Each app's "apply" moves its tag to its artifact (pushed
// before the first wave: publishAll) and, when the cluster is observed,
// waits for its Flux; its revisions and verdicts are records beside the
// tags, and --atomic moves the tags back (restore). Nothing takes a lock
// on the cluster.
type registryTarget struct {
	e      *Engine
	run    *clusterRun
	d      *fleet.Delivery
	client *kube.Client // nil: not observed, or a dry run
	// artifacts are its apps' renders in the registry (keep, in
	// publishAll): read-only once the waves start.
	artifacts map[string]artifact
	// moved are the tags the cluster's run moved, by app, each to what
	// it pointed at before: written by the cluster's run alone, read by
	// --atomic (restore).
	moved map[string]v1.Hash
	// paused are the fleet's pauses on the cluster, read at pausesRead
	// (Apply): written and read by the cluster's run alone.
	paused     []pause.Pause
	pausesRead time.Time
	// histories are its apps' histories as read before the waves
	// (unchanged), by app: recordRevision takes one while fresh.
	histories map[string]readHistory
	// results are its renders as its wave has them (prepare): without
	// their objects when it needs none (needsObjects).
	results []render.Result
}

// readHistory is an app's history and when it was read.
type readHistory struct {
	h  publish.History
	at time.Time
}

// historyFresh is how long a history read before the waves serves the
// revision a cluster's wave records: a cluster whose wave starts later
// reads it again, so that a history written meanwhile (another run) is
// not written over from an older read.
const historyFresh = time.Minute

// readHistory keeps the history of app read before the waves.
func (p *registryTarget) readHistory(app string, h publish.History) {
	p.run.mu.Lock()
	defer p.run.mu.Unlock()
	if p.histories == nil {
		p.histories = map[string]readHistory{}
	}
	p.histories[app] = readHistory{h: h, at: time.Now()}
}

// history is app's history: as read before the waves while fresh (once),
// or read now.
func (p *registryTarget) history(ctx context.Context, reg publish.Registry, app string) (publish.History, error) {
	p.run.mu.Lock()
	read, ok := p.histories[app]
	delete(p.histories, app)
	p.run.mu.Unlock()
	if ok && time.Since(read.at) <= historyFresh {
		return read.h, nil
	}
	return reg.History(ctx, app, p.run.cluster.Name)
}

// needsObjects says whether the cluster's wave reads its objects: to
// diff or check a plan, to roll back or see whether a release was rolled
// back (undone), through its context the health of each (a soak's), or
// for an app whose facts were not noted. Otherwise what it needs of them
// was noted before they were let go (renderFacts), and they are not
// made again.
func (p *registryTarget) needsObjects() bool {
	e, o := p.e, p.e.o
	if o.Diff || o.Plan != nil || o.Rollback != nil || e.r.Fleet.RollsBackAnywhere() || p.run.cluster.Observed() {
		return true
	}
	for _, app := range e.r.Apps(p.run.cluster.Name) {
		if _, ok := e.factsOf(p.run.cluster.Name, app); !ok {
			return true
		}
	}
	return false
}

var _ target = (*registryTarget)(nil)

// delivered is the delivery of the fleet's cluster name, nil when the
// run writes to it.
func (e *Engine) delivered(name string) *registryTarget {
	p, _ := e.runOf(name).target.(*registryTarget)
	return p
}

// connect connects to the cluster when a context reads it (not on a
// dry run): its Flux is read back through it, read-only.
func (p *registryTarget) connect(ctx context.Context) (context.Context, error) {
	c := p.run.cluster
	if !c.Observed() || p.e.o.DryRun {
		return ctx, nil
	}
	p.e.emit(StageEvent{Cluster: c.Name, Stage: "connecting"})
	var err error
	p.client, err = p.e.connect(ctx, c.Name)
	return ctx, err
}

func (p *registryTarget) observed() bool { return p.client != nil }

func (p *registryTarget) planCheck([]render.Result) func(context.Context, string) error { return nil }

func (p *registryTarget) key(context.Context) digest.Key { return nil }

// app is how res's app goes: its gates passed by its Apply, as the
// cluster's Flux says (publishApp).
func (p *registryTarget) app(res render.Result, _ []render.Result) App {
	a := App{Name: res.App, Published: true}
	if fa := p.e.r.Fleet.App(res.App); fa != nil {
		a.DependsOn = fa.DependsOn
	}
	return a
}

// verdict records v beside the tags, on the revision this run recorded.
func (p *registryTarget) verdict(ctx context.Context, ev *verificationEvent, recorded bool, v revision.Verification) bool {
	a, ok := p.artifacts[ev.App]
	if !ok {
		return false
	}
	if recorded && !p.run.gates.Recorded(ev.App, v) {
		ev.Error = errString(verifyPublished(ctx, a.registry, ev.Cluster, ev.App, ev.Revision, v))
	}
	ev.Digest = a.digest.String()
	return true
}

// prepare does what comes before a delivered cluster's first tag
// moves: with Diff, the diffs against its artifacts; with a plan, the
// check that neither its renders nor its tags moved since.
func (p *registryTarget) prepare(ctx context.Context, results []render.Result) error {
	e, c := p.e, p.run.cluster
	p.results = results
	if !e.o.Diff && e.o.Plan == nil {
		return nil
	}
	for _, res := range inDependencyOrder(e.r.Fleet, results, func(r render.Result) string { return r.App }) {
		a := p.artifacts[res.App]
		diffs, at, err := e.diffArtifact(ctx, a.registry, c.Name, res, true)
		if err != nil {
			return fmt.Errorf("app %s: diff: %w", res.App, err)
		}
		if e.o.Diff {
			e.emit(DiffEvent{Cluster: c.Name, App: res.App, Diffs: diffs})
		}
		if e.o.Plan != nil {
			e.emit(StageEvent{Cluster: c.Name, Stage: "checking the plan"})
			if at == plan.NoTag {
				at = ""
			}
			planned := e.o.Plan.Cluster(c.Name).App(res.App)
			if err := plan.CheckArtifact(planned, res.Source.Artifact); err != nil {
				return err
			}
			if err := plan.CheckPublished(planned, res.Objects, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// deliveredUser is who delivered cluster c's context authenticates,
// asked once a run (Locks.User) for its approvals and its history; ""
// when it has no context or does not tell.
func (e *Engine) deliveredUser(ctx context.Context, c *fleet.Cluster) string {
	if !c.Observed() || e.o.DryRun {
		return ""
	}
	client, err := e.connect(ctx, c.Name)
	if err != nil {
		return ""
	}
	return e.Locks.User(client, c.Name)(ctx)
}

// publishApp moves the cluster's tag of one app to its artifact, and,
// when the cluster is observed, waits for Flux to apply it.
func (p *registryTarget) publishApp(ctx context.Context, res render.Result) error {
	e, c, d, client := p.e, p.run.cluster, p.d, p.client
	a := p.artifacts[res.App]
	label := labelOf(res.App, len(e.r.Apps(c.Name)) > 1)
	ev := PublishEvent{Type: typePublish, Cluster: c.Name, App: res.App, Repository: publish.Scheme + a.registry.Base + "/" + res.App, Tag: c.Name, Digest: a.digest.String(), DryRun: e.o.DryRun, Label: label}
	prev, found, err := a.registry.Resolve(ctx, res.App, c.Name)
	if err != nil {
		return err
	}
	if found {
		ev.Previous = prev.String()
	}
	if e.o.DryRun {
		e.emit(ev)
		return nil
	}
	rev, err := p.recordRevision(ctx, res, a)
	if err != nil {
		return err
	}
	// Signed now, every gate passed, for this cluster and revision; also
	// when the tag is there already: someone with push rights may have
	// moved it to the artifact before any gate said yes. Not when nothing
	// changed (the revision current already, its tag there): it was
	// signed when that revision was released, and a no-op signs nothing.
	if unchanged := found && prev == a.digest && !rev.New; !unchanged {
		if err := e.signAt(ctx, d, c.Name, res.App, a, rev.Revision); err != nil {
			return err
		}
	}
	if !found || prev != a.digest {
		e.emit(StageEvent{Cluster: c.Name, Stage: "publishing " + res.App})
		if err := a.registry.TagPushed(ctx, res.App, c.Name, a.digest, a.manifest); err != nil {
			return err
		}
		p.moved[res.App] = prev // the zero hash: there was no tag
	}
	e.emit(ev)
	e.revised(rev)
	gates := &p.run.gates
	gates.Pass(res.App, published)
	if client == nil {
		gates.Unverified(res.App, notObservedVerdict(c.Name).Reason)
		return nil
	}
	flux, err := e.await(ctx, c.Name, d, a.registry, client, res.App, a.digest.String())
	if err != nil {
		return err
	}
	gates.Pass(res.App, applied)
	if flux.Wait {
		gates.Pass(res.App, "healthy")
	}
	if len(e.r.TestsOf(c.Name, res.App)) > 0 {
		gates.Unverified(res.App, "its tests write to the cluster, and nothing writes to a delivered cluster")
	}
	return nil
}

// NotObserved starts the reason a delivered cluster's release is
// unverified when no context reads the cluster: the promotion rule lets
// a wave that needs an approval pass it (Promotion.Vouched), no other.
const NotObserved = "published, not observed"

// notObservedVerdict is the verdict of a release to a delivered cluster that no
// context reads, when nothing else failed or passed: recorded with its
// revision, so that the verdict is not written a second time.
func notObservedVerdict(cluster string) revision.Verification {
	return revision.Verification{State: revision.Unverified, Reason: NotObserved + ": no context reads cluster " + cluster, Gates: []string{published}}
}

// published is the gate of an artifact whose tag moved: the cluster's
// Flux may pull it.
const published = "published"

// recordRevision records, in the registry, the revision a delivered
// cluster's tag of res's app is about to point at: a new one (its
// artifact kept by its own tag, then the history saying it is current)
// unless the current revision is that artifact already. The tag moves
// after it: a run stopped in between leaves a history ahead of its tag,
// which the promotion rule does not count (releaseOf). It is recorded as
// by who the cluster's context authenticates, or, without one, the local
// user. It returns the event that says the revision.
func (p *registryTarget) recordRevision(ctx context.Context, res render.Result, a artifact) (RevisionEvent, error) {
	e, cluster, reg := p.e, p.run.cluster.Name, a.registry
	h, err := p.history(ctx, reg, res.App)
	if err != nil {
		return RevisionEvent{}, err
	}
	ev := RevisionEvent{Type: typeRevision, Cluster: cluster, App: res.App, Label: labelOf(res.App, len(e.r.Apps(cluster)) > 1)}
	if cur, ok := h.Record(); ok && cur.Artifact == a.digest.String() {
		// Current already; its tag may lag (a run stopped, or a registry
		// that failed, between the two): it moves now.
		ev.Revision, ev.Description, ev.Digest, ev.Source = cur.Number, cur.Description, cur.Digest, cur.Source.Artifact
		p.run.gates.Stored(res.App, cur.Verification) // its verdict is not written again unless it changes
		return ev, nil
	}
	rev := e.record(ctx, cluster, res).Revision
	rev.App, rev.Number, rev.Time, rev.Version, rev.User = res.App, h.Next(), time.Now().UTC().Truncate(time.Second), version.Get(), cmp.Or(e.deliveredUser(ctx, p.run.cluster), revision.LocalUser())
	rev.Digest, rev.Objects, rev.Artifact = digest.Render(res.Objects, nil), len(res.Objects), a.digest.String()
	if f, ok := e.factsOf(cluster, res.App); ok && res.Objects == nil {
		rev.Digest, rev.Objects = f.digest, f.objects // let go (needsObjects)
		if rev.Sensitive == nil {
			rev.Sensitive = f.sensitive
		}
	}
	if err := reg.TagPushed(ctx, res.App, publish.RevisionTag(cluster, rev.Number), a.digest, a.manifest); err != nil {
		return RevisionEvent{}, err
	}
	if p.client == nil {
		rev.Verification = notObservedVerdict(cluster) // what settle says, unless a gate after it says otherwise
	}
	dropped := h.Add(rev, e.o.HistoryLimit)
	if err := reg.SaveHistory(ctx, res.App, cluster, h); err != nil {
		return RevisionEvent{}, err
	}
	if p.client == nil {
		p.run.gates.Stored(res.App, rev.Verification)
	}
	// The tags that kept the dropped revisions' artifacts go too, so
	// that a registry that collects untagged artifacts may take them: a
	// registry that refuses is said, and the rollout goes on.
	for _, r := range dropped {
		if err := reg.Untag(ctx, res.App, publish.RevisionTag(cluster, r.Number)); err != nil {
			e.emit(OutputEvent{Cluster: cluster, Line: "warning: " + err.Error()})
		}
	}
	ev.Revision, ev.New, ev.Description, ev.Digest, ev.Source = rev.Number, true, rev.Description, rev.Digest, rev.Source.Artifact
	return ev, nil
}

// verifyPublished records v on revision n of app's history on a
// delivered cluster, read again first: another run may have written it
// since.
func verifyPublished(ctx context.Context, reg publish.Registry, cluster, app string, n int, v revision.Verification) error {
	h, err := reg.History(ctx, app, cluster)
	if err != nil {
		return err
	}
	if !h.Verify(n, v) {
		return fmt.Errorf("revision %d is no longer in the history", n)
	}
	return reg.SaveHistory(ctx, app, cluster, h)
}

// fluxPoll is how often the rollout reads a delivered cluster's Flux
// objects while it waits for them.
var fluxPoll = 2 * time.Second

// await waits until the cluster's Flux applied artifact dg of app and is
// Ready, or failed it, bounded by --timeout plus the delivery's
// interval (Flux looks for a new artifact that often).
func (e *Engine) await(ctx context.Context, cluster string, d *fleet.Delivery, reg publish.Registry, client *kube.Client, app, dg string) (publish.Flux, error) {
	interval, timeout := d.Every(), e.o.Timeout
	if timeout <= 0 {
		timeout = fleet.DefaultDeliveryTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+interval)
	defer cancel()
	e.emit(StageEvent{Cluster: cluster, Stage: "waiting for Flux to apply " + app})
	var last publish.Flux
	refused := 0 // polls in a row the source said it does not take dg
	// A refusal the first read finds may be from before dg was signed
	// (someone moved the tag to it earlier, and Flux, backing off, has not
	// tried again): it fails the wait only at the timeout.
	stale, first := "", true
	for {
		flux, err := reg.ReadFlux(ctx, client.Dynamic, d, e.r.Fleet.Metadata.Name, app, cluster)
		if err == nil {
			last = flux
		}
		switch {
		case err != nil && ctx.Err() == nil:
			return flux, err
		case err == nil && len(flux.Tampered) > 0:
			return flux, tamperedError(cluster, flux)
		case err == nil && flux.Converged(dg):
			e.emit(FluxEvent{Type: typeFlux, Cluster: cluster, App: app, Digest: dg, Flux: flux, Label: labelOf(app, len(e.r.Apps(cluster)) > 1)})
			return flux, nil
		case err == nil && flux.Failed(dg) != "":
			return flux, fmt.Errorf("Flux failed to apply %s: %s", publish.Short(dg), flux.Failed(dg))
		case err == nil && first && flux.Refused(dg) != "":
			stale = flux.Refused(dg)
		case err == nil && flux.Refused(dg) != "" && flux.Refused(dg) != stale:
			// Not at once: the source may say so of the artifact before.
			if refused++; refused >= 3 {
				return flux, fmt.Errorf("the cluster's Flux does not take %s: %s", publish.Short(dg), flux.Refused(dg))
			}
		case err == nil:
			refused = 0
		}
		first = first && err != nil
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return last, fmt.Errorf("Flux did not apply %s within %s: %s", publish.Short(dg), timeout+interval, last.Status())
			}
			return last, ctx.Err()
		case <-time.After(fluxPoll):
		}
	}
}

// restore, with --atomic, moves the tags a failed cluster's run moved
// back to where they were (a tag that did not exist stays: nothing else
// deletes a tag, and Flux would keep what it applied), and says so.
func (p *registryTarget) restore(ctx context.Context, err error) error {
	e, cluster, moved := p.e, p.run.cluster.Name, p.moved
	if err == nil || !e.o.Atomic || len(moved) == 0 || ctx.Err() != nil {
		return err
	}
	e.emit(StageEvent{Cluster: cluster, Stage: "moving the tags back"})
	var notes []string
	for _, app := range slices.Sorted(maps.Keys(moved)) {
		prev := moved[app]
		if prev == (v1.Hash{}) {
			notes = append(notes, app+" had no tag before")
			continue
		}
		a := p.artifacts[app]
		if terr := a.registry.Tag(ctx, app, cluster, prev); terr != nil {
			notes = append(notes, app+": "+terr.Error())
			continue
		}
		note := app + " back to " + publish.Short(prev.String())
		if n, herr := backTo(ctx, a.registry, cluster, app, prev.String()); herr != nil {
			note += " (the history still says otherwise: " + herr.Error() + ")"
		} else if n > 0 {
			note = fmt.Sprintf("%s back to r%d (%s)", app, n, publish.Short(prev.String()))
		}
		notes = append(notes, note)
	}
	return &AtomicError{Err: err, Note: "tags moved back: " + strings.Join(notes, "; ")}
}

// backTo makes the history of app on cluster say that the newest
// revision of artifact d is current again, once its tag moved back there
// (--atomic), and returns its number (0: none is d's).
func backTo(ctx context.Context, reg publish.Registry, cluster, app, d string) (int, error) {
	h, err := reg.History(ctx, app, cluster)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range h.Revisions {
		if r.Artifact == d {
			n = max(n, r.Number)
		}
	}
	if n == 0 {
		return 0, nil
	}
	h.Current = n
	return n, reg.SaveHistory(ctx, app, cluster, h)
}

// tamperedError fails a cluster whose Flux objects are not what
// bootstrap wrote: what it says it applied proves nothing then.
func tamperedError(cluster string, f publish.Flux) error {
	return fmt.Errorf("its Flux objects are not what bootstrap wrote (%s): nothing they say is trusted; bootstrap the cluster again (kubectl fleet bootstrap -c %s)", strings.Join(f.Tampered, "; "), cluster)
}
