package diff

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

// Object is the difference for one object. Live and Merged are normalized
// and, unless asked otherwise, masked; either may be nil. With
// Options.Health, Live is nil, and Current and Merged hold only the
// object's type and identity (keepHealth).
type Object struct {
	Ref  string
	Path string
	// Action is what apply would do (change.Of); diff prints its
	// Planned word.
	Action change.Action
	Live   *unstructured.Unstructured
	Merged *unstructured.Unstructured
	// Text is the unified diff of Live and Merged as YAML.
	Text string
	// Note says what else apply would do or need: a conflict with another
	// field manager, a replacement, a policy that applies.
	Note string
	// Warning: the object is shared with another app, or labelled as an
	// app's that does not record it.
	Warning string
	// Conflict: another field manager owns fields apply would set, so
	// apply needs --force-conflicts.
	Conflict bool
	// Current is the live object as read, status included and unmasked:
	// for health checks, never for printing. For an object skipped as
	// unchanged (Options.SkipUnchanged) it holds only the type and the
	// metadata the list returned.
	Current *unstructured.Unstructured
	Err     error
	// Health is the live object's health by kstatus rules (object.Health),
	// with Options.Health: nil when there is no live object, or when its
	// health could not be computed (HealthErr).
	Health    *kstatus.Result
	HealthErr error
	// RenderChanged: of an object that differs (Change, Adopt), the
	// render is not what the app's last apply sent, as it recorded it:
	// the render moved since. When false the live object was edited
	// since (or the record does not say).
	RenderChanged bool
}

// Options configure a diff.
type Options struct {
	App          string
	FieldManager string
	Force        bool
	ShowSecrets  bool
	// Mask holds the values decrypted from SOPS files, masked in any
	// object's diff on both sides (unless ShowSecrets).
	Mask *mask.Set
	// Concurrency bounds the object requests in flight.
	Concurrency int
	// Context lines around each change.
	Context int
	// Cluster names the cluster in diff headers.
	Cluster string
	// Fleet is the fleet's name: an app of another fleet's is refused,
	// as apply refuses it (inventory.Set.OwnedBy).
	Fleet string
	// Others are the renders of the other apps of the run on the
	// cluster, by app: what they render is handed to them, not pruned
	// (inventory.Neighbours.Rendering), as apply does.
	Others map[string][]*unstructured.Unstructured
	// Set is the app's inventory, if the caller has read it already.
	Set *inventory.Set
	// Ignore names fields whose differences are not shown, and whose live
	// values apply would keep.
	Ignore []object.IgnoreRule
	// SkipUnchanged reports an object unchanged without a dry run when
	// apply would skip it (inventory.Set.Unchanged: what the last apply
	// of this Version sent, and not changed on the cluster since), read
	// from one metadata list per resource and namespace. Not for fields
	// of Ignore, nor with Force unless with Health: apply
	// --force-conflicts sends every object, and diff shows what apply
	// would send.
	SkipUnchanged bool
	// Version is the plugin version, for SkipUnchanged.
	Version string
	// Health is for status, which needs of each object its health and
	// whether it differs, not its contents: as each object is diffed, its
	// Health is computed from the live object and only its identity is
	// kept (keepHealth), so that a cluster's objects are let go as they
	// are done, not when all are. With SkipUnchanged, the live objects
	// of those skipped are read from the lists of the app's members that
	// Run sends anyway (for prunes) rather than from a request each, and
	// they are skipped with Force too: Force only makes a field another
	// manager set since our apply drift rather than a conflict, and an
	// object whose resourceVersion has not moved since our apply has no
	// such field; its dry run would answer unchanged.
	Health bool
}

// Run computes, for one app on one cluster, what apply --prune would do:
// each rendered object is server-side applied with dry run and compared
// with the live object; members of the app's ApplySet that are no longer
// rendered are prunes. objs are labelled as members, as apply would.
func Run(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, o Options) ([]Object, error) {
	r, err := read(ctx, c, objs, o)
	if err != nil {
		return nil, err
	}
	crds := object.CRDKinds(objs)
	newNS := object.Namespaces(objs)
	out := make([]Object, len(objs))
	claim := func(obj *unstructured.Unstructured, live *kube.Live) inventory.Claim {
		c := r.others.Claim(r.set, object.Path(obj), live)
		inventory.Label(obj, c.PartOf)
		return c
	}
	started := kube.NewSlots(o.Concurrency).Each(ctx, len(objs), func(i int) {
		obj := object.CopyMeta(objs[i]) // the render is the run's, shared
		r.set.Label(obj)
		d, skipped := Object{}, false
		if r.skip {
			d, skipped = unchanged(ctx, c, obj, r, o, claim)
		}
		if !skipped {
			d = one(ctx, c, obj, crds, newNS, o, func(obj, live *unstructured.Unstructured) inventory.Claim {
				var meta *kube.Live
				if live != nil {
					meta = &kube.Live{Labels: live.GetLabels()}
				}
				return claim(obj, meta)
			})
		}
		if d.Action.Updates() {
			d.RenderChanged = r.renderChanged(obj)
		}
		if o.Health {
			keepHealth(&d, r.healthOf(d.Current, skipped))
		}
		out[i] = d
	})
	for i := started; i < len(objs); i++ {
		out[i] = Object{Ref: object.Ref(objs[i]), Path: object.Path(objs[i]), Err: cmp.Or(ctx.Err(), context.Canceled)} // not started
	}

	if !r.set.Exists {
		return out, nil
	}
	return prunes(ctx, c, objs, out, r, o)
}

// prunes adds to out, the rendered objects' differences, the members of
// the app's set that are no longer rendered.
func prunes(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, out []Object, r *reads, o Options) ([]Object, error) {
	// A member is still rendered if the server matched a rendered object to
	// it (same UID), whatever namespace the render guessed. An object the
	// server could not even read is matched by its path, so that an error
	// is never also reported as a prune.
	uids, failed := sets.New[types.UID](), sets.New[string]()
	for _, d := range out {
		switch {
		case d.Current != nil:
			uids.Insert(d.Current.GetUID())
		case d.Err != nil:
			failed.Insert(d.Path)
		}
	}
	rendered := inventory.ContentsOf(objs)
	matched := func(m *unstructured.Unstructured) bool { return uids.Has(m.GetUID()) || failed.Has(object.Path(m)) }
	var members []*unstructured.Unstructured
	if r.byPath != nil { // listed before the objects
		members = slices.DeleteFunc(slices.Clone(r.members), matched)
	} else {
		// Only the members no rendered object matched are kept, whole.
		var err error
		members, err = inventory.KeepMembers(ctx, c, r.set, rendered, kube.NoManagedFields, func(m *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
			return m, !matched(m)
		})
		if err != nil {
			return nil, fmt.Errorf("listing the members of app %s: %w", o.App, err)
		}
	}
	kept, err := r.kept(ctx, c, members, rendered.Namespaces)
	if err != nil {
		return nil, err // interrupted: what is left is not decided
	}
	for _, m := range members {
		d := Object{Ref: object.Ref(m), Path: object.Path(m), Action: change.Pruned, Current: m}
		if reason, ok := kept[m.GetUID()]; ok {
			d.Action, d.Note = change.Kept, "no longer rendered; kept: "+reason
		}
		if o.Health {
			keepHealth(&d, r.healthOf(m, true))
		} else {
			d.Live = object.Normalize(m)
		}
		if err := finish(&d, o); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// kept are the members apply --prune would not delete, with why: the
// decisions of the prune's one walk (inventory.Prune), so that diff says
// what apply does. applied are the namespaces the render has objects in.
func (r *reads) kept(ctx context.Context, c *kube.Client, members []*unstructured.Unstructured, applied sets.Set[string]) (map[types.UID]string, error) {
	kept := map[types.UID]string{}
	err := inventory.NewPrune(c, r.set, r.others, applied, members).Walk(ctx, func(m *unstructured.Unstructured, d inventory.Decision) (bool, error) {
		if d.Keep() {
			kept[m.GetUID()] = d.Reason
		}
		return !d.Keep(), nil
	})
	return kept, err
}

// reads is what Run reads of the cluster before it diffs the objects.
type reads struct {
	set    *inventory.Set
	others *inventory.Neighbours
	// skip: objects apply would skip are unchanged without a dry run
	// (Options.SkipUnchanged), by the cluster's digest key.
	skip bool
	key  digest.Key
	// listings are the objects' metadata, for skip without Health.
	listings kube.Listings
	// members are the app's members as listed before the objects, with
	// Health (byPath is then not nil): the skipped objects' live state,
	// and the candidates for prunes. Each is kept lean (lean), its health
	// computed as listed.
	members []*unstructured.Unstructured
	byPath  map[string]*unstructured.Unstructured
	health  map[types.UID]health
}

// health is an object's health by kstatus rules, or why it has none.
type health struct {
	res *kstatus.Result
	err error
}

// healthOf is the health of a member as listed, for a live object that
// is one (listed: a skipped object's, a prune's); nil for any other.
func (r *reads) healthOf(live *unstructured.Unstructured, listed bool) *health {
	if !listed || live == nil {
		return nil
	}
	if h, ok := r.health[live.GetUID()]; ok {
		return &h
	}
	return nil
}

// read reads, at once, the app's inventory and its neighbours' and, when
// unchanged objects are skipped, what the skip needs: the objects'
// metadata (or with Health, the app's members), the digest key and the
// aggregated APIs.
func read(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, o Options) (*reads, error) {
	r := &reads{skip: o.SkipUnchanged && (!o.Force || o.Health)}
	var (
		lists  sync.WaitGroup
		keyErr error
	)
	if r.skip {
		if !o.Health {
			keys := c.ListKeys(objs, func(obj *unstructured.Unstructured) bool { return object.Ignored(obj, o.Ignore) })
			lists.Go(func() { r.listings.Prefetch(ctx, c, keys, o.Concurrency) })
		}
		lists.Go(func() { r.key, keyErr = digest.KeyOf(ctx, c) })
		if kube.AnyAggregated(objs) {
			lists.Go(func() { c.AggregatedAPIs(ctx) })
		}
	}
	var err error
	if r.set = o.Set; r.set == nil {
		r.set, r.others, err = inventory.LoadWithNeighbours(ctx, c, o.App)
	} else {
		r.others, err = inventory.LoadNeighbours(ctx, c, o.App)
	}
	if err == nil {
		err = r.set.OwnedBy(o.Fleet)
	}
	if err == nil {
		r.others.Rendering(c, o.Others)
	}
	if err == nil && o.Health {
		err = r.listMembers(ctx, c, objs, o.App)
	}
	lists.Wait()
	return r, cmp.Or(err, keyErr)
}

// listMembers lists the app's members (one list per kind and namespace),
// by path, each kept lean once its health is known, as it is listed.
func (r *reads) listMembers(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, app string) error {
	r.byPath = map[string]*unstructured.Unstructured{}
	if !r.set.Exists {
		return nil
	}
	type member struct {
		lean   *unstructured.Unstructured
		health health
	}
	members, err := inventory.KeepMembers(ctx, c, r.set, inventory.ContentsOf(objs), kube.HealthFields, func(m *unstructured.Unstructured) (member, bool) {
		res, err := object.Health(m)
		return member{lean(m), health{res, err}}, true
	})
	if err != nil {
		return fmt.Errorf("listing the members of app %s: %w", app, err)
	}
	r.health = make(map[types.UID]health, len(members))
	r.members = make([]*unstructured.Unstructured, len(members))
	for i, m := range members {
		r.byPath[object.Path(m.lean)] = m.lean
		r.health[m.lean.GetUID()] = m.health
		r.members[i] = m.lean
	}
	return nil
}

// lean is a listed member (listed with kube.HealthFields) as a diff with
// Health keeps it once its health is known: its type and metadata, which
// is what the prune's decisions read, and a CRD whole (its spec names its
// custom resources). A 1,000-cluster status held every cluster's members
// whole.
func lean(m *unstructured.Unstructured) *unstructured.Unstructured {
	if m.GetKind() == "CustomResourceDefinition" {
		return m
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": m.Object["apiVersion"], "kind": m.Object["kind"], "metadata": m.Object["metadata"]}}
}

// listed is obj's live metadata as listed (nil if it was not), and with
// Health the whole live object: a member of the app listed in obj's
// version, whose health is the one a read of obj would give.
func (r *reads) listed(ctx context.Context, c *kube.Client, obj *unstructured.Unstructured, m *meta.RESTMapping) (*kube.Live, *unstructured.Unstructured) {
	if r.byPath == nil {
		listed, err := r.listings.Of(ctx, c, m, obj.GetNamespace())
		if err != nil {
			return nil, nil
		}
		return listed[obj.GetName()], nil
	}
	live := r.byPath[object.Path(obj)]
	if live == nil || live.GetAPIVersion() != obj.GetAPIVersion() {
		return nil, nil
	}
	return kube.LiveOf(live), live
}

// renderChanged reports whether obj, labelled as apply sends it, is not
// what the app's last apply sent: its record names the object with
// another digest. An object the record does not name, or that has no
// digest here (the cluster's digest key was not read), is not said to.
func (r *reads) renderChanged(obj *unstructured.Unstructured) bool {
	last, ok := r.set.Applied[object.Path(obj)]
	if !ok || last.Digest == "" || !r.skip {
		return false
	}
	sum := digest.Object(obj, r.key)
	return sum != "" && sum != last.Digest
}

// unchanged reports obj unchanged, without a request of its own, when
// apply would skip it: labelled as apply would send it (claim), its digest
// is the one the last apply recorded, and the live object's version, as
// listed, has not moved since. Anything else (not listed, gone, a
// create-only or ignoreDifferences object) is left to the dry run.
func unchanged(ctx context.Context, c *kube.Client, obj *unstructured.Unstructured, r *reads, o Options, claim func(obj *unstructured.Unstructured, live *kube.Live) inventory.Claim) (Object, bool) {
	if len(r.set.Applied) == 0 || object.Ignored(obj, o.Ignore) || object.CreateOnly(obj) || c.Aggregated(ctx, obj.GroupVersionKind().GroupVersion()) {
		return Object{}, false
	}
	_, m, err := c.Scope(obj)
	if err != nil {
		return Object{}, false
	}
	live, current := r.listed(ctx, c, obj, m)
	if live == nil {
		return Object{}, false
	}
	warning := claim(obj, live).Warning
	if !r.set.Unchanged(object.Path(obj), digest.Object(obj, r.key), live, o.Version) {
		return Object{}, false
	}
	if current == nil {
		current = identity(obj)
		current.SetUID(live.UID)
		current.SetResourceVersion(live.ResourceVersion)
		current.SetLabels(live.Labels)
	}
	return Object{Ref: object.Ref(obj), Path: object.Path(obj), Action: change.Unchanged, Warning: warning, Current: current}, true
}

// keepHealth computes d's health from the live object (Current), or
// takes known, its health as listed, and keeps of d only what status
// reports: no contents, no text, and of the live and merged objects their
// type and identity.
func keepHealth(d *Object, known *health) {
	switch {
	case known != nil:
		d.Health, d.HealthErr = known.res, known.err
	case d.Current != nil:
		d.Health, d.HealthErr = object.Health(d.Current)
	}
	if d.HealthErr != nil {
		d.Health = nil
	}
	d.Current, d.Merged, d.Live, d.Text = identity(d.Current), identity(d.Merged), nil, ""
}

// identity is a new object of o's type, namespace, name, uid and
// resourceVersion; nil for nil.
func identity(o *unstructured.Unstructured) *unstructured.Unstructured {
	if o == nil {
		return nil
	}
	id := &unstructured.Unstructured{}
	id.SetAPIVersion(o.GetAPIVersion())
	id.SetKind(o.GetKind())
	id.SetNamespace(o.GetNamespace())
	id.SetName(o.GetName())
	if uid := o.GetUID(); uid != "" {
		id.SetUID(uid)
	}
	if rv := o.GetResourceVersion(); rv != "" {
		id.SetResourceVersion(rv)
	}
	return id
}

// one diffs one object. claim, given the live object, labels obj with the
// set it belongs to and says whether it is shared or adopted, as apply
// does.
func one(ctx context.Context, c *kube.Client, obj *unstructured.Unstructured, crds map[schema.GroupKind]bool, newNS map[string]bool, o Options, claim func(obj, live *unstructured.Unstructured) inventory.Claim) Object {
	d := Object{Ref: object.Ref(obj), Path: object.Path(obj)}
	opts := kube.ApplyOptions{FieldManager: o.FieldManager, Force: o.Force, DryRun: true}
	adopt := false
	opts.Prepare = func(obj, live *unstructured.Unstructured) {
		cl := claim(obj, live)
		d.Warning, adopt = cl.Warning, cl.Adopt
		if object.Ignored(obj, o.Ignore) {
			object.KeepLive(obj, live, o.Ignore)
		}
	}
	before, after, err := c.Apply(ctx, obj, opts)
	if apierrors.IsConflict(err) && !opts.Force {
		// Someone changed fields apply owns (kubectl edit, patch): a
		// difference, shown as apply --force-conflicts would make it.
		d.Note, d.Conflict = conflictNote(err), true
		opts.Force = true
		before, after, err = c.Apply(ctx, obj, opts)
	}
	d.Path = object.Path(obj) // the cluster's mapping may have scoped it
	d.Current = before
	ans := change.Answer{Obj: obj, Existed: before != nil, Err: err, Adopt: adopt, DryRun: true,
		PendingCRD:   meta.IsNoMatchError(err) && crds[obj.GroupVersionKind().GroupKind()],
		NewNamespace: newNS[obj.GetNamespace()]}
	var live, merged *unstructured.Unstructured
	if err == nil && before != nil {
		live, merged = object.WithoutIgnored(before, o.Ignore), object.WithoutIgnored(after, o.Ignore)
		ans.Same = object.Same(live, merged)
	}
	var note string
	if d.Action, note, d.Err = change.Of(ans); d.Err != nil {
		return d
	}
	if ans.Same {
		d.Note, d.Conflict = "", false // what the conflict was about is ours again
	}
	if d.Action != change.AfterCRD && note != change.NotValidated { // Print says the one, a whole new object the other
		d.Note = strings.TrimPrefix(d.Note+"; "+note, "; ")
	}
	switch d.Action {
	case change.AfterCRD:
		d.Merged = object.Normalize(obj)
	case change.Created:
		d.Merged = object.Normalize(obj) // its namespace new: as rendered
		if after != nil {
			d.Merged = object.Normalize(after)
		}
	case change.Replaced:
		// The server cannot dry-run a re-creation: the rendered object
		// stands for what would be created, compared with the live values
		// of the fields it sets (not those the server defaults).
		d.Live, d.Merged = object.Project(object.Normalize(before), obj), object.Normalize(obj)
	case change.Configured, change.Adopted, change.Unchanged:
		d.Merged = merged
		if !o.Health { // keepHealth keeps the identity of Merged alone
			d.Live, d.Merged = object.Normalize(live), object.Normalize(merged)
		}
	}
	if d.Action == change.Adopted {
		d.Note = strings.TrimPrefix(d.Note+"; adopt: it exists and kubectl fleet did not create it; apply takes it into app "+o.App+", and prune, delete and rollback release it rather than delete it", "; ")
	}
	if n := object.Phase(obj); n != 0 && !object.IsFirst(obj) && d.Action.Changes() {
		d.Note = strings.TrimPrefix(d.Note+"; phase "+strconv.Itoa(n), "; ")
	}
	if err := finish(&d, o); err != nil {
		d.Err = err
	}
	return d
}

// conflictNote names the field managers and fields of a conflict, and
// what apply needs to take them back.
func conflictNote(err error) string {
	var se apierrors.APIStatus
	var parts []string
	if errors.As(err, &se) && se.Status().Details != nil {
		byManager := map[string][]string{}
		var managers []string
		for _, c := range se.Status().Details.Causes {
			if c.Type != metav1.CauseTypeFieldManagerConflict {
				continue
			}
			m := c.Message
			if _, rest, ok := strings.Cut(m, "conflict with "); ok {
				m, _, _ = strings.Cut(rest, " using ")
			}
			if _, ok := byManager[m]; !ok {
				managers = append(managers, m)
			}
			byManager[m] = append(byManager[m], c.Field)
		}
		for _, m := range managers {
			parts = append(parts, m+" ("+strings.Join(byManager[m], ", ")+")")
		}
	}
	who := "another field manager"
	if len(parts) > 0 {
		who = strings.Join(parts, ", ")
	}
	return "conflicts with " + who + ": apply needs --force-conflicts to take these fields back"
}

// finish masks Secrets and computes the text diff; with Health, which
// needs neither, it does nothing.
func finish(d *Object, o Options) error {
	if o.Health {
		return nil
	}
	if !o.ShowSecrets {
		var err error
		if d.Live, d.Merged, err = object.Mask(d.Live, d.Merged); err != nil {
			return err
		}
		d.Live, d.Merged = maskPair(o.Mask, d.Live, d.Merged)
	}
	if d.Action == change.Unchanged {
		return nil
	}
	live, merged, err := d.yaml()
	if err != nil {
		return err
	}
	// The headers name the cluster and the app: a reader of many
	// clusters' diffs sees whose object each is.
	where := o.Cluster + "/" + o.App + "/" + d.Path
	d.Text = Unified("live/"+where, "merged/"+where, live, merged, o.Context)
	return nil
}

// maskPair masks the decrypted values of m in both sides of a diff
// (mask.Set.Pair); nil stays nil.
func maskPair(m *mask.Set, live, merged *unstructured.Unstructured) (*unstructured.Unstructured, *unstructured.Unstructured) {
	if m.Empty() {
		return live, merged
	}
	var l, r map[string]any
	if live != nil {
		l = live.Object
	}
	if merged != nil {
		r = merged.Object
	}
	l, r = m.Pair(l, r)
	if live != nil {
		live = &unstructured.Unstructured{Object: l}
	}
	if merged != nil {
		merged = &unstructured.Unstructured{Object: r}
	}
	return live, merged
}

// yaml is the object's live and merged forms as YAML.
func (d Object) yaml() (live, merged string, err error) {
	if live, err = object.ToYAML(d.Live); err != nil {
		return "", "", err
	}
	merged, err = object.ToYAML(d.Merged)
	return live, merged, err
}

// Summary counts a cluster's differences.
type Summary struct {
	Create, Change, Prune, Unchanged, Errors int
	// Conflicts counts the changes apply needs --force-conflicts for.
	Conflicts int
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Summarize counts diffs by kind; AfterCRD counts as a creation.
func Summarize(diffs []Object) Summary {
	var s Summary
	for _, d := range diffs {
		switch {
		case d.Err != nil:
			s.Errors++
		case d.Action == change.Created || d.Action == change.AfterCRD:
			s.Create++
		case d.Action.Updates():
			s.Change++
			s.Conflicts += boolInt(d.Conflict)
		case d.Action == change.Pruned:
			s.Prune++

		default:
			s.Unchanged++
		}
	}
	return s
}

// Differs reports whether anything would change.
func (s Summary) Differs() bool { return s.Create+s.Change+s.Prune > 0 }
