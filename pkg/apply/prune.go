package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	applyset "k8s.io/kubectl/pkg/cmd/apply"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// What apply --prune deletes, and what it keeps: the members of the
// app's set no longer rendered, each asked of the ownership rule
// (inventory.Decide) and the guards of CRDs, Namespaces and owners.

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
