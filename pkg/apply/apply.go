// Package apply applies one app's objects to one cluster: server-side
// apply with a fixed field manager, CRDs and Namespaces first (waiting for
// CRDs to be established), the rest concurrently, ApplySet inventory and
// prune, and an optional wait for health by kstatus rules. It never sees
// cobra: commands hand it a Config.
package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// FieldManager owns every field kubectl fleet applies.
const FieldManager = "kubectl-fleet"

// HealthResult is an object's health as --wait saw it, or a test Job's
// result: reported beside the changes (Change.Health), never one.
type HealthResult string

// The health results.
const (
	Healthy   HealthResult = "healthy"
	Unhealthy HealthResult = "unhealthy"
	// Passed and TestFailed: a test Job completed, or did not (Test).
	Passed     HealthResult = "passed"
	TestFailed HealthResult = "failed"
)

// Change is one object's outcome.
type Change struct {
	// Ref is kind.group/name, as kubectl prints it.
	Ref       string
	Namespace string
	// Action is what happened (change.Of), unless Health is set.
	Action change.Action
	// Health reports --wait's or a test's result instead.
	Health HealthResult
	// Reason explains a skip or a health state.
	Reason string
	// Warning is something the user should know: the object is shared
	// with another app, or labelled as an app's that does not record it.
	Warning string
	Err     error
}

// Config is one app's apply to one cluster.
type Config struct {
	App string
	// Fleet is the name of the fleet the app is of (metadata.name): the
	// app's set on the cluster belongs to it, and an app of that name
	// another fleet applied is refused (inventory.Set.Fleet).
	Fleet   string
	Version string
	Objects []*unstructured.Unstructured
	DryRun  bool
	Force   bool
	Prune   bool
	// AllowEmpty lets an empty render prune everything.
	AllowEmpty bool
	Wait       bool
	// WaitWhy says why the objects are waited for ("--wait", "app api
	// depends on it"), in the stage and the timeout's error.
	WaitWhy string
	Timeout time.Duration
	// Ignore names fields whose live values are kept (ignoreDifferences).
	Ignore []object.IgnoreRule
	// Namespace, when set, is where objects without a namespace go,
	// instead of the context's default (a rollback: where they went
	// then). The objects recorded keep none, so the digest is the render's.
	Namespace string
	// Concurrency bounds the object requests in flight.
	Concurrency int
	// Report receives each change as it happens; it must be safe for
	// concurrent use.
	Report func(Change)
	// OnPhase, when set, is told when a phase starts, if the app has more
	// than one (fleet.kubectl.io/phase).
	OnPhase func(phase, objects int)
	// OnStage, when set, is told what the apply waits for ("CRDs
	// established", "healthy", "pruning"), for progress displays.
	OnStage func(stage string)
	// Record, when set, records a real apply as a revision of the app
	// (package revision), unless the render is the current revision's.
	Record *Record
	// Others are the renders of the other apps of this run on the
	// cluster, by app: an object one of them renders is never pruned,
	// but handed to that app, whatever order the apps run in.
	Others map[string][]*unstructured.Unstructured
	// Hold, when set, is asked once the inventories are read and before
	// anything is written: an error stops the apply there (a pause).
	Hold func(ctx context.Context, n *inventory.Neighbours) error
	// Held, when set, is asked before each write once the apply started
	// (an object's apply or replacement, a prune's delete), at most once
	// every HeldEvery (DefaultHeldEvery) however many writes wait: an
	// error stops the apply as Ctrl-C does (no write starts after it,
	// the parent keeps every member) and is what Run returns (a pause
	// given while the app is applied).
	Held      func(ctx context.Context) error
	HeldEvery time.Duration
}

// DefaultHeldEvery is how often, at most, Config.Held is asked while an
// app is written: a pause stops its writes within a second.
const DefaultHeldEvery = time.Second

// held asks Config.Held before each write, at most once every
// Config.HeldEvery; its first error cancels the run's stop (kube.StopOf)
// and is kept.
type held struct {
	check func(context.Context) error
	every time.Duration
	stop  context.CancelCauseFunc

	mu   sync.Mutex
	last time.Time
	err  error
}

// before is nil when a write may start: nothing held it since the last
// asking (or now, when that was longer ago than every).
func (h *held) before(ctx context.Context) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil || time.Since(h.last) < h.every {
		return h.err
	}
	h.last = time.Now()
	if err := h.check(ctx); err != nil {
		h.err = err
		h.stop(err)
	}
	return h.err
}

// cause is what held the apply, or nil.
func (h *held) cause() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Record says how an apply is recorded in the app's history.
type Record struct {
	// Revision holds what the caller knows of the revision: Version,
	// Source, Description (and User, else the cluster says who).
	Revision revision.Revision
	// Limit keeps the newest Limit revisions; 0 keeps every one.
	Limit int
	// Done, when set, is told the current revision once recorded, and
	// whether it is new.
	Done func(r revision.Revision, isNew bool)
	// User, when set, says who applies (asked once per cluster by the
	// caller, which needs it for its lock too); else the cluster's
	// SelfSubjectReview is asked.
	User func(ctx context.Context) string
	// Forbidden, when set, is told that the user may not record
	// revisions (RBAC on Secrets in the kubectl-fleet namespace): the
	// apply stands, without a revision.
	Forbidden func(err error)
	// Verified, when set, is told that the revision's verdict, known
	// before the apply (Revision.Verification: no gate follows it), was
	// recorded: written once the objects are applied, with the parent
	// that names the revision (a new one, or the current one when the
	// render is its).
	Verified func(v revision.Verification)
}

func (cfg Config) stage(s string) {
	if cfg.OnStage != nil {
		cfg.OnStage(s)
	}
}

// ErrEmptyPrune refuses to prune everything because of an empty render.
var ErrEmptyPrune = errors.New("the render is empty: --prune would delete every object of the app; refusing without --allow-empty")

// Run applies cfg to the cluster. It returns an error if anything failed.
// When ctx is cancelled (Ctrl-C) no new request starts; requests in flight
// finish or time out (--request-timeout), and Run returns ctx's error;
// when it ends with ErrAbort as its cause (a lost lock), the requests in
// flight are cancelled too.
func Run(ctx context.Context, c *kube.Client, cfg Config) error {
	ctx = detach(ctx)
	stop := kube.StopOf(ctx)
	if len(cfg.Objects) == 0 && cfg.Prune && !cfg.AllowEmpty {
		return ErrEmptyPrune
	}
	if err := stop.Err(); err != nil {
		return err // Ctrl-C before this app started: nothing is sent
	}
	// The render is the run's, shared: each object is a shell over the
	// render's, whose root and metadata become its own only if its
	// namespace changes (object.InNamespace). What is sent of it, labelled
	// as a member, is a copy applyOne makes and lets go.
	objs := make([]*unstructured.Unstructured, len(cfg.Objects))
	for i, o := range cfg.Objects {
		objs[i] = &unstructured.Unstructured{Object: o.Object}
		if cfg.Namespace != "" && o.GetNamespace() == "" {
			object.InNamespace(objs[i], cfg.Namespace) // stripped again from cluster-scoped kinds
		}
		// The cluster's mapping says whether the object has a namespace,
		// and the set must record it. (Kinds not served yet keep the
		// render's guess; they are mapped, or fail, when applied.)
		_, _, _ = c.ScopeShared(objs[i])
	}
	// The live objects' metadata is listed while the inventory is read:
	// both are reads, and together they are one round trip.
	var lists sync.WaitGroup
	defer lists.Wait()
	p := newPass(c, cfg)
	defer p.history.Wait() // read in case a revision is recorded
	if cfg.Held != nil && !cfg.DryRun {
		// A pause seen before a write stops the run as Ctrl-C does.
		stopped, cancel := context.WithCancelCause(kube.StopOf(ctx))
		defer cancel(nil)
		ctx = kube.WithStop(ctx, stopped)
		// Hold asks the same as the apply starts: the first asking is
		// one HeldEvery later.
		p.held = &held{check: cfg.Held, every: cmp.Or(cfg.HeldEvery, DefaultHeldEvery), stop: cancel, last: time.Now()}
	}
	if !cfg.DryRun {
		keys := c.ListKeys(objs, func(o *unstructured.Unstructured) bool { return object.Ignored(o, cfg.Ignore) })
		lists.Go(func() { p.listed.Prefetch(ctx, c, keys, cfg.Concurrency) })
	}
	contents, err := p.begin(ctx, objs)
	if err != nil {
		return err
	}
	// The revision is stored while the objects are applied; the parent
	// names it only once they are, and it is removed if they are not.
	p.storeRevision(ctx)
	waited, err := p.write(ctx, objs, contents)
	if err != nil {
		return p.unstore(ctx, cmp.Or(p.held.cause(), err))
	}
	if !cfg.DryRun {
		if err := p.finish(ctx, objs); err != nil {
			return err
		}
	}
	if cfg.Wait && !cfg.DryRun {
		cfg.stage(waiting(cfg))
		err := waitHealthy(stop, c, slices.DeleteFunc(slices.Clone(objs), func(o *unstructured.Unstructured) bool { return waited[o] }), cfg)
		if err != nil && cfg.WaitWhy != "" {
			err = fmt.Errorf("%w (waited for: %s)", err, cfg.WaitWhy)
		}
		return err
	}
	return nil
}

// write applies the objects and prunes what the app no longer renders.
func (p *pass) write(ctx context.Context, objs []*unstructured.Unstructured, contents inventory.Contents) (map[*unstructured.Unstructured]bool, error) {
	waited, err := p.applyStages(ctx, objs)
	if err != nil {
		return nil, err
	}
	if p.cfg.Prune {
		p.cfg.stage("pruning")
		if err := p.prune(ctx, contents); err != nil {
			return nil, err
		}
	}
	// Interrupted: nothing more is sent, and the parent keeps the union
	// recorded first, so no member is forgotten.
	return waited, kube.StopOf(ctx).Err()
}

// begin reads the app's inventory, labels the objects as its members,
// starts reading its history when a revision will be recorded, and
// records in the parent the union of the old and new members before any
// object is written. It returns the new members.
func (p *pass) begin(ctx context.Context, objs []*unstructured.Unstructured) (inventory.Contents, error) {
	cfg := p.cfg
	if err := p.load(ctx); err != nil {
		return inventory.Contents{}, err
	}
	if !cfg.DryRun && p.key == nil {
		// The first apply to the cluster makes its digest key.
		var err error
		if p.key, err = digest.Ensure(ctx, p.c, FieldManager); err != nil {
			return inventory.Contents{}, err
		}
	}
	p.renderDigest = digest.Render(cfg.Objects, p.key)
	contents := inventory.ContentsOf(objs)
	p.rendered = contents.Members // read only, as contents is
	if err := kube.StopOf(ctx).Err(); err != nil {
		return inventory.Contents{}, err // Ctrl-C while the inventory was read: nothing written
	}
	if !cfg.DryRun {
		p.set.Adopted = p.set.Adopted.Union(p.adopting(ctx, objs))
		if err := kube.StopOf(ctx).Err(); err != nil {
			return inventory.Contents{}, err // Ctrl-C while they were read: nothing written
		}
	}
	if union := p.set.Contents.Union(contents); !cfg.DryRun && !(p.set.Exists && union.Equal(p.set.Contents)) {
		// Record the union of the old and new contents first, so that a
		// failure half-way never orphans a member from the set (a parent
		// that records them all already is not written again).
		if err := p.set.WriteParent(ctx, p.c, union, time.Time{}, FieldManager, cfg.Version); err != nil {
			return inventory.Contents{}, err
		}
	}
	return contents, nil
}

// applyStages applies the objects: CRDs and Namespaces first (waiting
// until the CRDs are established), then phase by phase, each but the last
// healthy before the next starts. It returns the objects already waited
// for.
func (p *pass) applyStages(ctx context.Context, objs []*unstructured.Unstructured) (map[*unstructured.Unstructured]bool, error) {
	cfg, c := p.cfg, p.c
	first, rest := stages(objs)
	if err := p.applyAll(ctx, first, nil, nil); err != nil {
		return nil, err
	}
	var (
		pending map[schema.GroupKind]bool
		newNS   map[string]bool
	)
	if cfg.DryRun {
		newNS = object.Namespaces(first)
	}
	if crds := crdsOf(first); len(crds) > 0 {
		if cfg.DryRun {
			pending = notServed(c, object.CRDKinds(crds))
		} else {
			cfg.stage("waiting for CRDs to be established")
			if err := waitEstablished(kube.StopOf(ctx), c, crds, cfg.Timeout); err != nil {
				return nil, err
			}
			c.Mapper.Reset()
		}
	}
	phases := byPhase(rest)
	waited := map[*unstructured.Unstructured]bool{}
	for i, ph := range phases {
		if len(phases) > 1 && cfg.OnPhase != nil {
			cfg.OnPhase(ph.n, len(ph.objs))
		}
		if err := p.applyAll(ctx, ph.objs, pending, newNS); err != nil {
			return nil, err
		}
		if i < len(phases)-1 && !cfg.DryRun {
			cfg.stage(fmt.Sprintf("waiting for phase %d to be healthy", ph.n))
			if err := waitHealthy(kube.StopOf(ctx), c, ph.objs, cfg); err != nil {
				return nil, fmt.Errorf("phase %d: %w", ph.n, err)
			}
			for _, o := range ph.objs {
				waited[o] = true
			}
		}
	}
	return waited, nil
}

// finish records what this apply did: the revision, stored before the
// parent names it current, then the parent with the members and what
// was sent of each.
func (p *pass) finish(ctx context.Context, objs []*unstructured.Unstructured) error {
	// Objects of kinds served only now were put in scope as applied.
	record := inventory.ContentsOf(objs)
	if !p.cfg.Prune {
		record = p.set.Contents.Union(record)
	} else {
		// Members the prune could not decide on stay recorded, and those
		// handed over that their app does not record yet.
		record = record.Union(p.retained)
		p.set.Handing = p.handing
	}
	// What this apply sent, for the next one to skip what is the same.
	p.set.Applied, p.set.AppliedDigest = p.sent, p.renderDigest
	prev := p.set.Revision
	history, err := p.recordRevision()
	if err != nil {
		return err
	}
	return p.commit(ctx, record, prev, history)
}

// phase is the objects of one phase.
type phase struct {
	n    int
	objs []*unstructured.Unstructured
}

// byPhase groups objects by their fleet.kubectl.io/phase, lowest first,
// keeping their order inside a phase.
func byPhase(objs []*unstructured.Unstructured) []phase {
	var out []phase
	for _, o := range objs {
		n := object.Phase(o)
		i, found := slices.BinarySearchFunc(out, n, func(p phase, n int) int { return cmp.Compare(p.n, n) })
		if !found {
			out = slices.Insert(out, i, phase{n: n})
		}
		out[i].objs = append(out[i].objs, o)
	}
	return out
}

// pass is what one Run (or Delete) shares between its requests: the app's
// set, what the cluster's other apps hold, the live objects' metadata
// listed so far, and the UIDs the server returned for applied objects.
type pass struct {
	c   *kube.Client
	cfg Config
	// held asks Config.Held before each write (nil: nothing to ask).
	held   *held
	set    *inventory.Set
	others *inventory.Neighbours
	listed kube.Listings

	mu      sync.Mutex
	applied sets.Set[types.UID]
	// sent is what this apply sent of each object, and what came back,
	// for the next apply to skip what did not change (inventory.Applied).
	sent map[string]inventory.Applied
	// last is the set as this apply found it: what the last apply sent,
	// and the plugin version it ran.
	last inventory.Set
	// renderDigest is revision.Digest of the render.
	renderDigest string
	// rendered are the paths of the objects rendered: never pruned,
	// however the listing saw them.
	rendered sets.Set[string]
	// retained are the members the prune neither deleted nor released
	// because an input of its decision could not be read, or handed to
	// an app of this run that does not record them yet (handing): they
	// stay recorded, for the next prune to decide.
	retained inventory.Contents
	handing  sets.Set[string]
	// got are reads of live objects adopting made, by path, for applyOne.
	got map[string]read
	// key is the cluster's digest key.
	key digest.Key
	// history is the app's revisions and who applies, read while the
	// objects are applied (readHistory) for the revision recorded after.
	history struct {
		sync.WaitGroup
		revisions []revision.Revision
		// orphans are parts of revisions never finished (a run that
		// died): their numbers are not reused, and they are removed.
		orphans []revision.Revision
		user    string
		err     error
	}
	// stored is the revision storeRevision stores while the objects are
	// applied, and the history with it.
	stored struct {
		sync.WaitGroup
		revision revision.Revision
		history  []revision.Revision
		err      error
		// verdict is the one written with the parent (Record.Verified).
		verdict revision.Verification
	}
}

func newPass(c *kube.Client, cfg Config) *pass {
	return &pass{c: c, cfg: cfg, applied: sets.New[types.UID](), sent: map[string]inventory.Applied{}, got: map[string]read{}, retained: inventory.ContentsOf(nil), handing: sets.New[string]()}
}

// load reads the app's parent, its neighbours' and the cluster's digest
// key at once.
func (p *pass) load(ctx context.Context) error {
	var (
		keyErr error
		wg     sync.WaitGroup
	)
	wg.Go(func() { p.key, keyErr = digest.KeyOf(ctx, p.c) })
	if !p.cfg.DryRun && kube.AnyAggregated(p.cfg.Objects) {
		// Read with the rest, for unchanged.
		wg.Go(func() { p.c.AggregatedAPIs(ctx) })
	}
	if !p.cfg.DryRun && p.cfg.Record != nil {
		// Read with the rest, in case the render is new: its revision is
		// then stored while the objects are applied.
		p.readHistory(ctx)
	}
	set, others, err := inventory.LoadWithNeighbours(ctx, p.c, p.cfg.App)
	wg.Wait()
	if err = cmp.Or(err, keyErr); err != nil {
		return err
	}
	// A snapshot as read: writing the parent changes the set's Version,
	// and the claim below its Fleet.
	p.last = *set
	if err := set.OwnedBy(p.cfg.Fleet); err != nil {
		return err
	}
	if p.cfg.Hold != nil {
		if err := p.cfg.Hold(ctx, others); err != nil {
			return err
		}
	}
	p.set, p.others = set, others
	p.others.Rendering(p.c, p.cfg.Others)
	return nil
}

// stages splits objects: CRDs and Namespaces first, then the rest.
func stages(objs []*unstructured.Unstructured) (first, rest []*unstructured.Unstructured) {
	for _, o := range objs {
		if object.IsFirst(o) {
			first = append(first, o)
		} else {
			rest = append(rest, o)
		}
	}
	return first, rest
}

// applyAll applies objects concurrently. Objects of a kind in pending, and
// (dry run) objects in a namespace of newNS, are reported skipped: a dry
// run cannot apply instances of a CRD or into a namespace it did not
// create. Every failure is reported; the error sums them up. No request
// starts once ctx's stop is done (Ctrl-C), nor once one has found the cluster
// unreachable: the objects not attempted are reported skipped.
func (p *pass) applyAll(ctx context.Context, objs []*unstructured.Unstructured, pending map[schema.GroupKind]bool, newNS map[string]bool) error {
	var (
		failed atomic.Int32
		cut    sync.Once
		cause  error
		send   []*unstructured.Unstructured
	)
	for _, obj := range objs {
		if pending[obj.GroupVersionKind().GroupKind()] {
			act, why, _ := change.Of(change.Answer{Obj: obj, PendingCRD: true, DryRun: true})
			p.cfg.Report(Change{Ref: object.Ref(obj), Namespace: obj.GetNamespace(), Action: act, Reason: why})
			continue
		}
		send = append(send, obj)
	}
	// start ends with Ctrl-C, or once a request found the cluster
	// unreachable: no object starts after.
	stop := kube.StopOf(ctx)
	start, unreachable := context.WithCancel(stop)
	defer unreachable()
	started := kube.NewSlots(p.cfg.Concurrency).Each(start, len(send), func(i int) {
		ch := p.applyOne(ctx, send[i], newNS)
		if ch.Err != nil {
			failed.Add(1)
			if kube.IsUnreachable(ch.Err) {
				cut.Do(func() { cause = fmt.Errorf("%s: %w", ch.Ref, ch.Err); unreachable() })
			}
		}
		p.cfg.Report(ch)
	})
	if err := stop.Err(); err != nil {
		return err
	}
	if rest := send[started:]; cause != nil {
		for _, obj := range rest {
			p.cfg.Report(Change{Ref: object.Ref(obj), Namespace: obj.GetNamespace(), Action: change.Skipped, Reason: "not attempted: the cluster stopped answering"})
		}
		return fmt.Errorf("the cluster stopped answering, %d of %d objects not attempted: %w", len(rest), len(objs), cause)
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d of %s failed", n, output.Plural(len(objs), "object"))
	}
	return nil
}

// applyOne applies one object; what it did is the rule's (change.Of).
// A real apply learns whether the object exists, and its resource
// version, from metadata listed once per resource and namespace (one
// request, not a read per object); a dry run, whose result keeps the old
// version, reads the object to compare. newNS are the namespaces this
// apply creates: a dry run cannot validate their objects.
func (p *pass) applyOne(ctx context.Context, obj *unstructured.Unstructured, newNS map[string]bool) Change {
	c, cfg := p.c, p.cfg
	ch := Change{Ref: object.Ref(obj), Namespace: obj.GetNamespace()}
	ans := change.Answer{Obj: obj, DryRun: cfg.DryRun}
	decide := func() Change {
		ch.Action, ch.Reason, ch.Err = change.Of(ans)
		return ch
	}
	ri, m, err := c.ScopeShared(obj) // a kind served only now is put in scope as applied
	if err != nil {
		ans.Err = err
		return decide()
	}
	ch.Namespace, ans.NewNamespace = obj.GetNamespace(), newNS[obj.GetNamespace()]
	ignored := object.Ignored(obj, cfg.Ignore)
	live, before, listed, err := p.readLive(ctx, ri, m, obj, ignored)
	if err != nil {
		ans.Err = err
		return decide()
	}
	claim := p.others.Claim(&p.last, object.Path(obj), live)
	obj = object.CopyMeta(obj) // what is sent, labelled: let go once sent
	inventory.Label(obj, claim.PartOf)
	ch.Warning, ans.Existed, ans.Adopt = claim.Warning, live != nil, claim.Adopt
	if claim.Adopt {
		p.adopt(object.Path(obj))
	}
	if ignored {
		object.KeepLive(obj, before, cfg.Ignore)
	}
	if live != nil && object.CreateOnly(obj) {
		p.keep(live.UID)
		return decide()
	}
	sum := digest.Object(obj, p.key)
	if p.unchanged(ctx, obj, sum, live, listed != nil && !ignored) {
		ans.Same = true
		p.keep(live.UID)
		p.record(obj, sum, live.ResourceVersion, live.UID)
		return decide()
	}
	if err := p.held.before(ctx); err != nil {
		ch.Action, ch.Reason = change.Skipped, "not written: "+err.Error()
		return ch
	}
	after, err := p.patch(ctx, ri, m, obj, kube.ApplyOptions{FieldManager: FieldManager, Force: cfg.Force, DryRun: cfg.DryRun})
	if ans.Err = err; err == nil {
		// A dry run's UID is the live object's, or a new one no member has.
		p.keep(after.GetUID())
		p.record(obj, sum, after.GetResourceVersion(), after.GetUID())
		ans.Same = live != nil && (cfg.DryRun && object.Same(before, after.(*unstructured.Unstructured)) || !cfg.DryRun && live.ResourceVersion == after.GetResourceVersion())
	}
	if err == nil && live == nil && !cfg.DryRun && !claim.Adopt && madeByOthers(after) {
		// Created by someone else since it was listed: what the apply
		// answers says so (another manager's fields). Adopted, so that
		// prune, delete and --atomic release it rather than delete it.
		p.adopt(object.Path(obj))
		ch.Action = change.Adopted
		return ch
	}
	if decide(); ch.Action == change.Replaced {
		return p.replace(ctx, ri, obj, ch, err, live.UID)
	}
	return ch
}

// readLive is what applyOne knows of obj's live object: its metadata
// (nil: it does not exist), from metadata listed once per resource and
// namespace (listed, when it was); or, for a dry run, fields to keep or a
// user who may not list, the object itself (before), read (adopting may
// have read it already).
func (p *pass) readLive(ctx context.Context, ri dynamic.ResourceInterface, m *meta.RESTMapping, obj *unstructured.Unstructured, ignored bool) (live *kube.Live, before *unstructured.Unstructured, listed map[string]*kube.Live, err error) {
	if !p.cfg.DryRun && !ignored {
		listed, err = p.listed.Of(ctx, p.c, m, obj.GetNamespace())
	}
	if listed != nil && err == nil {
		return listed[obj.GetName()], nil, listed, nil
	}
	before, err = p.get(ctx, ri, obj, false)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil, nil, nil
	case err != nil:
		return nil, nil, nil, err
	}
	return kube.LiveOf(before), before, nil, nil
}

// patch applies obj and returns the result: whole for a dry run, which
// compares it with the live object; else its metadata only (its version
// and UID are all a real apply reads of it).
func (p *pass) patch(ctx context.Context, ri dynamic.ResourceInterface, m *meta.RESTMapping, obj *unstructured.Unstructured, opts kube.ApplyOptions) (metav1.Object, error) {
	if opts.DryRun {
		return p.c.Patch(ctx, ri, obj, opts)
	}
	return p.c.PatchMetadata(ctx, m, obj, opts)
}

// madeByOthers reports whether an object, as an apply answered it, has
// fields of another manager than kubectl fleet: it existed before the
// apply, made by someone else.
func madeByOthers(o metav1.Object) bool {
	return slices.ContainsFunc(o.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool { return e.Manager != FieldManager })
}

// adopt records that the app takes over the object at path, which it did
// not create: prune, delete, rollback and --atomic release it.
func (p *pass) adopt(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.set.Adopted = p.set.Adopted.Union(sets.New(path))
}

// adopting returns the paths of the objects that become members of the
// app by this apply and already exist outside kubectl fleet's sets (Claim's
// Adopt), so that the parent records them adopted before any of them is
// written: an apply interrupted after labelling one still knows it did not
// create it. Their metadata comes from the listings apply reads anyway.
func (p *pass) adopting(ctx context.Context, objs []*unstructured.Unstructured) sets.Set[string] {
	var (
		out     = sets.New[string]()
		mu      sync.Mutex
		joining []*unstructured.Unstructured
	)
	for _, o := range objs {
		if !p.last.Contents.Members.Has(object.Path(o)) {
			joining = append(joining, o)
		}
	}
	kube.NewSlots(p.cfg.Concurrency).Each(kube.StopOf(ctx), len(joining), func(i int) {
		path := object.Path(joining[i])
		if p.others.Claim(&p.last, path, p.liveMeta(ctx, joining[i])).Adopt {
			mu.Lock()
			out.Insert(path)
			mu.Unlock()
		}
	})
	return out
}

// liveMeta is the live object's metadata, from the listing (or a read
// where listing is not allowed); nil when it does not exist or cannot be
// read (applyOne reads it again).
func (p *pass) liveMeta(ctx context.Context, o *unstructured.Unstructured) *kube.Live {
	ri, m, err := p.c.Scope(object.Identity(o))
	if err != nil {
		return nil // a kind not served yet: nothing of it exists
	}
	if listed, err := p.listed.Of(ctx, p.c, m, o.GetNamespace()); err == nil {
		return listed[o.GetName()]
	}
	live, err := p.get(ctx, ri, o, true)
	if err != nil {
		return nil
	}
	return kube.LiveOf(live)
}

// get reads the live object. adopting's reads are kept (keep) for
// applyOne, which takes them: one read per object and apply.
func (p *pass) get(ctx context.Context, ri dynamic.ResourceInterface, o *unstructured.Unstructured, keep bool) (*unstructured.Unstructured, error) {
	path := object.Path(o)
	p.mu.Lock()
	r, ok := p.got[path]
	delete(p.got, path)
	p.mu.Unlock()
	if ok {
		return r.obj, r.err
	}
	obj, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
	if keep {
		p.mu.Lock()
		p.got[path] = read{obj, err}
		p.mu.Unlock()
	}
	return obj, err
}

// read is a read of a live object.
type read struct {
	obj *unstructured.Unstructured
	err error
}

// unchanged reports whether an object needs no request (Set.Unchanged).
// Any doubt is a real apply: a dry run, --force-conflicts, fields kept
// from the live object (ignoreDifferences), no listing, an aggregated API.
func (p *pass) unchanged(ctx context.Context, obj *unstructured.Unstructured, sum string, live *kube.Live, listed bool) bool {
	if p.cfg.DryRun || p.cfg.Force || !listed || p.c.Aggregated(ctx, obj.GroupVersionKind().GroupVersion()) {
		return false
	}
	return p.last.Unchanged(object.Path(obj), sum, live, p.cfg.Version)
}

// replace deletes an object whose immutable field changed and creates it
// again, as fleet.kubectl.io/force: enabled asks, the way kubectl replace
// --force does: its dependents are deleted in the background (a Job's
// pods, a Deployment's ReplicaSets), and it is created once it is gone.
func (p *pass) replace(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, ch Change, immutable error, uid types.UID) Change {
	if p.cfg.DryRun {
		return ch
	}
	field, _ := kube.Immutable(immutable)
	fail := func(err error) Change {
		ch.Action, ch.Err, ch.Reason = change.Failed, fmt.Errorf("%s; replacing it (%s: enabled): %w", object.ImmutableChange(field), object.ForceAnnotation, err), ""
		return ch
	}
	if err := deleteAndWait(ctx, ri, obj.GetName(), uid, p.cfg.Timeout); err != nil {
		return fail(err)
	}
	after, err := p.c.Patch(ctx, ri, obj, kube.ApplyOptions{FieldManager: FieldManager, Force: p.cfg.Force})
	if err != nil {
		return fail(err)
	}
	p.keep(after.GetUID())
	p.record(obj, digest.Object(obj, p.key), after.GetResourceVersion(), after.GetUID())
	ch.Action = change.Replaced
	return ch
}

// deleteAndWait deletes the object name with uid (the one read: never
// one re-created under its name since), its dependents in the
// background, and waits until it is gone, finalizers included.
func deleteAndWait(ctx context.Context, ri dynamic.ResourceInterface, name string, uid types.UID, timeout time.Duration) error {
	bg := metav1.DeletePropagationBackground
	err := ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case apierrors.IsConflict(err):
		return fmt.Errorf("not deleted: another object of its name (another uid) was created since it was read")
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	return waitGone(ctx, ri, name, timeout)
}

// waitGone waits until a deleted object is gone, finalizers and
// dependents included.
func waitGone(ctx context.Context, ri dynamic.ResourceInterface, name string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		_, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still there %s after its deletion (finalizers?)", timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
