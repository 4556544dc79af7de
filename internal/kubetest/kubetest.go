// Package kubetest is an in-memory cluster for unit tests of the engines:
// a *kube.Client whose Dynamic, Metadata and Core clients are client-go's
// fakes (dynamic/fake, metadata/fake, the typed core/v1 fake, for reads)
// answered from one store by reactors that behave enough like an API
// server for apply, prune, inventory, diff and status. It is a test
// helper: production code never imports it, and the e2e suite on real API
// servers stays the proof.
//
// What it does as a server does: a server-side apply (types.ApplyPatchType)
// creates a missing object, in an existing namespace only, and merges into
// a present one through apimachinery's own field manager
// (serverside.FieldManager, shared with the stand-in server): managedFields
// for every write, a Conflict naming the other managers and fields unless
// forced, and the fields a manager applied before and no longer applies
// removed; creates, updates and merge patches are recorded for their
// field manager ("kubetest" when none is given), so a kubectl edit is a
// merge patch with FieldManager "kubectl-edit". Deployments are defaulted
// as kube-apiserver defaults them (serverside.Default). A create assigns a
// UID, and every write bumps the resourceVersion only when the stored
// object changed; dry runs (patch and delete) answer without persisting;
// a JSON merge patch (null removes) changes an existing object; delete
// removes, honouring its preconditions (uid, resourceVersion: Conflict when
// they do not hold), and a Namespace's or CRD's takes its contents along; a
// create of a served kind stores a new object (AlreadyExists when there is
// one, in an existing namespace only); an update replaces one, with
// optimistic concurrency (Conflict when its resourceVersion is not the
// stored one); lists answer from the same store through both clients,
// metadata lists as PartialObjectMetadata, and a metadata patch is
// answered through the dynamic fake (whose actions keep the patch's
// options); a CustomResourceDefinition is Established as soon as it is
// written.
//
// Its simplifications:
//   - The field manager deduces each kind's schema from the objects (as
//     for a CRD without one): lists are atomic, not merged by key.
//   - Put stores an object as given, without managedFields: its fields
//     are "before-first-apply"'s, as a server sees an object no manager
//     wrote; a test that needs an owner writes through Client.
//   - Defaulting covers Deployments only; there is no validation.
//   - Label selectors are honoured by the fakes themselves (their List
//     filters what the reactor returns); field selectors are not.
//   - The REST mapper is fixed: Reset does nothing, and a CRD written does
//     not add its kind.
//   - The fakes never see a request's context: a request with a cancelled
//     context is still answered, where a real client refuses to send it.
//     Tests of Ctrl-C count requests (Requests) instead.
//
// Faults (Inject) stand for what the fake cannot produce: Forbidden, an
// immutable field, a server that goes away, a Ctrl-C during a request.
package kubetest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	corev1fake "k8s.io/client-go/kubernetes/typed/core/v1/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv/serverside"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// ClusterPolicy is the cluster-scoped custom kind the mapper serves (an
// add-on's kind whose CRD another app installs).
var ClusterPolicy = schema.GroupVersionKind{Group: "policy.example.com", Version: "v1", Kind: "ClusterPolicy"}

// kinds are what the fake serves, and whether each is namespaced.
var kinds = []struct {
	gvk        schema.GroupVersionKind
	namespaced bool
}{
	{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, true},
	{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, true},
	{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, false},
	{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, true},
	{schema.GroupVersionKind{Version: "v1", Kind: "Endpoints"}, true},
	{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, true},
	{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}, true},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, true},
	{schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, true},
	{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, false},
	{ClusterPolicy, false},
	{schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}, false},
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Request is one request a client sent. Resource is the plural resource
// name ("configmaps"); Name is empty for lists, and Fields is a list's
// field selector ("" for none).
type Request struct {
	Verb, Resource, Namespace, Name string
	DryRun                          bool
	Fields                          string
}

// Fault makes matching requests fail with Err, as an API server (or RBAC)
// would. Empty Verb, Resource and Name match any. Nth counts the matching
// requests from the Inject call on: only the Nth fails (1 is the next);
// 0 fails every one. Hook, when set, runs as the fault fires (a Ctrl-C
// during that request: it must not call the Cluster); with a nil Err the
// request is then answered. Before, when set, holds every matching patch
// (of either client) until it is closed, before it reaches the fake
// (which answers one request at a time), so that other requests are
// answered meanwhile: what must happen before that patch.
type Fault struct {
	Verb, Resource, Name string
	Nth                  int
	Err                  error
	Hook                 func()
	Before               <-chan struct{}
	seen                 int
}

func (f *Fault) matches(r Request) bool {
	return (f.Verb == "" || f.Verb == r.Verb) && (f.Resource == "" || f.Resource == r.Resource) && (f.Name == "" || f.Name == r.Name)
}

// Cluster is the in-memory cluster. Client talks to it; Put, Live and
// Objects set up and inspect its state without counting as requests.
type Cluster struct {
	Client *kube.Client

	t       testing.TB
	mu      sync.Mutex
	objects map[key]*unstructured.Unstructured
	version int // the last resourceVersion given, as etcd's revision
	uids    int
	faults  []*Fault
	log     []Request
	dynamic *dynamicfake.FakeDynamicClient
}

// DynamicFake is the fake behind Client.Dynamic, for reactors of a test's
// own.
func (c *Cluster) DynamicFake() *dynamicfake.FakeDynamicClient { return c.dynamic }

type key struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

// resettable is a fixed mapper that satisfies meta.ResettableRESTMapper.
type resettable struct{ *meta.DefaultRESTMapper }

func (resettable) Reset() {}

// New returns an empty cluster (no namespaces either) whose client's
// default namespace is "default".
func New(t testing.TB) *Cluster {
	var versions []schema.GroupVersion // preferred, for mappings asked without one
	for _, k := range kinds {
		versions = append(versions, k.gvk.GroupVersion())
	}
	mapper := meta.NewDefaultRESTMapper(versions)
	listKinds := map[schema.GroupVersionResource]string{}
	for _, k := range kinds {
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		mapper.Add(k.gvk, scope)
		plural, _ := meta.UnsafeGuessKindToResource(k.gvk)
		listKinds[plural] = k.gvk.Kind + "List"
	}
	c := &Cluster{t: t, objects: map[key]*unstructured.Unstructured{}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := c.serve(a)
		return true, obj, err
	})
	md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	md.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := c.serve(a)
		if err != nil {
			return true, nil, err
		}
		return true, asMetadata(obj), nil
	})
	core := &corev1fake.FakeCoreV1{Fake: &clienttesting.Fake{}}
	core.AddReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := c.serve(a)
		if err != nil {
			return true, nil, err
		}
		obj, err = asTyped(obj, a.GetResource(), mapper)
		return true, obj, err
	})
	c.dynamic = dyn
	c.Client = &kube.Client{Mapper: resettable{mapper}, Dynamic: gated{dyn, c}, Metadata: gatedMetadata{md, c}, Lists: c.listsClient(), Core: core, Namespace: "default", Listable: func() ([]schema.GroupVersionResource, error) {
		var out []schema.GroupVersionResource
		for _, k := range kinds {
			if k.namespaced {
				m, err := mapper.RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
				if err != nil {
					return nil, err
				}
				out = append(out, m.Resource)
			}
		}
		return out, nil
	}}
	return c
}

// Inject adds a fault.
func (c *Cluster) Inject(f Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = append(c.faults, &f)
}

// Requests returns every request sent so far, by either client, in order.
func (c *Cluster) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.log...)
}

// Put stores objects as another client would have written them (created,
// or replaced keeping the UID), without admission checks: their namespace
// need not exist. Their kind must be served and a namespaced one must
// have a namespace; the test fails otherwise.
func (c *Cluster) Put(objs ...*unstructured.Unstructured) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range objs {
		k, err := c.keyOf(o)
		if err != nil {
			c.t.Fatalf("kubetest: %v", err)
		}
		content, err := roundTrip(o.Object)
		if err != nil {
			c.t.Fatalf("kubetest: %s: %v", o.GetName(), err)
		}
		c.write(k, &unstructured.Unstructured{Object: content}, false)
	}
}

// Remove deletes the stored object of o's kind, name and namespace, as
// another client would (not counted as a request).
func (c *Cluster) Remove(o *unstructured.Unstructured) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	k, err := c.keyOf(o)
	if err != nil {
		c.t.Fatalf("kubetest: %v", err)
	}
	delete(c.objects, k)
}

// Live returns a copy of the stored object of o's kind, name and (for
// namespaced kinds) namespace; nil if there is none.
func (c *Cluster) Live(o *unstructured.Unstructured) *unstructured.Unstructured {
	c.t.Helper()
	k, err := c.keyOf(o)
	if err != nil {
		c.t.Fatalf("kubetest: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.objects[k]; ok {
		return s.DeepCopy()
	}
	return nil
}

// Objects returns copies of every stored object, in a stable order.
func (c *Cluster) Objects() []*unstructured.Unstructured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.list(func(key) bool { return true })
}

// Object is an object of the given kind, namespace ("" for none) and name,
// for tests to fill in.
func Object(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	o.SetNamespace(namespace)
	o.SetName(name)
	return o
}

func (c *Cluster) keyOf(o *unstructured.Unstructured) (key, error) {
	gvk := o.GroupVersionKind()
	m, err := c.Client.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return key{}, err
	}
	k := key{gvr: m.Resource, name: o.GetName()}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() == "" {
			return key{}, fmt.Errorf("%s %s has no namespace", gvk.Kind, o.GetName())
		}
		k.namespace = o.GetNamespace()
	}
	return k, nil
}

// serve answers one request of either client from the store.
func (c *Cluster) serve(a clienttesting.Action) (runtime.Object, error) {
	gvr := a.GetResource()
	r := requestOf(a)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, r)
	if err := c.fault(r); err != nil {
		return nil, err
	}
	if a.GetSubresource() != "" {
		return nil, apierrors.NewMethodNotSupported(gvr.GroupResource(), r.Verb+" "+a.GetSubresource())
	}
	k := key{gvr: gvr, namespace: r.Namespace, name: r.Name}
	live := c.objects[k]
	switch a := a.(type) {
	case clienttesting.GetActionImpl:
		if live == nil {
			return nil, apierrors.NewNotFound(gvr.GroupResource(), r.Name)
		}
		return live.DeepCopy(), nil
	case clienttesting.ListActionImpl:
		// As a server: by name and namespace, and by labels.
		within := a.GetListRestrictions()
		items := c.list(func(s key) bool {
			return s.gvr == gvr && (r.Namespace == "" || s.namespace == r.Namespace) &&
				(within.Fields == nil || within.Fields.Matches(fields.Set{"metadata.name": s.name, "metadata.namespace": s.namespace}))
		})
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "List"}}
		list.SetResourceVersion(strconv.Itoa(c.version))
		for _, o := range items {
			if within.Labels == nil || within.Labels.Matches(labels.Set(o.GetLabels())) {
				list.Items = append(list.Items, *o)
			}
		}
		return list, nil
	case clienttesting.DeleteActionImpl:
		return nil, c.remove(k, r, live, a.DeleteOptions.Preconditions)
	case clienttesting.PatchActionImpl:
		return c.patch(k, r, live, a)
	case clienttesting.CreateActionImpl, clienttesting.UpdateActionImpl:
		return c.createOrUpdate(k, a, r, live)
	}
	return nil, apierrors.NewMethodNotSupported(gvr.GroupResource(), r.Verb)
}

// requestOf is what a request was, for the log and the faults.
func requestOf(a clienttesting.Action) Request {
	r := Request{Verb: a.GetVerb(), Resource: a.GetResource().Resource, Namespace: a.GetNamespace()}
	if named, ok := a.(interface{ GetName() string }); ok {
		r.Name = named.GetName()
	}
	switch a := a.(type) {
	case clienttesting.PatchActionImpl:
		r.DryRun = len(a.PatchOptions.DryRun) > 0
	case clienttesting.DeleteActionImpl:
		r.DryRun = len(a.DeleteOptions.DryRun) > 0
	case clienttesting.CreateActionImpl:
		r.Name, r.DryRun = objectName(a.Object), len(a.CreateOptions.DryRun) > 0
	case clienttesting.UpdateActionImpl:
		r.Name, r.DryRun = objectName(a.Object), len(a.UpdateOptions.DryRun) > 0
	case clienttesting.ListActionImpl:
		if sel := a.GetListRestrictions().Fields; sel != nil && !sel.Empty() {
			r.Fields = sel.String()
		}
	}
	return r
}

// gated is the Dynamic client, whose patches wait for the faults' Before
// first.
type gated struct {
	dynamic.Interface
	c *Cluster
}

type gatedResource struct {
	dynamic.NamespaceableResourceInterface
	c   *Cluster
	gvr schema.GroupVersionResource
}

type gatedNamespace struct {
	dynamic.ResourceInterface
	c   *Cluster
	gvr schema.GroupVersionResource
	ns  string
}

func (g gated) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return gatedResource{g.Interface.Resource(gvr), g.c, gvr}
}

func (r gatedResource) Namespace(ns string) dynamic.ResourceInterface {
	return gatedNamespace{r.NamespaceableResourceInterface.Namespace(ns), r.c, r.gvr, ns}
}

func (r gatedResource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
	r.c.before(Request{Verb: "patch", Resource: r.gvr.Resource, Name: name})
	return r.NamespaceableResourceInterface.Patch(ctx, name, pt, data, opts, sub...)
}

func (r gatedNamespace) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
	r.c.before(Request{Verb: "patch", Resource: r.gvr.Resource, Namespace: r.ns, Name: name})
	return r.ResourceInterface.Patch(ctx, name, pt, data, opts, sub...)
}

// gatedMetadata is the Metadata client, whose patches wait for the
// faults' Before first.
type gatedMetadata struct {
	metadata.Interface
	c *Cluster
}

type gatedGetter struct {
	metadata.Getter
	c   *Cluster
	gvr schema.GroupVersionResource
}

type gatedMetadataNamespace struct {
	metadata.ResourceInterface
	c   *Cluster
	gvr schema.GroupVersionResource
	ns  string
}

func (g gatedMetadata) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return gatedGetter{g.Interface.Resource(gvr), g.c, gvr}
}

func (r gatedGetter) Namespace(ns string) metadata.ResourceInterface {
	return gatedMetadataNamespace{r.Getter.Namespace(ns), r.c, r.gvr, ns}
}

// A metadata patch goes through the Dynamic fake, whose actions carry
// the patch's options (its field manager, force, dry run): the Metadata
// fake's drop them. It answers the object's metadata, as a server does.
func (r gatedGetter) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	r.c.before(Request{Verb: "patch", Resource: r.gvr.Resource, Name: name})
	return partial(r.c.dynamic.Resource(r.gvr).Patch(ctx, name, pt, data, opts, sub...))
}

func (r gatedMetadataNamespace) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	r.c.before(Request{Verb: "patch", Resource: r.gvr.Resource, Namespace: r.ns, Name: name})
	return partial(r.c.dynamic.Resource(r.gvr).Namespace(r.ns).Patch(ctx, name, pt, data, opts, sub...))
}

// partial is an object's metadata, as a metadata client reads it.
func partial(u *unstructured.Unstructured, err error) (*metav1.PartialObjectMetadata, error) {
	if err != nil {
		return nil, err
	}
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
	md, _ := u.Object["metadata"].(map[string]any)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &m.ObjectMeta); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return m, nil
}

// before holds r until the Before of every fault that matches it is
// closed.
func (c *Cluster) before(r Request) {
	c.mu.Lock()
	var waits []<-chan struct{}
	for _, f := range c.faults {
		if f.Before != nil && f.matches(r) {
			waits = append(waits, f.Before)
		}
	}
	c.mu.Unlock()
	for _, w := range waits {
		<-w
	}
}

// fault fires the faults that match r, and returns the error of the
// first that has one.
func (c *Cluster) fault(r Request) error {
	for _, f := range c.faults {
		if f.matches(r) {
			if f.seen++; f.Nth != 0 && f.seen != f.Nth {
				continue
			}
			if f.Hook != nil {
				f.Hook()
			}
			if f.Err != nil {
				return f.Err
			}
		}
	}
	return nil
}

// remove answers a delete, with its uid and resourceVersion
// preconditions.
func (c *Cluster) remove(k key, r Request, live *unstructured.Unstructured, pre *metav1.Preconditions) error {
	gr := k.gvr.GroupResource()
	if live == nil {
		return apierrors.NewNotFound(gr, r.Name)
	}
	if pre != nil {
		if pre.UID != nil && *pre.UID != live.GetUID() {
			return apierrors.NewConflict(gr, r.Name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", *pre.UID, live.GetUID()))
		}
		if pre.ResourceVersion != nil && *pre.ResourceVersion != live.GetResourceVersion() {
			return apierrors.NewConflict(gr, r.Name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", *pre.ResourceVersion, live.GetResourceVersion()))
		}
	}
	if !r.DryRun {
		delete(c.objects, k)
		c.cascade(k, live)
	}
	return nil
}

// cascade deletes what a deleted object takes along on a server: a
// Namespace everything in it (the namespace controller's work, done at
// once here), a CRD every custom resource of its kind.
func (c *Cluster) cascade(k key, live *unstructured.Unstructured) {
	group, _, _ := unstructured.NestedString(live.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(live.Object, "spec", "names", "plural")
	for other := range c.objects {
		switch {
		case k.gvr == namespacesGVR && other.namespace == k.name,
			k.gvr.Resource == "customresourcedefinitions" && other.gvr.Group == group && other.gvr.Resource == plural:
			delete(c.objects, other)
		}
	}
}

// patch answers a server-side apply or a merge patch through
// apimachinery's own field manager (serverside.FieldManager), as a server
// does: managedFields, a Conflict naming the other manager and its
// fields (unless forced), and the fields the same manager applied before
// and no longer applies removed.
func (c *Cluster) patch(k key, r Request, live *unstructured.Unstructured, a clienttesting.PatchActionImpl) (runtime.Object, error) {
	var patch map[string]any
	if err := utiljson.Unmarshal(a.Patch, &patch); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	// A resourceVersion in the patch is a precondition, as a server takes
	// it (an apply's too), and a uid another object's is refused.
	if md, ok := patch["metadata"].(map[string]any); ok && live != nil {
		if rv, _ := md["resourceVersion"].(string); rv != "" && rv != live.GetResourceVersion() {
			return nil, apierrors.NewConflict(k.gvr.GroupResource(), r.Name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		if uid, _ := md["uid"].(string); uid != "" && types.UID(uid) != live.GetUID() {
			return nil, apierrors.NewConflict(k.gvr.GroupResource(), r.Name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, live.GetUID()))
		}
	}
	gvk, fm, err := c.fieldManager(k, r)
	if err != nil {
		return nil, err
	}
	manager := a.PatchOptions.FieldManager
	var next runtime.Object
	switch a.PatchType {
	case types.ApplyPatchType:
		if live == nil && r.Namespace != "" && c.objects[key{gvr: namespacesGVR, name: r.Namespace}] == nil {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, r.Namespace)
		}
		base := live
		if base == nil {
			base = empty(gvk, r.Namespace, r.Name)
		}
		applied := &unstructured.Unstructured{Object: without(patch, "uid", "resourceVersion", "creationTimestamp", "managedFields")}
		delete(applied.Object, "status")
		if next, err = fm.Apply(base.DeepCopy(), applied, manager, ptr.Deref(a.PatchOptions.Force, false)); err != nil {
			return nil, err
		}
	case types.MergePatchType:
		if live == nil {
			return nil, apierrors.NewNotFound(k.gvr.GroupResource(), r.Name)
		}
		merged := live.DeepCopy()
		merge(merged.Object, patch)
		next = fm.UpdateNoErrors(live.DeepCopy(), merged, manager)
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("kubetest: patch type %s is not supported", a.PatchType))
	}
	obj := next.(*unstructured.Unstructured)
	obj.SetName(r.Name)
	obj.SetNamespace(r.Namespace)
	return c.write(k, obj, r.DryRun), nil
}

// empty is the object a server-side apply creates, before it is applied.
func empty(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// createOrUpdate answers a create or an update of a served kind: a create
// stores a new object where there is none (in an existing namespace), an
// update replaces the stored one when its resourceVersion, if given, is
// the stored one's.
func (c *Cluster) createOrUpdate(k key, a clienttesting.Action, r Request, live *unstructured.Unstructured) (runtime.Object, error) {
	gr := k.gvr.GroupResource()
	if !c.serves(k.gvr) {
		return nil, apierrors.NewMethodNotSupported(gr, r.Verb)
	}
	u, ok := asUnstructured(a.(interface{ GetObject() runtime.Object }).GetObject(), k.gvr, c.Client.Mapper)
	if !ok || r.Name == "" {
		return nil, apierrors.NewBadRequest("kubetest: a create or update needs an unstructured object with a name")
	}
	content, err := roundTrip(u.Object)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj := &unstructured.Unstructured{Object: content}
	obj.SetNamespace(r.Namespace)
	obj.SetManagedFields(nil) // the server's
	if obj, err = c.managed(k, a, r, live, obj); err != nil {
		return nil, err
	}
	if r.Verb == "create" {
		switch {
		case live != nil:
			return nil, apierrors.NewAlreadyExists(gr, r.Name)
		case r.Namespace != "" && c.objects[key{gvr: namespacesGVR, name: r.Namespace}] == nil:
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, r.Namespace)
		}
		without(obj.Object, "uid", "resourceVersion", "creationTimestamp")
		return c.write(k, obj, r.DryRun), nil
	}
	if live == nil {
		return nil, apierrors.NewNotFound(gr, r.Name)
	}
	if rv := obj.GetResourceVersion(); rv != "" && rv != live.GetResourceVersion() {
		return nil, apierrors.NewConflict(gr, r.Name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return c.write(k, obj, r.DryRun), nil
}

// fieldManager is the kind of k and its field manager.
func (c *Cluster) fieldManager(k key, r Request) (schema.GroupVersionKind, *managedfields.FieldManager, error) {
	gvk, err := c.Client.Mapper.KindFor(k.gvr)
	if err != nil {
		return gvk, nil, apierrors.NewNotFound(k.gvr.GroupResource(), r.Name)
	}
	fm, err := serverside.FieldManager(gvk)
	return gvk, fm, err
}

// managed is obj, created or updated over live, with the managedFields
// a server records for the request's field manager (its options', else
// "kubetest").
func (c *Cluster) managed(k key, a clienttesting.Action, r Request, live, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk, fm, err := c.fieldManager(k, r)
	if err != nil {
		return nil, err
	}
	manager := "kubetest"
	switch a := a.(type) {
	case clienttesting.CreateActionImpl:
		manager = cmp.Or(a.CreateOptions.FieldManager, manager)
	case clienttesting.UpdateActionImpl:
		manager = cmp.Or(a.UpdateOptions.FieldManager, manager)
	}
	base := live
	if base == nil {
		base = empty(gvk, r.Namespace, r.Name)
	}
	obj.SetGroupVersionKind(gvk)
	return fm.UpdateNoErrors(base.DeepCopy(), obj, manager).(*unstructured.Unstructured), nil
}

// serves reports whether the mapper knows the resource.
func (c *Cluster) serves(gvr schema.GroupVersionResource) bool {
	_, err := c.Client.Mapper.KindFor(gvr)
	return err == nil
}

// objectName is the name of a request's object, or "".
func objectName(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetName()
	}
	return ""
}

// write stores obj under k (unless dryRun) as a server would: a new object
// gets a UID and a creation time, and the resourceVersion moves only when
// the object changed. It returns a copy of what is (or would be) stored.
func (c *Cluster) write(k key, obj *unstructured.Unstructured, dryRun bool) *unstructured.Unstructured {
	live := c.objects[k]
	serverside.Default(k.gvr.GroupResource(), obj.Object)
	if k.gvr.Resource == "customresourcedefinitions" {
		_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"type": "Established", "status": "True"}}, "status", "conditions")
	}
	if live == nil {
		c.uids++
		obj.SetUID(types.UID(fmt.Sprintf("uid-%d", c.uids)))
		obj.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	} else {
		obj.SetUID(live.GetUID())
		obj.SetCreationTimestamp(live.GetCreationTimestamp())
		obj.SetResourceVersion(live.GetResourceVersion())
		if reflect.DeepEqual(obj.Object, live.Object) {
			return obj.DeepCopy()
		}
	}
	if dryRun {
		return obj.DeepCopy()
	}
	c.version++
	obj.SetResourceVersion(strconv.Itoa(c.version))
	c.objects[k] = obj
	return obj.DeepCopy()
}

// list returns copies of the stored objects whose keys match, in order.
func (c *Cluster) list(match func(key) bool) []*unstructured.Unstructured {
	var keys []key
	for k := range c.objects {
		if match(k) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j])
	})
	out := make([]*unstructured.Unstructured, len(keys))
	for i, k := range keys {
		out[i] = c.objects[k].DeepCopy()
	}
	return out
}

// merge merges src into dst: maps recursively, a null removes the key
// (JSON merge patch), any other value replaces.
func merge(dst, src map[string]any) {
	for k, v := range src {
		sub, isMap := v.(map[string]any)
		switch {
		case v == nil:
			delete(dst, k)
		case isMap:
			d, ok := dst[k].(map[string]any)
			if !ok {
				d = map[string]any{}
				dst[k] = d
			}
			merge(d, sub)
		default:
			dst[k] = v
		}
	}
}

// without drops server-owned metadata fields from an applied object.
func without(obj map[string]any, fields ...string) map[string]any {
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, f := range fields {
			delete(md, f)
		}
	}
	return obj
}

// roundTrip copies an object through JSON, so that numbers are int64 or
// float64 as a decoded response's are.
func roundTrip(obj map[string]any) (map[string]any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, utiljson.Unmarshal(b, &out)
}

// asUnstructured is what the Core client sends (a typed object) as the
// store keeps it, with the kind of gvr; an unstructured object as it is.
func asUnstructured(obj runtime.Object, gvr schema.GroupVersionResource, mapper meta.RESTMapper) (*unstructured.Unstructured, bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, true
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil || obj == nil {
		return nil, false
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, false
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u, true
}

// asTyped is the typed object (or list) the Core client reads of what the
// store answered for gvr.
func asTyped(obj runtime.Object, gvr schema.GroupVersionResource, mapper meta.RESTMapper) (runtime.Object, error) {
	u, ok := obj.(runtime.Unstructured)
	if !ok {
		return obj, nil
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return nil, err
	}
	if _, list := obj.(*unstructured.UnstructuredList); list {
		gvk.Kind += "List"
	}
	typed, err := kubescheme.Scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("kubetest: the Core client reads no %s: %w", gvk, err)
	}
	return typed, runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), typed)
}

// asMetadata turns what serve returned into the metadata client's types.
func asMetadata(obj runtime.Object) runtime.Object {
	toPartial := func(u *unstructured.Unstructured) *metav1.PartialObjectMetadata {
		p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object["metadata"].(map[string]any), &p.ObjectMeta)
		return p
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return toPartial(o)
	case *unstructured.UnstructuredList:
		list := &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: o.GetResourceVersion()}}
		for i := range o.Items {
			list.Items = append(list.Items, runtime.RawExtension{Object: toPartial(&o.Items[i])})
		}
		return list
	}
	return obj
}
