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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	applyset "k8s.io/kubectl/pkg/cmd/apply"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// FieldManager owns every field kubectl fleet applies.
const FieldManager = "kubectl-fleet"

// Action is what happened to one object.
type Action string

// The actions.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	Pruned     Action = "pruned"
	Failed     Action = "failed"
	// Skipped: not applied, because an earlier stage failed, or (dry run)
	// because its CRD is not installed yet.
	Skipped Action = "skipped"
	// Healthy and Unhealthy report --wait.
	Healthy   Action = "healthy"
	Unhealthy Action = "unhealthy"
	// Passed: a test Job completed (Test).
	Passed Action = "passed"
	// Replaced: deleted and created again, because an immutable field
	// changed and the object asks for it (fleet.kubectl.io/force: enabled).
	Replaced Action = "replaced"
	// Kept: no longer rendered, but not pruned, because the object asks
	// for it (fleet.kubectl.io/prune: disabled); it leaves the app's set.
	Kept Action = "kept"
	// Adopted: the object existed, and kubectl fleet had not created it;
	// the app applied it and took it over, and will release it rather
	// than delete it.
	Adopted Action = "adopted"
)

// Change is one object's outcome.
type Change struct {
	// Ref is kind.group/name, as kubectl prints it.
	Ref       string
	Namespace string
	Action    Action
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
	// Verified, when set, is told that a new revision's verdict, known
	// before the apply (Revision.Verification: no gate follows it), was
	// recorded: written once the objects are applied, with the parent
	// that names the revision.
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
	stop, ctx := detach(ctx)
	if len(cfg.Objects) == 0 && cfg.Prune && !cfg.AllowEmpty {
		return ErrEmptyPrune
	}
	if err := stop.Err(); err != nil {
		return err // Ctrl-C before this app started: nothing is sent
	}
	objs := make([]*unstructured.Unstructured, len(cfg.Objects))
	for i, o := range cfg.Objects {
		objs[i] = object.CopyMeta(o) // the render is the run's, shared
		if cfg.Namespace != "" && objs[i].GetNamespace() == "" {
			objs[i].SetNamespace(cfg.Namespace) // stripped again from cluster-scoped kinds
		}
		// The cluster's mapping says whether the object has a namespace,
		// and the set must record it. (Kinds not served yet keep the
		// render's guess; they are mapped, or fail, when applied.)
		_, _, _ = c.Scope(objs[i])
	}
	// The live objects' metadata is listed while the inventory is read:
	// both are reads, and together they are one round trip.
	var lists sync.WaitGroup
	defer lists.Wait()
	p := newPass(c, cfg)
	defer p.history.Wait() // read in case a revision is recorded
	if !cfg.DryRun {
		keys := c.ListKeys(objs, func(o *unstructured.Unstructured) bool { return object.Ignored(o, cfg.Ignore) })
		lists.Go(func() { p.listed.Prefetch(stop, ctx, c, keys, cfg.Concurrency) })
	}
	contents, err := p.begin(stop, ctx, objs)
	if err != nil {
		return err
	}
	// The revision is stored while the objects are applied; the parent
	// names it only once they are, and it is removed if they are not.
	p.storeRevision(ctx)
	waited, err := p.write(stop, ctx, objs, contents)
	if err != nil {
		return p.unstore(stop, ctx, err)
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
func (p *pass) write(stop, ctx context.Context, objs []*unstructured.Unstructured, contents inventory.Contents) (map[*unstructured.Unstructured]bool, error) {
	waited, err := p.applyStages(stop, ctx, objs)
	if err != nil {
		return nil, err
	}
	if p.cfg.Prune {
		p.cfg.stage("pruning")
		if err := p.prune(stop, ctx, contents); err != nil {
			return nil, err
		}
	}
	// Interrupted: nothing more is sent, and the parent keeps the union
	// recorded first, so no member is forgotten.
	return waited, stop.Err()
}

// begin reads the app's inventory, labels the objects as its members,
// starts reading its history when a revision will be recorded, and
// records in the parent the union of the old and new members before any
// object is written. It returns the new members.
func (p *pass) begin(stop, ctx context.Context, objs []*unstructured.Unstructured) (inventory.Contents, error) {
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
	p.rendered = make(map[string]bool, len(objs))
	for _, o := range objs {
		p.set.Label(o)
		p.rendered[object.Path(o)] = true
	}
	contents := inventory.ContentsOf(objs)
	if err := stop.Err(); err != nil {
		return inventory.Contents{}, err // Ctrl-C while the inventory was read: nothing written
	}
	if !cfg.DryRun {
		p.set.Adopted = p.set.Adopted.Union(p.adopting(ctx, objs))
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
func (p *pass) applyStages(stop, ctx context.Context, objs []*unstructured.Unstructured) (map[*unstructured.Unstructured]bool, error) {
	cfg, c := p.cfg, p.c
	first, rest := stages(objs)
	if err := p.applyAll(stop, ctx, first, nil, nil); err != nil {
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
			if err := waitEstablished(stop, c, crds, cfg.Timeout); err != nil {
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
		if err := p.applyAll(stop, ctx, ph.objs, pending, newNS); err != nil {
			return nil, err
		}
		if i < len(phases)-1 && !cfg.DryRun {
			cfg.stage(fmt.Sprintf("waiting for phase %d to be healthy", ph.n))
			if err := waitHealthy(stop, c, ph.objs, cfg); err != nil {
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

// commit writes the parent, which names the revision recorded (if any)
// current and holds record, while the revisions of history past
// --history-limit are deleted; but prev, the one it named until then,
// which stays current if that write fails, and goes after it when it has
// to.
func (p *pass) commit(ctx context.Context, record inventory.Contents, prev int, history []revision.Revision) error {
	var expired, last []revision.Revision
	if history != nil {
		expired = append(revision.Expired(history, p.cfg.Record.Limit, p.set.Revision), p.history.orphans...)
	}
	if i := slices.IndexFunc(expired, func(r revision.Revision) bool { return r.Number == prev }); i >= 0 {
		last = []revision.Revision{expired[i]}
		expired = slices.Delete(expired, i, i+1)
	}
	var (
		trimmed error
		trim    sync.WaitGroup
	)
	trim.Go(func() { trimmed = revision.Remove(ctx, p.c, expired...) })
	if v := p.stored.verdict; history != nil && v.State != "" {
		// Written beside the parent: each alone is safe (a verdict on a
		// revision no parent names is no release; a revision named without
		// it is unverified, and the caller writes it again).
		trim.Go(func() {
			if revision.Verify(ctx, p.c, p.cfg.App, p.set.Revision, v) == nil && p.cfg.Record.Verified != nil {
				p.cfg.Record.Verified(v)
			}
		})
	}
	err := p.set.WriteParent(ctx, p.c, record, time.Now(), FieldManager, p.cfg.Version)
	trim.Wait()
	if err != nil {
		return err
	}
	if trimmed = errors.Join(trimmed, revision.Remove(ctx, p.c, last...)); trimmed != nil && !apierrors.IsForbidden(trimmed) {
		return fmt.Errorf("keeping %d revisions: %w", p.cfg.Record.Limit, trimmed)
	}
	return nil
}

// storeRevision starts storing the apply as the app's next revision,
// unless its render is the current revision's, while the objects are
// applied (the history it numbers it from was read with the inventory).
// Until the parent names it, a revision is no release: recordRevision
// waits for it once the objects are applied, and unstore removes it when
// they are not.
func (p *pass) storeRevision(ctx context.Context) {
	rec, st := p.cfg.Record, &p.stored
	if p.cfg.DryRun || !p.newRevision() {
		return
	}
	st.Go(func() {
		p.history.Wait()
		r, history, err := rec.Revision, p.history.revisions, p.history.err
		if r.User == "" {
			r.User = p.history.user
		}
		if err != nil {
			st.err = err
			return
		}
		// Stored before the objects are applied, it says no verdict: one
		// is written with the parent, once they are.
		st.verdict, r.Verification = r.Verification, revision.Verification{}
		r.App, r.Number, r.Time, r.Digest = p.cfg.App, revision.Next(slices.Concat(history, p.history.orphans), p.set.Revision), time.Now().UTC().Truncate(time.Second), p.renderDigest
		r.Namespace = cmp.Or(p.cfg.Namespace, p.c.Namespace) // where objects without one went
		if r.Version == "" {
			r.Version = p.cfg.Version
		}
		st.err = revision.Store(ctx, p.c, &r, p.cfg.Objects)
		st.revision, st.history = r, append(history, r)
	})
}

// unstore removes the revision storeRevision stored for an apply that
// failed (err), once it is written: the parent never names it. After
// Ctrl-C (stop done), or from a cluster that stopped answering, nothing
// more is sent: the revision stays, never named current (history says
// its apply did not finish), as it does when its removal fails.
func (p *pass) unstore(stop, ctx context.Context, err error) error {
	st := &p.stored
	st.Wait()
	if st.revision.Number == 0 || st.err != nil || stop.Err() != nil || kube.IsUnreachable(err) {
		return err
	}
	if rerr := revision.Remove(ctx, p.c, st.revision); rerr != nil {
		klog.V(2).InfoS("revision stored while the objects were applied is left unapplied", "app", p.cfg.App, "revision", st.revision.Number, "err", rerr)
	}
	return err
}

// recordRevision waits for the revision storeRevision stores, and returns
// the history with it (nil when nothing was recorded).
func (p *pass) recordRevision() ([]revision.Revision, error) {
	rec := p.cfg.Record
	if rec == nil {
		return nil, nil
	}
	done := func(r revision.Revision, isNew bool) {
		if rec.Done != nil {
			rec.Done(r, isNew)
		}
	}
	if !p.newRevision() {
		done(revision.Revision{App: p.cfg.App, Number: p.set.Revision, Digest: p.renderDigest, Objects: len(p.cfg.Objects)}, false)
		return nil, nil
	}
	st := &p.stored
	st.Wait()
	if apierrors.IsForbidden(st.err) {
		if rec.Forbidden != nil {
			rec.Forbidden(st.err)
		}
		return nil, nil
	}
	if st.err != nil {
		return nil, st.err
	}
	r := st.revision
	p.set.Revision, p.set.Digest, p.set.Source = r.Number, r.Digest, r.Source.String()
	done(r, true)
	return st.history, nil
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
	c      *kube.Client
	cfg    Config
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
	rendered map[string]bool
	// doomed are the members this prune deletes and has not kept so far:
	// what a CRD's or a Namespace's deletion may take along.
	doomed sets.Set[types.UID]
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

// newRevision reports whether this apply records a revision: its render
// is not the current revision's.
func (p *pass) newRevision() bool {
	return p.cfg.Record != nil && !(p.set.Revision > 0 && p.renderDigest == p.set.Digest)
}

// readHistory starts reading what storeRevision needs (the app's
// revisions, and who applies when the caller does not say) while the
// inventory is read, so that recording costs no round trip of its own.
func (p *pass) readHistory(ctx context.Context) {
	h, rec := &p.history, p.cfg.Record
	if rec.Revision.User == "" {
		user := rec.User
		if user == nil {
			user = func(ctx context.Context) string { return revision.User(ctx, p.c) }
		}
		h.Go(func() { h.user = user(ctx) })
	}
	h.Go(func() { h.revisions, h.orphans, h.err = revision.ListAll(ctx, p.c, p.cfg.App) })
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
	if err := set.OwnedBy(p.cfg.Fleet); err != nil {
		return err
	}
	// A snapshot: writing the parent changes the set's Version.
	p.set, p.others, p.last = set, others, *set
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
// starts once stop is done (Ctrl-C), nor once one has found the cluster
// unreachable: the objects not attempted are reported skipped.
func (p *pass) applyAll(stop, ctx context.Context, objs []*unstructured.Unstructured, pending map[schema.GroupKind]bool, newNS map[string]bool) error {
	var (
		wg     sync.WaitGroup
		failed atomic.Int32
		cut    sync.Once
		cause  error
		rest   []*unstructured.Unstructured
	)
	// start ends with Ctrl-C, or once a request found the cluster
	// unreachable: no object starts after.
	start, unreachable := context.WithCancel(stop)
	defer unreachable()
	slots := kube.NewSlots(p.cfg.Concurrency)
	for i, obj := range objs {
		if pending[obj.GroupVersionKind().GroupKind()] {
			p.cfg.Report(Change{Ref: object.Ref(obj), Namespace: obj.GetNamespace(), Action: Skipped, Reason: "would be created after its CRD"})
			continue
		}
		release, err := slots.Take(start)
		if err != nil {
			rest = objs[i:]
			break
		}
		wg.Add(1)
		go func() {
			defer func() { release(); wg.Done() }()
			ch := p.applyOne(ctx, obj)
			if p.cfg.DryRun && ch.Err != nil && kube.IsNamespaceNotFound(ch.Err) && newNS[obj.GetNamespace()] {
				ch = Change{Ref: ch.Ref, Namespace: ch.Namespace, Action: Skipped, Reason: "its namespace is created by this apply; not validated by the server"}
			}
			if ch.Err != nil {
				failed.Add(1)
				if kube.IsUnreachable(ch.Err) {
					cut.Do(func() { cause = fmt.Errorf("%s: %w", ch.Ref, ch.Err); unreachable() })
				}
			}
			p.cfg.Report(ch)
		}()
	}
	wg.Wait()
	if err := stop.Err(); err != nil {
		return err
	}
	if cause != nil {
		for _, obj := range rest {
			p.cfg.Report(Change{Ref: object.Ref(obj), Namespace: obj.GetNamespace(), Action: Skipped, Reason: "not attempted: the cluster stopped answering"})
		}
		return fmt.Errorf("the cluster stopped answering, %d of %d objects not attempted: %w", len(rest), len(objs), cause)
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d of %s failed", n, output.Plural(len(objs), "object"))
	}
	return nil
}

// applyOne applies one object. A real apply learns whether the object
// exists, and its resource version, from metadata listed once per resource
// and namespace (one request, not a read per object); a dry run, whose
// result keeps the old version, reads the object to compare.
func (p *pass) applyOne(ctx context.Context, obj *unstructured.Unstructured) (ch Change) {
	c, cfg := p.c, p.cfg
	opts := kube.ApplyOptions{FieldManager: FieldManager, Force: cfg.Force, DryRun: cfg.DryRun}
	ch = Change{Ref: object.Ref(obj), Namespace: obj.GetNamespace()}
	fail := func(err error) Change {
		ch.Action, ch.Err = Failed, explain(obj, err)
		return ch
	}
	ri, m, err := c.Scope(obj)
	if err != nil {
		return fail(err)
	}
	ch.Namespace = obj.GetNamespace()
	ignored := object.Ignored(obj, cfg.Ignore)
	live, before, listed, err := p.readLive(ctx, ri, m, obj, ignored)
	if err != nil {
		return fail(err)
	}
	claim := p.others.Claim(&p.last, object.Path(obj), live)
	inventory.Label(obj, claim.PartOf)
	ch.Warning = claim.Warning
	if claim.Adopt {
		p.adopt(object.Path(obj))
		defer adopted(&ch)
	}
	if ignored {
		object.KeepLive(obj, before, cfg.Ignore)
	}
	if live != nil && object.CreateOnly(obj) {
		ch.Action = Unchanged
		ch.Reason = "exists, not updated (" + object.ApplyAnnotation + ": create-only)"
		p.keep(live.UID)
		return ch
	}
	sum := digest.Object(obj, p.key)
	if p.unchanged(ctx, obj, sum, live, listed != nil && !ignored) {
		ch.Action = Unchanged
		p.keep(live.UID)
		p.record(obj, sum, live.ResourceVersion, live.UID)
		return ch
	}
	after, err := p.patch(ctx, ri, m, obj, opts)
	if field, immutable := kube.Immutable(err); immutable && live != nil && object.ForceEnabled(obj) {
		return p.replace(ctx, ri, obj, ch, field, live.UID)
	}
	if err != nil {
		return fail(err)
	}
	// A dry run's UID is the live object's, or a new one no member has.
	p.keep(after.GetUID())
	p.record(obj, sum, after.GetResourceVersion(), after.GetUID())
	if live == nil && !cfg.DryRun && !claim.Adopt && madeByOthers(after) {
		// Created by someone else since it was listed: what the apply
		// answers says so (another manager's fields). Adopted, so that
		// prune, delete and --atomic release it rather than delete it.
		p.adopt(object.Path(obj))
		ch.Action = Adopted
		return ch
	}
	switch {
	case live == nil:
		ch.Action = Created
	case cfg.DryRun && object.Same(before, after.(*unstructured.Unstructured)), !cfg.DryRun && live.ResourceVersion == after.GetResourceVersion():
		ch.Action = Unchanged
	default:
		ch.Action = Configured
	}
	return ch
}

// readLive is what applyOne knows of obj's live object: its metadata
// (nil: it does not exist), from metadata listed once per resource and
// namespace (listed, when it was); or, for a dry run, fields to keep or a
// user who may not list, the object itself (before), read (adopting may
// have read it already).
func (p *pass) readLive(ctx context.Context, ri dynamic.ResourceInterface, m *meta.RESTMapping, obj *unstructured.Unstructured, ignored bool) (live *metav1.ObjectMeta, before *unstructured.Unstructured, listed map[string]*metav1.ObjectMeta, err error) {
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
	return &metav1.ObjectMeta{UID: before.GetUID(), ResourceVersion: before.GetResourceVersion(), Labels: before.GetLabels()}, before, nil, nil
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

// adopted reports an object taken over as adopted, unless it failed.
func adopted(ch *Change) {
	if ch.Action != Failed && ch.Action != Skipped {
		ch.Action = Adopted
	}
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
	out := sets.New[string]()
	var (
		mu sync.Mutex
		g  errgroup.Group
	)
	g.SetLimit(max(1, p.cfg.Concurrency))
	for _, o := range objs {
		path := object.Path(o)
		if p.last.Contents.Members.Has(path) {
			continue
		}
		g.Go(func() error {
			if p.others.Claim(&p.last, path, p.liveMeta(ctx, o)).Adopt {
				mu.Lock()
				out.Insert(path)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// liveMeta is the live object's metadata, from the listing (or a read
// where listing is not allowed); nil when it does not exist or cannot be
// read (applyOne reads it again).
func (p *pass) liveMeta(ctx context.Context, o *unstructured.Unstructured) *metav1.ObjectMeta {
	ri, m, err := p.c.Scope(o.DeepCopy())
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
	return &metav1.ObjectMeta{UID: live.GetUID(), ResourceVersion: live.GetResourceVersion(), Labels: live.GetLabels()}
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
func (p *pass) unchanged(ctx context.Context, obj *unstructured.Unstructured, sum string, live *metav1.ObjectMeta, listed bool) bool {
	if p.cfg.DryRun || p.cfg.Force || !listed || p.c.Aggregated(ctx, obj.GroupVersionKind().GroupVersion()) {
		return false
	}
	return p.last.Unchanged(object.Path(obj), sum, live, p.cfg.Version)
}

// record notes what was sent of obj and the version that came back.
func (p *pass) record(obj *unstructured.Unstructured, sum, resourceVersion string, uid types.UID) {
	if p.cfg.DryRun {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent[object.Path(obj)] = inventory.Applied{Digest: sum, ResourceVersion: resourceVersion, UID: string(uid)}
}

// keep records that the object with uid was applied: it is not pruned.
func (p *pass) keep(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.applied.Insert(uid)
}

// replace deletes an object whose immutable field changed and creates it
// again, as fleet.kubectl.io/force: enabled asks, the way kubectl replace
// --force does: its dependents are deleted in the background (a Job's
// pods, a Deployment's ReplicaSets), and it is created once it is gone.
func (p *pass) replace(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, ch Change, field string, uid types.UID) Change {
	ch.Reason = object.Replacement(field, p.cfg.DryRun)
	if p.cfg.DryRun {
		ch.Action = Replaced
		return ch
	}
	fail := func(err error) Change {
		ch.Action, ch.Err, ch.Reason = Failed, fmt.Errorf("%s; replacing it (%s: enabled): %w", object.ImmutableChange(field), object.ForceAnnotation, err), ""
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
	ch.Action = Replaced
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

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// explain turns errors users can act on into advice, and never quotes the
// values an immutable-field error carries (a Job's whole pod template).
func explain(obj *unstructured.Unstructured, err error) error {
	if field, ok := kube.Immutable(err); ok {
		return object.ImmutableError(object.Ref(obj), field)
	}
	if apierrors.IsConflict(err) {
		return fmt.Errorf("%w (another field manager owns these fields; --force-conflicts takes them over)", err)
	}
	return err
}

func crdsOf(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			out = append(out, o)
		}
	}
	return out
}

// notServed returns the kinds the cluster does not serve yet.
func notServed(c *kube.Client, kinds map[schema.GroupKind]bool) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for gk := range kinds {
		if _, err := c.MappingFor(gk); err != nil && meta.IsNoMatchError(err) {
			out[gk] = true
		}
	}
	return out
}

// waitEstablished waits until every CRD reports Established.
func waitEstablished(ctx context.Context, c *kube.Client, crds []*unstructured.Unstructured, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, crd := range crds {
		for {
			live, err := c.Dynamic.Resource(gvr).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err == nil && conditionTrue(live, "Established") {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established: %w", crd.GetName(), ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func conditionTrue(o *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}

// prune deletes the set's live members that this apply did not just apply,
// known by the UIDs the server returned (never by names the render guessed),
// in reverse dependency order, never anything outside the set. What
// happens to each is the ownership rule's (inventory.Neighbours.Decide):
// a member another app renders in this run or still records is handed to
// that app, one whose prune is disabled or that the app adopted is left
// in place, out of the set, and one whose decision cannot be made (an
// input could not be read) stays in the set untouched.
func (p *pass) prune(stop, ctx context.Context, extra inventory.Contents) error {
	if !p.set.Exists && !p.cfg.DryRun {
		return nil
	}
	members, err := p.set.Members(ctx, p.c, extra)
	if err != nil {
		return fmt.Errorf("listing the members of app %s: %w", p.cfg.App, err)
	}
	var doomed []*unstructured.Unstructured
	for _, m := range members {
		if !p.applied.Has(m.GetUID()) && !p.rendered[object.Path(m)] {
			doomed = append(doomed, m)
		}
	}
	// Namespaces and CRDs last: their deletion takes their contents along.
	slices.SortStableFunc(doomed, func(a, b *unstructured.Unstructured) int {
		return boolInt(object.IsFirst(a)) - boolInt(object.IsFirst(b))
	})
	inUse := p.others.NamespacesInUse(p.set, extra.Namespaces, doomed)
	// What a CRD's or a Namespace's deletion may take along is only what
	// this prune deletes: a member it keeps (prune: disabled, handed
	// over, adopted, not decided) or failed to delete counts as
	// remaining. CRDs and Namespaces come last, when the rest is done.
	p.doomed = sets.New[types.UID]()
	for _, m := range doomed {
		p.doomed.Insert(m.GetUID())
	}
	var errs []error
	for _, m := range doomed {
		if err := stop.Err(); err != nil {
			return err
		}
		ch := p.pruneOne(ctx, m, inUse)
		if ch.Action != Pruned {
			p.doomed.Delete(m.GetUID()) // still there
		}
		if ch.Err != nil {
			errs = append(errs, ch.Err)
		}
		p.cfg.Report(ch)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s could not be pruned", output.Plural(len(errs), "object"))
	}
	return nil
}

// retain leaves a member in the set, untouched, for the next prune to
// decide: reason says which input of the decision could not be read.
func (p *pass) retain(ch Change, m *unstructured.Unstructured, reason string) Change {
	p.stay(m)
	ch.Action, ch.Reason = Kept, reason
	return ch
}

// stay keeps m in the app's record.
func (p *pass) stay(m *unstructured.Unstructured) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retained = p.retained.Union(inventory.ContentsOf([]*unstructured.Unstructured{m}))
}

func (p *pass) pruneOne(ctx context.Context, m *unstructured.Unstructured, inUse map[string]string) Change {
	ch := Change{Ref: object.Ref(m), Namespace: m.GetNamespace(), Action: Pruned}
	ri, _, err := p.c.Resource(m)
	if err != nil {
		return p.retain(ch, m, fmt.Sprintf("not deleted: its kind cannot be mapped (%v); left in app %s", err, p.cfg.App))
	}
	for attempt := 0; ; attempt++ {
		d, unread := p.guarded(ctx, m, p.others.Decide(p.set, m, inUse))
		switch {
		case unread != "":
			return p.retain(ch, m, unread)
		case d.Retain:
			return p.retain(ch, m, d.Reason)
		case !d.Delete:
			return p.kept(ctx, ri, ch, m, d)
		}
		// The object listed, in the version listed: not one re-created
		// under its name since, nor one changed since (a policy added
		// after the listing is read, and decided on, again).
		uid, rv := m.GetUID(), m.GetResourceVersion()
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}
		if p.cfg.DryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		err = ri.Delete(ctx, m.GetName(), opts)
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return ch
		case !apierrors.IsConflict(err):
			ch.Action, ch.Err = Failed, fmt.Errorf("prune: %w", err)
			return ch
		}
		// Changed since it was listed: read it again and decide again.
		live, gerr := ri.Get(ctx, m.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
			return ch
		case gerr != nil:
			return p.retain(ch, m, fmt.Sprintf("not deleted: changed since it was listed, and could not be read again (%v); left in app %s", gerr, p.cfg.App))
		case live.GetUID() != uid:
			ch.Action, ch.Reason = Skipped, "not deleted: re-created since it was listed (another uid)"
			return ch
		case live.GetLabels()[applyset.ApplysetPartOfLabel] != p.set.ID:
			ch.Action, ch.Reason = Skipped, "not deleted: no longer labelled as the app's since it was listed"
			return ch
		case attempt == 2:
			return p.retain(ch, m, fmt.Sprintf("not deleted: it kept changing while it was pruned; left in app %s", p.cfg.App))
		}
		m = live
	}
}

// guarded is d for m once the cluster is read where a delete would take
// more along: a Namespace holding objects no app owns, a CRD with custom
// resources this prune does not delete, is kept (prune: always aside).
// unread, when not "", is why that could not be read: m is retained.
func (p *pass) guarded(ctx context.Context, m *unstructured.Unstructured, d inventory.Decision) (_ inventory.Decision, unread string) {
	if !d.Delete || object.PruneAlways(m) {
		return d, ""
	}
	var (
		others string
		err    error
		what   string
	)
	switch {
	case m.GetKind() == "Namespace" && m.GetAPIVersion() == "v1":
		// Deleting a Namespace deletes everything in it.
		others, err = p.foreignIn(ctx, m.GetName())
		what = "what it holds could not be listed"
	case m.GetKind() == "CustomResourceDefinition":
		// Deleting a CRD deletes every custom resource of its kind, the
		// app's or not.
		others, err = p.customResources(ctx, m)
		what = "its custom resources could not be counted"
	}
	switch {
	case err != nil:
		return d, fmt.Sprintf("not deleted: %s (%v); left in app %s", what, err, p.cfg.App)
	case others != "":
		return inventory.Decision{Reason: "not deleted: " + others + "; left in place, no longer the app's"}, ""
	}
	return d, ""
}

// kept is a member the rule keeps (d): released, or handed to another
// app (To); one handed to an app of this run that does not record it yet
// (Stay) stays in the record, under the app's label, for To's claim.
func (p *pass) kept(ctx context.Context, ri dynamic.ResourceInterface, ch Change, m *unstructured.Unstructured, d inventory.Decision) Change {
	ch.Action, ch.Reason = Kept, d.Reason
	if d.Stay {
		p.stay(m)
		p.mu.Lock()
		p.handing.Insert(object.Path(m))
		p.mu.Unlock()
		return ch
	}
	if !p.cfg.DryRun {
		if err := p.set.Release(ctx, ri, m, d.To, FieldManager); err != nil {
			ch.Action, ch.Err = Failed, err
		}
	}
	return ch
}

// customResources says how many custom resources of crd's kind the
// cluster has that this prune does not delete, and in how many
// namespaces ("3 custom resources in 2 namespaces"); "" for none.
func (p *pass) customResources(ctx context.Context, crd *unstructured.Unstructured) (string, error) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	version := ""
	for _, v := range versions {
		v, _ := v.(map[string]any)
		if served, _ := v["served"].(bool); served && version == "" {
			version, _ = v["name"].(string)
		}
	}
	if plural == "" || version == "" {
		return "", nil // nothing served: no custom resource to lose
	}
	list, err := p.c.Metadata.Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: plural}).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	}
	n, namespaces := 0, sets.New[string]()
	for _, item := range list.Items {
		if !p.doomed.Has(item.GetUID()) {
			n++
			if ns := item.GetNamespace(); ns != "" {
				namespaces.Insert(ns)
			}
		}
	}
	verb := " remain"
	if n == 1 {
		verb = " remains"
	}
	switch {
	case n == 0:
		return "", nil
	case namespaces.Len() == 0:
		return output.Plural(n, "custom resource") + verb, nil
	}
	return output.Plural(n, "custom resource") + verb + " in " + output.Plural(namespaces.Len(), "namespace"), nil
}

// foreignIn says what namespace ns holds that this prune does not delete
// ("2 objects that are not the app's remain: configmaps/x, secrets/y");
// "" when nothing. What the cluster makes itself (the default
// ServiceAccount, kube-root-ca.crt, Events, Endpoints, metrics) does not
// count, nor an object whose owner is in the namespace (the owner
// counts) or is deleted by this prune. It fails closed: a resource that
// cannot be listed (forbidden, discovery failed) is an error, and the
// Namespace is kept.
func (p *pass) foreignIn(ctx context.Context, ns string) (string, error) {
	if p.c.Listable == nil {
		return "", errors.New("the cluster's resources cannot be discovered")
	}
	resources, err := p.c.Listable()
	if err != nil {
		return "", err
	}
	type item struct {
		ref    string
		uid    types.UID
		owners []metav1.OwnerReference
	}
	var (
		mu    sync.Mutex
		items []item
		g     errgroup.Group
	)
	g.SetLimit(8)
	for _, gvr := range resources {
		if gvr.Resource == "events" || gvr.Resource == "endpoints" || gvr.Group == "metrics.k8s.io" {
			continue // mirrors of what is there, made by the cluster
		}
		g.Go(func() error {
			list, err := p.c.Metadata.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return nil // no longer served: none of it is there
			case err != nil:
				return fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, it := range list.Items {
				if !clusterMade(gvr.Resource, it.GetName()) {
					items = append(items, item{strings.ToLower(gvr.Resource) + "/" + it.GetName(), it.GetUID(), it.GetOwnerReferences()})
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", err
	}
	present := sets.New[types.UID]()
	for _, it := range items {
		present.Insert(it.uid)
	}
	var foreign []string
	for _, it := range items {
		if p.doomed.Has(it.uid) || slices.ContainsFunc(it.owners, func(o metav1.OwnerReference) bool { return present.Has(o.UID) || p.doomed.Has(o.UID) }) {
			continue
		}
		if len(it.owners) > 0 {
			// Owned from outside the namespace, or by an owner gone:
			// garbage the collector deletes once every owner is gone
			// (a Deployment's Pod whose ReplicaSet went first).
			gone, err := p.ownersGone(ctx, ns, it.owners)
			if err != nil {
				return "", fmt.Errorf("reading the owners of %s: %w", it.ref, err)
			}
			if gone {
				continue
			}
		}
		foreign = append(foreign, it.ref)
	}
	if len(foreign) == 0 {
		return "", nil
	}
	slices.Sort(foreign)
	verb := " that are not the app's remain: "
	if len(foreign) == 1 {
		verb = " that is not the app's remains: "
	}
	return output.Plural(len(foreign), "object") + verb + strings.Join(foreign[:min(3, len(foreign))], ", ") + map[bool]string{true: ", …"}[len(foreign) > 3], nil
}

// ownersGone reports whether every owner an object in namespace ns
// names is gone (not found, or another object under its name): the
// garbage collector then deletes the object. An owner that cannot be
// read is an error.
func (p *pass) ownersGone(ctx context.Context, ns string, owners []metav1.OwnerReference) (bool, error) {
	for _, o := range owners {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			return false, err
		}
		m, err := p.c.MappingFor(gv.WithKind(o.Kind).GroupKind())
		if meta.IsNoMatchError(err) {
			continue // its kind is no longer served: it is gone
		} else if err != nil {
			return false, err
		}
		ri := p.c.Metadata.Resource(m.Resource)
		var live *metav1.PartialObjectMetadata
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			live, err = ri.Namespace(ns).Get(ctx, o.Name, metav1.GetOptions{})
		} else {
			live, err = ri.Get(ctx, o.Name, metav1.GetOptions{})
		}
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return false, err
		case live.GetUID() == o.UID:
			return false, nil
		}
	}
	return true, nil
}

// clusterMade reports whether the cluster itself puts an object in every
// namespace.
func clusterMade(resource, name string) bool {
	return resource == "serviceaccounts" && name == "default" || resource == "configmaps" && name == "kube-root-ca.crt"
}

// waitHealthy polls objects until kstatus calls every one Current, one
// Failed, or the timeout passes.
// waiting is the stage of the final wait: how long at most, and why.
func waiting(cfg Config) string {
	s := "waiting until healthy, up to " + waitTimeout(cfg).String()
	if cfg.WaitWhy != "" {
		s += " (" + cfg.WaitWhy + ")"
	}
	return s
}

// waitTimeout is how long a wait lasts at most (--timeout).
func waitTimeout(cfg Config) time.Duration {
	if cfg.Timeout <= 0 {
		return 5 * time.Minute
	}
	return cfg.Timeout
}

func waitHealthy(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, cfg Config) error {
	timeout := waitTimeout(cfg)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pending := slices.Clone(objs)
	last := map[string]string{}
	for {
		// One round reads every pending object, concurrently, under the
		// cluster's and the process's bounds; one not read (the wait is
		// over) stays pending.
		results := make([]*status.Result, len(pending))
		errs := make([]error, len(pending))
		for i := range errs {
			errs[i] = context.Canceled
		}
		kube.NewSlots(cfg.Concurrency).Each(ctx, len(pending), func(i int) {
			results[i], errs[i] = Health(ctx, c, pending[i])
		})
		var still []*unstructured.Unstructured
		for i, o := range pending {
			res, err := results[i], errs[i]
			switch {
			case err != nil:
				still = append(still, o)
				if ctx.Err() == nil {
					last[object.Path(o)] = err.Error()
				}
			case res.Status == status.CurrentStatus:
				cfg.Report(Change{Ref: object.Ref(o), Namespace: o.GetNamespace(), Action: Healthy})
			case res.Status == status.FailedStatus:
				cfg.Report(Change{Ref: object.Ref(o), Namespace: o.GetNamespace(), Action: Unhealthy, Reason: res.Message})
				return fmt.Errorf("%s is %s: %s", object.Ref(o), res.Status, res.Message)
			default:
				still = append(still, o)
				last[object.Path(o)] = string(res.Status) + ": " + res.Message
			}
		}
		if len(still) == 0 {
			return nil
		}
		pending = still
		select {
		case <-ctx.Done():
			for _, o := range pending {
				cfg.Report(Change{Ref: object.Ref(o), Namespace: o.GetNamespace(), Action: Unhealthy, Reason: last[object.Path(o)]})
			}
			return fmt.Errorf("%s not healthy after %s", output.Plural(len(pending), "object"), timeout)
		case <-time.After(time.Second):
		}
	}
}

// Health reads an object and computes its health (object.Health). The
// object is put in its scope first (kube.Client.Scope).
func Health(ctx context.Context, c *kube.Client, o *unstructured.Unstructured) (*status.Result, error) {
	ri, _, err := c.Scope(o)
	if err != nil {
		return nil, err
	}
	live, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return object.Health(live)
}
