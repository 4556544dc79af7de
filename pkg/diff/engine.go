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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

// Kind is what apply would do to an object.
type Kind string

// The kinds of object difference.
const (
	Create    Kind = "create"
	Change    Kind = "change"
	Unchanged Kind = "unchanged"
	// Prune: apply --prune would delete the object.
	Prune Kind = "prune"
	// AfterCRD: the object's kind comes from a CRD in the same render that
	// the cluster does not have yet; it would be created after it.
	AfterCRD Kind = "after-crd"
	// Kept: no longer rendered, but apply --prune would leave it in place
	// (fleet.kubectl.io/prune: disabled) and take it out of the app.
	Kept Kind = "kept"
	// Adopt: the object exists and kubectl fleet did not create it; apply
	// would take it into the app (and change it as the diff shows), and
	// prune, delete and rollback would release it rather than delete it.
	Adopt Kind = "adopt"
)

// Object is the difference for one object. Live and Merged are normalized
// and, unless asked otherwise, masked; either may be nil.
type Object struct {
	Ref    string
	Path   string
	Kind   Kind
	Live   *unstructured.Unstructured
	Merged *unstructured.Unstructured
	// Text is the unified diff of Live and Merged as YAML.
	Text string
	// Note says what else apply would do or need: a conflict with another
	// field manager, a replacement, a policy that applies.
	Note string
	// Warning: the object is shared with another app, or moved from one.
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
}

// Options configure a diff.
type Options struct {
	App          string
	FieldManager string
	Force        bool
	ShowSecrets  bool
	// Concurrency bounds the object requests in flight.
	Concurrency int
	// Context lines around each change.
	Context int
	// Cluster names the cluster in diff headers.
	Cluster string
	// Set is the app's inventory, if the caller has read it already.
	Set *inventory.Set
	// Ignore names fields whose differences are not shown, and whose live
	// values apply would keep.
	Ignore []object.IgnoreRule
	// SkipUnchanged reports an object unchanged without a dry run when
	// apply would skip it (inventory.Set.Unchanged: what the last apply
	// of this Version sent, and not changed on the cluster since), read
	// from one metadata list per resource and namespace. Not with Force,
	// nor for fields of Ignore.
	SkipUnchanged bool
	// Version is the plugin version, for SkipUnchanged.
	Version string
}

// Run computes, for one app on one cluster, what apply --prune would do:
// each rendered object is server-side applied with dry run and compared
// with the live object; members of the app's ApplySet that are no longer
// rendered are prunes. objs are labelled as members, as apply would.
func Run(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, o Options) ([]Object, error) {
	skip := o.SkipUnchanged && !o.Force
	var listings kube.Listings
	set, others, key, err := read(ctx, c, objs, o, skip, &listings)
	if err != nil {
		return nil, err
	}
	crds := object.CRDKinds(objs)
	newNS := object.Namespaces(objs)
	out := make([]Object, len(objs))
	sem := make(chan struct{}, max(1, o.Concurrency))
	var wg sync.WaitGroup
	for i, obj := range objs {
		obj = object.CopyMeta(obj) // the render is the run's, shared
		set.Label(obj)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			claim := func(obj *unstructured.Unstructured, live *metav1.ObjectMeta) inventory.Claim {
				c := others.Claim(set, object.Path(obj), live)
				inventory.Label(obj, c.PartOf)
				return c
			}
			if skip {
				if d, ok := unchanged(ctx, c, obj, set, &listings, key, o, claim); ok {
					out[i] = d
					return
				}
			}
			out[i] = one(ctx, c, obj, crds, newNS, o, func(obj, live *unstructured.Unstructured) inventory.Claim {
				var meta *metav1.ObjectMeta
				if live != nil {
					meta = &metav1.ObjectMeta{Labels: live.GetLabels()}
				}
				return claim(obj, meta)
			})
		}()
	}
	wg.Wait()

	if !set.Exists {
		return out, nil
	}
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
	members, err := set.Members(ctx, c, rendered)
	if err != nil {
		return nil, fmt.Errorf("listing the members of app %s: %w", o.App, err)
	}
	members = slices.DeleteFunc(members, func(m *unstructured.Unstructured) bool {
		return uids.Has(m.GetUID()) || failed.Has(object.Path(m))
	})
	inUse := others.NamespacesInUse(set, rendered.Namespaces, members)
	for _, m := range members {
		d := Object{Ref: object.Ref(m), Path: object.Path(m), Kind: Prune, Live: object.Normalize(m), Current: m}
		if keep, _, reason := others.Keep(set, m, inUse); keep {
			d.Kind, d.Note = Kept, "no longer rendered; kept: "+reason
		}
		if err := finish(&d, o); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// read reads, at once, the app's inventory and its neighbours' and, when
// unchanged objects are skipped, what the skip needs: the objects'
// metadata (into listings), the digest key and the aggregated APIs.
func read(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, o Options, skip bool, listings *kube.Listings) (set *inventory.Set, others *inventory.Neighbours, key digest.Key, err error) {
	var (
		lists  sync.WaitGroup
		keyErr error
	)
	if skip {
		keys := c.ListKeys(objs, func(obj *unstructured.Unstructured) bool { return object.Ignored(obj, o.Ignore) })
		lists.Go(func() { listings.Prefetch(ctx, ctx, c, keys, o.Concurrency) })
		lists.Go(func() { key, keyErr = digest.KeyOf(ctx, c) })
		lists.Go(func() { c.AggregatedAPIs(ctx) })
	}
	if set = o.Set; set == nil {
		set, others, err = inventory.LoadWithNeighbours(ctx, c, o.App)
	} else {
		others, err = inventory.LoadNeighbours(ctx, c, o.App)
	}
	lists.Wait()
	return set, others, key, cmp.Or(err, keyErr)
}

// unchanged reports obj unchanged, without a request of its own, when
// apply would skip it: labelled as apply would send it (claim), its digest
// is the one the last apply recorded, and the live object's version, as
// listed, has not moved since. Anything else (not listed, gone, a
// create-only or ignoreDifferences object) is left to the dry run.
func unchanged(ctx context.Context, c *kube.Client, obj *unstructured.Unstructured, set *inventory.Set, listings *kube.Listings, key digest.Key, o Options, claim func(obj *unstructured.Unstructured, live *metav1.ObjectMeta) inventory.Claim) (Object, bool) {
	if len(set.Applied) == 0 || object.Ignored(obj, o.Ignore) || object.CreateOnly(obj) || c.Aggregated(ctx, obj.GroupVersionKind().GroupVersion()) {
		return Object{}, false
	}
	_, m, err := c.Scope(obj)
	if err != nil {
		return Object{}, false
	}
	listed, err := listings.Of(ctx, c, m, obj.GetNamespace())
	live := listed[obj.GetName()]
	if err != nil || live == nil {
		return Object{}, false
	}
	warning := claim(obj, live).Warning
	if !set.Unchanged(object.Path(obj), digest.Object(obj, key), live, o.Version) {
		return Object{}, false
	}
	current := &unstructured.Unstructured{}
	current.SetAPIVersion(obj.GetAPIVersion())
	current.SetKind(obj.GetKind())
	current.SetNamespace(obj.GetNamespace())
	current.SetName(obj.GetName())
	current.SetUID(live.UID)
	current.SetResourceVersion(live.ResourceVersion)
	current.SetLabels(live.Labels)
	return Object{Ref: object.Ref(obj), Path: object.Path(obj), Kind: Unchanged, Warning: warning, Current: current}, true
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
	field, immutable := kube.Immutable(err)
	switch {
	case before != nil && object.CreateOnly(obj):
		d.Kind, d.Note = Unchanged, "exists, not updated ("+object.ApplyAnnotation+": create-only)"
		return d
	case err != nil && meta.IsNoMatchError(err) && crds[obj.GroupVersionKind().GroupKind()]:
		d.Kind, d.Merged = AfterCRD, object.Normalize(obj)
	case err != nil && kube.IsNamespaceNotFound(err) && newNS[obj.GetNamespace()]:
		// Its namespace is created by the same apply, so the server cannot
		// dry-run it yet: it is new, shown as rendered.
		d.Kind, d.Merged = Create, object.Normalize(obj)
	case immutable && before != nil && object.ForceEnabled(obj):
		// The server cannot dry-run a re-creation: the rendered object
		// stands for what would be created, compared with the live values
		// of the fields it sets (not those the server defaults).
		d.Kind, d.Live, d.Merged = Change, object.Project(object.Normalize(before), obj), object.Normalize(obj)
		d.Note = object.Replacement(field, true)
	case immutable:
		d.Err = object.ImmutableError(d.Ref, field)
		return d
	case err != nil:
		d.Err = err
		return d
	case before == nil:
		d.Kind, d.Merged = Create, object.Normalize(after)
	default:
		live, merged := object.WithoutIgnored(before, o.Ignore), object.WithoutIgnored(after, o.Ignore)
		d.Live, d.Merged = object.Normalize(live), object.Normalize(merged)
		d.Kind = Change
		if object.Same(live, merged) {
			d.Kind, d.Note, d.Conflict = Unchanged, "", false
		}
	}
	if adopt && (d.Kind == Change || d.Kind == Unchanged) {
		d.Kind = Adopt
		d.Note = strings.TrimPrefix(d.Note+"; adopt: it exists and kubectl fleet did not create it; apply takes it into app "+o.App+", and prune, delete and rollback release it rather than delete it", "; ")
	}
	if n := object.Phase(obj); n != 0 && !object.IsFirst(obj) && d.Kind != Unchanged {
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

// finish masks Secrets and computes the text diff.
func finish(d *Object, o Options) error {
	if !o.ShowSecrets {
		var err error
		if d.Live, d.Merged, err = object.Mask(d.Live, d.Merged); err != nil {
			return err
		}
	}
	if d.Kind == Unchanged {
		return nil
	}
	live, err := object.ToYAML(d.Live)
	if err != nil {
		return err
	}
	merged, err := object.ToYAML(d.Merged)
	if err != nil {
		return err
	}
	d.Text = Unified("live/"+o.Cluster+"/"+d.Path, "merged/"+o.Cluster+"/"+d.Path, live, merged, o.Context)
	return nil
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
		case d.Kind == Create || d.Kind == AfterCRD:
			s.Create++
		case d.Kind == Change, d.Kind == Adopt:
			s.Change++
			s.Conflicts += boolInt(d.Conflict)
		case d.Kind == Prune:
			s.Prune++

		default:
			s.Unchanged++
		}
	}
	return s
}

// Differs reports whether anything would change.
func (s Summary) Differs() bool { return s.Create+s.Change+s.Prune > 0 }
