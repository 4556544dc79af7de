package inventory

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

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// Guard is what the ownership rule (Neighbours.Decide) cannot see in the
// records, read on the cluster before a member is deleted: a Namespace
// that holds objects the prune does not delete, a CRD whose custom
// resources would go with it. Apply's prune asks it before each delete,
// and diff before it predicts one, so that both say the same.
type Guard struct {
	Client *kube.Client
	// App is the app whose members are pruned.
	App string

	mu     sync.Mutex
	doomed sets.Set[types.UID]
	// services are the doomed Services, "namespace/name": the endpoints
	// controller deletes their Endpoints with them.
	services sets.Set[string]
}

// NewGuard is the guard of a prune of app that means to delete doomed:
// what is in a doomed Namespace, or of a doomed CRD, and doomed itself
// does not count as remaining.
func NewGuard(c *kube.Client, app string, doomed []*unstructured.Unstructured) *Guard {
	g := &Guard{Client: c, App: app, doomed: sets.New[types.UID](), services: sets.New[string]()}
	for _, m := range doomed {
		g.doomed.Insert(m.GetUID())
		if m.GetKind() == "Service" && m.GetAPIVersion() == "v1" {
			g.services.Insert(m.GetNamespace() + "/" + m.GetName())
		}
	}
	return g
}

// Spare says m is not deleted after all (kept, or its delete failed): it
// counts as remaining from now on.
func (g *Guard) Spare(m *unstructured.Unstructured) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.doomed.Delete(m.GetUID())
	if m.GetKind() == "Service" && m.GetAPIVersion() == "v1" {
		g.services.Delete(m.GetNamespace() + "/" + m.GetName())
	}
}

func (g *Guard) dooms(uid types.UID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.doomed.Has(uid)
}

// Check is d for m once the cluster is read where a delete would take
// more along: a Namespace holding objects no app owns, a CRD with custom
// resources this prune does not delete, is kept (prune: always aside).
// unread, when not "", is why that could not be read: m is retained.
func (g *Guard) Check(ctx context.Context, m *unstructured.Unstructured, d Decision) (_ Decision, unread string) {
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
		others, err = g.foreignIn(ctx, m.GetName())
		what = "what it holds could not be listed"
	case m.GetKind() == "CustomResourceDefinition":
		// Deleting a CRD deletes every custom resource of its kind, the
		// app's or not.
		others, err = g.customResources(ctx, m)
		what = "its custom resources could not be counted"
	}
	switch {
	case err != nil:
		return d, fmt.Sprintf("not deleted: %s (%v); left in app %s", what, err, g.App)
	case others != "":
		return Decision{Reason: "not deleted: " + others + "; left in place, no longer the app's"}, ""
	}
	return d, ""
}

// customResources says how many custom resources of crd's kind the
// cluster has that this prune does not delete, and in how many
// namespaces ("3 custom resources in 2 namespaces"); "" for none.
func (g *Guard) customResources(ctx context.Context, crd *unstructured.Unstructured) (string, error) {
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
	list, err := g.Client.Metadata.Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: plural}).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	}
	n, namespaces := 0, sets.New[string]()
	for _, item := range list.Items {
		if !g.dooms(item.GetUID()) {
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
// ServiceAccount, kube-root-ca.crt, Events, metrics, the Endpoints the
// endpoints controller keeps, or deletes with their Service) does not
// count, nor an object whose owner is in the namespace (the owner
// counts) or is deleted by this prune. Endpoints of no Service are someone's data (a
// Service with no selector): they count. It fails closed: a resource that
// cannot be listed (forbidden, discovery failed) is an error, and the
// Namespace is kept.
func (g *Guard) foreignIn(ctx context.Context, ns string) (string, error) {
	items, err := g.listIn(ctx, ns)
	if err != nil {
		return "", err
	}
	present, services := sets.New[types.UID](), sets.New[string]()
	for _, it := range items {
		present.Insert(it.uid)
		if name, ok := strings.CutPrefix(it.ref, "services/"); ok {
			services.Insert(name)
		}
	}
	var foreign []string
	for _, it := range items {
		if name, ok := strings.CutPrefix(it.ref, "endpoints/"); ok && (it.mirror || services.Has(name) || g.services.Has(ns+"/"+name)) {
			continue // its Service's: the Service counts, or goes with the prune
		}
		if g.dooms(it.uid) || slices.ContainsFunc(it.owners, func(o metav1.OwnerReference) bool { return present.Has(o.UID) || g.dooms(o.UID) }) {
			continue
		}
		if len(it.owners) > 0 {
			// Owned from outside the namespace, or by an owner gone:
			// garbage the collector deletes once every owner is gone
			// (a Deployment's Pod whose ReplicaSet went first).
			gone, err := g.ownersGone(ctx, ns, it.owners)
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

// nsItem is an object listed in a namespace, as foreignIn judges it.
type nsItem struct {
	ref    string // "configmaps/x"
	uid    types.UID
	owners []metav1.OwnerReference
	// mirror: Endpoints the endpoints controller says it keeps.
	mirror bool
}

// listIn lists everything namespace ns holds, one metadata list per kind
// the cluster serves (8 at once), but what the cluster makes in every
// namespace and mirrors of what is there (Events, metrics). A kind that
// cannot be listed is an error.
func (g *Guard) listIn(ctx context.Context, ns string) ([]nsItem, error) {
	if g.Client.Listable == nil {
		return nil, errors.New("the cluster's resources cannot be discovered")
	}
	resources, err := g.Client.Listable()
	if err != nil {
		return nil, err
	}
	var (
		mu    sync.Mutex
		items []nsItem
		lists errgroup.Group
	)
	lists.SetLimit(8)
	for _, gvr := range resources {
		if gvr.Resource == "events" || gvr.Group == "metrics.k8s.io" {
			continue // mirrors of what is there, made by the cluster
		}
		lists.Go(func() error {
			list, err := g.Client.Metadata.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
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
					mirror := gvr.Resource == "endpoints" && gvr.Group == "" && it.GetLabels()[endpointsManagedBy] == endpointsController
					items = append(items, nsItem{strings.ToLower(gvr.Resource) + "/" + it.GetName(), it.GetUID(), it.GetOwnerReferences(), mirror})
				}
			}
			return nil
		})
	}
	if err := lists.Wait(); err != nil {
		return nil, err
	}
	return items, nil
}

// ownersGone reports whether every owner an object in namespace ns
// names is gone (not found, or another object under its name): the
// garbage collector then deletes the object. An owner that cannot be
// read is an error.
func (g *Guard) ownersGone(ctx context.Context, ns string, owners []metav1.OwnerReference) (bool, error) {
	for _, o := range owners {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			return false, err
		}
		m, err := g.Client.MappingFor(gv.WithKind(o.Kind).GroupKind())
		if meta.IsNoMatchError(err) {
			continue // its kind is no longer served: it is gone
		} else if err != nil {
			return false, err
		}
		ri := g.Client.Metadata.Resource(m.Resource)
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

// The label the endpoints controller puts on the Endpoints it keeps
// (k8s.io/kubernetes pkg/controller/endpoint).
const (
	endpointsManagedBy  = "endpoints.kubernetes.io/managed-by"
	endpointsController = "endpoint-controller"
)

// clusterMade reports whether the cluster itself puts an object in every
// namespace.
func clusterMade(resource, name string) bool {
	return resource == "serviceaccounts" && name == "default" || resource == "configmaps" && name == "kube-root-ca.crt"
}
