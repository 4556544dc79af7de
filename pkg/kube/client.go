package kube

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	kubectlapply "k8s.io/kubectl/pkg/cmd/apply"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/memo"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

// Client talks to one cluster through its own ConfigFlags: its own REST
// config and discovery cache (kubectl's, on disk under --cache-dir),
// never shared with another cluster. Its REST mapper is built from its
// own discovery and shared only with clusters whose discovery is the
// same, byte for byte (sharedMapper).
type Client struct {
	http *http.Client
	// Flags are the cluster's own connection flags, read through the
	// process's cache of parsed kubeconfigs (Getter).
	Flags genericclioptions.RESTClientGetter
	// Config is the REST config the flags give.
	Config *rest.Config
	// Mapper maps kinds to resources; Reset forgets what it learnt, after
	// new CRDs are established.
	Mapper meta.ResettableRESTMapper
	// Dynamic reads and writes any object.
	Dynamic dynamic.Interface
	// Metadata lists objects' metadata only.
	Metadata metadata.Interface
	// Lists reads a list's items as they arrive (ListEach): a REST
	// client of JSON (NewListsClient).
	Lists rest.Interface
	// Core reads built-in core objects whole, in protobuf: about a
	// quarter of JSON's cost to decode (and less for the server to
	// encode), for what is read on every run, such as the apps' parents.
	Core corev1client.CoreV1Interface
	// Namespace is the one namespaced objects without one go to: -n, else
	// the context's, else "default", as kubectl does.
	Namespace string
	// Listable returns the namespaced resources the cluster serves and
	// lets list (from discovery): what a namespace may hold.
	Listable func() ([]schema.GroupVersionResource, error)
	// DigestKey is the cluster's digest key (package digest), read once.
	DigestKey Cached[[]byte]
	// aggregated are the group versions other servers serve behind this
	// one (APIServices with a service), read once.
	aggregated Cached[map[schema.GroupVersion]bool]
	// slowest is the longest a request took to be answered (Slowest).
	slowest *slowest
}

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// Aggregated reports whether gv is served by an aggregated API server (an
// APIService backed by a service, like metrics.k8s.io) rather than by the
// cluster's API server from etcd: such a server's resourceVersions need
// not move when its objects change, so nothing of it is skipped as
// unchanged. The core group never is. A user who may not list
// APIServices gets false for every group: CRDs, the common case, are
// served from etcd.
func (c *Client) Aggregated(ctx context.Context, gv schema.GroupVersion) bool {
	return MayBeAggregated(gv.Group) && c.AggregatedAPIs(ctx)[gv]
}

// MayBeAggregated reports whether group may be served by an aggregated API
// server: not the core group nor Kubernetes' own groups (those client-go
// knows), which the API server serves itself (its APIServices for them
// are its own, and kept so).
func MayBeAggregated(group string) bool {
	return group != "" && !kubescheme.Scheme.IsGroupRegistered(group)
}

// AnyAggregated reports whether any of objs may be served by an
// aggregated API server (MayBeAggregated): only then is AggregatedAPIs
// worth reading.
func AnyAggregated(objs []*unstructured.Unstructured) bool {
	return slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool {
		return MayBeAggregated(o.GroupVersionKind().Group)
	})
}

// AggregatedAPIs are the group versions aggregated API servers serve
// (Aggregated), listed once per client.
func (c *Client) AggregatedAPIs(ctx context.Context) map[schema.GroupVersion]bool {
	m, _ := c.aggregated.Get(func() (map[schema.GroupVersion]bool, error) {
		out := map[schema.GroupVersion]bool{}
		list, err := c.Dynamic.Resource(apiServicesGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return out, nil // unknown: every group treated as served from etcd
		}
		for _, item := range list.Items {
			if svc, _, _ := unstructured.NestedMap(item.Object, "spec", "service"); svc != nil {
				group, _, _ := unstructured.NestedString(item.Object, "spec", "group")
				version, _, _ := unstructured.NestedString(item.Object, "spec", "version")
				out[schema.GroupVersion{Group: group, Version: version}] = true
			}
		}
		return out, nil
	})
	return m
}

// Cached is a value read from a cluster once per client: concurrent
// callers wait for the first read; a failed read is tried again.
type Cached[T any] struct {
	mu  sync.Mutex
	ok  bool
	val T
}

// Get returns the value, reading it with read the first time.
func (c *Cached[T]) Get(read func() (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok {
		return c.val, nil
	}
	v, err := read()
	if err == nil {
		c.ok, c.val = true, v
	}
	return v, err
}

// Peek returns the value and true once read, without reading it.
func (c *Cached[T]) Peek() (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.val, c.ok
}

// Set replaces the value (one this client just wrote).
func (c *Cached[T]) Set(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ok, c.val = true, v
}

// DefaultRequestTimeout bounds each request to a cluster when
// --request-timeout is not given (or is 0), so that a server that accepts
// connections and never answers cannot hang a command: the API server's
// own bound on a request (its --request-timeout) is one minute too.
const DefaultRequestTimeout = time.Minute

// NewClient builds the client of one cluster. Every request it makes
// (discovery, reads, writes, identity checks) is bounded by the flags'
// --request-timeout, else by DefaultRequestTimeout.
func NewClient(flags *genericclioptions.ConfigFlags) (*Client, error) {
	if flags.Timeout == nil || *flags.Timeout == "" || *flags.Timeout == "0" {
		timeout := DefaultRequestTimeout.String()
		flags.Timeout = &timeout
	}
	getter := NewGetter(flags)
	cfg, err := getter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	// Objects of a cluster are applied concurrently: allow it.
	cfg.QPS, cfg.Burst = 100, 200
	slow := &slowest{}
	cfg.Wrap(slow.wrap)          // timed inside the gate: its wait is not the cluster's
	cfg.Wrap(newConnGate().wrap) // one gate for every client made from cfg
	mapper, err := getter.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	resettable, ok := mapper.(meta.ResettableRESTMapper)
	if !ok {
		return nil, fmt.Errorf("the REST mapper cannot be reset")
	}
	// One HTTP client (one connection) for reads and writes alike, which
	// CloseIdleConnections closes once the cluster's work is over.
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	withDeadline(hc)
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	lists, err := NewListsClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	pb := rest.CopyConfig(cfg)
	pb.ContentType, pb.AcceptContentTypes = runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON
	core, err := corev1client.NewForConfigAndClient(pb, hc)
	if err != nil {
		return nil, err
	}
	ns, _, err := getter.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	return &Client{http: hc, slowest: slow, Flags: getter, Config: cfg, Mapper: resettable, Dynamic: dyn, Metadata: md, Lists: lists, Core: core, Namespace: ns, Listable: func() ([]schema.GroupVersionResource, error) {
		return listable(getter)
	}}, nil
}

// CloseIdleConnections closes the client's connections that no request
// uses, once the cluster's work is over: a fleet of N clusters does not
// keep N connections, and their goroutines, open until the command ends.
// A later request connects again.
func (c *Client) CloseIdleConnections() {
	if c.http != nil {
		// Through client-go's wrappers (auth, user agent) to the transport.
		utilnet.CloseIdleConnectionsFor(c.http.Transport)
	}
	if g, ok := c.Flags.(*Getter); ok {
		g.closeIdle()
	}
}

// EnsureNamespace creates the namespace name, if missing, with
// server-side apply: the kubectl-fleet namespace the inventories, locks,
// revisions and digest key live in.
func (c *Client) EnsureNamespace(ctx context.Context, name, fieldManager string) error {
	data := []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `"}}`)
	force := true
	_, err := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	return err
}

// Capabilities reads what the cluster serves, as helm reads it for a
// chart's .Capabilities: the server's version, and every group version
// and group/version/Kind of its discovery (groups whose discovery failed
// are left out).
func (c *Client) Capabilities() (kubeVersion string, apiVersions []string, err error) {
	dc, err := c.Flags.ToDiscoveryClient()
	if err != nil {
		return "", nil, err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return "", nil, fmt.Errorf("reading the server's version: %w", err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return "", nil, fmt.Errorf("reading the server's API versions: %w", err)
	}
	for _, l := range lists {
		apiVersions = append(apiVersions, l.GroupVersion)
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				apiVersions = append(apiVersions, l.GroupVersion+"/"+r.Kind)
			}
		}
	}
	slices.Sort(apiVersions)
	return v.GitVersion, slices.Compact(apiVersions), nil
}

// listable asks discovery for the namespaced resources that can be
// listed; groups whose discovery failed (an aggregated API that is down)
// are left out.
func listable(flags genericclioptions.RESTClientGetter) ([]schema.GroupVersionResource, error) {
	dc, err := flags.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	// Fresh, not the discovery cached on disk for hours: a CRD installed
	// since is listed too. A group whose discovery failed is an error,
	// not a group with nothing in it (what is listed decides a delete).
	dc.Invalidate()
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil {
		return nil, fmt.Errorf("discovering the cluster's resources: %w", err)
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if slices.Contains(r.Verbs, "list") && !strings.Contains(r.Name, "/") {
				out = append(out, gv.WithResource(r.Name))
			}
		}
	}
	return out, nil
}

// Resource returns the client for an object's resource, namespaced when its
// kind is, and the mapping.
func (c *Client) Resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	gvk := obj.GroupVersionKind()
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource).Namespace(obj.GetNamespace()), m, nil
	}
	return c.Dynamic.Resource(m.Resource), m, nil
}

// MappingFor maps a group kind to its preferred resource.
func (c *Client) MappingFor(gk schema.GroupKind) (*meta.RESTMapping, error) {
	m, err := c.Mapper.RESTMapping(gk)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gk, err)
	}
	return m, nil
}

// Reachable asks the cluster for its version: the first request of a
// command run with --skip-unreachable, bounded like every request.
func (c *Client) Reachable() error {
	d, err := c.version()
	if err != nil {
		return err
	}
	_, err = d.ServerVersion()
	return err
}

// version asks the cluster's version over the client's own connection
// (not the discovery cached on disk).
func (c *Client) version() (discovery.ServerVersionInterface, error) {
	return discovery.NewDiscoveryClientForConfigAndClient(c.Config, c.http)
}

// VerifyIdentity checks, before any write, that the cluster's context still
// points at the pinned server and cluster UID. Empty pins are not checked.
func (c *Client) VerifyIdentity(ctx context.Context, pinServer, pinUID string) error {
	if pinServer == "" && pinUID == "" {
		return nil
	}
	v, err := c.version()
	if err != nil {
		return err
	}
	p := probe(ctx, c.Config.Host, v, c.Core, pinServer, pinUID)
	if len(p.Problems) > 0 {
		return fmt.Errorf("identity check failed, nothing read or written: %s", p.Problems[0])
	}
	return nil
}

// ApplyOptions tune one server-side apply.
type ApplyOptions struct {
	// FieldManager owns the applied fields.
	FieldManager string
	// Force takes fields over from other field managers on conflict.
	Force bool
	// DryRun asks the server to do everything but persist.
	DryRun bool
	// Prepare, when set, may change the object Apply sends once the live
	// one (nil if none) has been read.
	Prepare func(obj, live *unstructured.Unstructured)
}

// Scope puts obj in the scope the cluster's REST mapping gives its kind,
// which only the cluster knows for certain: a cluster-scoped object loses
// any namespace the render guessed, and a namespaced object without one
// gets the context's namespace, as kubectl does. It returns the object's
// resource client and mapping.
func (c *Client) Scope(obj *unstructured.Unstructured) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	return c.scope(obj, (*unstructured.Unstructured).SetNamespace)
}

// ScopeShared is Scope for obj whose maps it shares with others (a shell
// over a render's object, which is read, never written): when its
// namespace changes, its root and metadata become its own first
// (object.InNamespace).
func (c *Client) ScopeShared(obj *unstructured.Unstructured) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	return c.scope(obj, object.InNamespace)
}

// scope is Scope, moving obj to another namespace with move.
func (c *Client) scope(obj *unstructured.Unstructured, move func(*unstructured.Unstructured, string)) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	ri, m, err := c.Resource(obj)
	if err != nil {
		return nil, nil, err
	}
	if ns := c.namespaceIn(m, obj); ns != obj.GetNamespace() {
		move(obj, ns)
		if ns != "" {
			ri = c.Dynamic.Resource(m.Resource).Namespace(ns)
		}
	}
	return ri, m, nil
}

// namespaceIn is obj's namespace in the scope of its mapping m: none for a
// cluster-scoped kind, the context's for a namespaced object without one.
func (c *Client) namespaceIn(m *meta.RESTMapping, obj *unstructured.Unstructured) string {
	switch ns := obj.GetNamespace(); {
	case m.Scope.Name() != meta.RESTScopeNameNamespace:
		return ""
	case ns == "":
		return c.Namespace
	default:
		return ns
	}
}

// Apply server-side applies obj and returns the object as it was before
// (nil if it did not exist) and as the server returned it, after putting
// obj in its scope (Scope).
func (c *Client) Apply(ctx context.Context, obj *unstructured.Unstructured, o ApplyOptions) (before, after *unstructured.Unstructured, err error) {
	ri, _, err := c.Scope(obj)
	if err != nil {
		return nil, nil, err
	}
	before, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		before, err = nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if o.Prepare != nil {
		o.Prepare(obj, before)
	}
	after, err = c.Patch(ctx, ri, obj, o)
	return before, after, err
}

// Patch server-side applies obj through ri, without reading it first.
func (c *Client) Patch(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, o ApplyOptions) (*unstructured.Unstructured, error) {
	data, po, err := o.patch(obj)
	if err != nil {
		return nil, err
	}
	return ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, po)
}

// patch is obj's server-side apply request: its body and options.
func (o ApplyOptions) patch(obj *unstructured.Unstructured) ([]byte, metav1.PatchOptions, error) {
	po := metav1.PatchOptions{FieldManager: o.FieldManager, Force: &o.Force}
	if o.DryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	data, err := obj.MarshalJSON()
	return data, po, err
}

// metadataOf is the metadata client of m's resource, in namespace when m
// is namespaced.
func (c *Client) metadataOf(m *meta.RESTMapping, namespace string) metadata.ResourceInterface {
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Metadata.Resource(m.Resource).Namespace(namespace)
	}
	return c.Metadata.Resource(m.Resource)
}

// PatchMetadata server-side applies obj, of mapping m (as Scope gives
// it), without reading it first, and returns only the metadata of the
// result: a caller that needs its resourceVersion and UID spares the
// server the whole object's encoding, and itself its decoding (as the
// metadata lists do; a server that cannot answer metadata only sends the
// object, which the client reads as metadata).
func (c *Client) PatchMetadata(ctx context.Context, m *meta.RESTMapping, obj *unstructured.Unstructured, o ApplyOptions) (*metav1.PartialObjectMetadata, error) {
	data, po, err := o.patch(obj)
	if err != nil {
		return nil, err
	}
	return c.metadataOf(m, obj.GetNamespace()).Patch(ctx, obj.GetName(), types.ApplyPatchType, data, po)
}

// Listings asks ListMetadata once per resource and namespace, however
// many objects (and goroutines) need it. The zero value is ready to use.
type Listings struct {
	memo memo.Memo[string, map[string]*Live]
}

// Of is the metadata of m's objects in namespace, by name.
func (l *Listings) Of(ctx context.Context, c *Client, m *meta.RESTMapping, namespace string) (map[string]*Live, error) {
	return l.memo.Do(m.Resource.String()+"|"+namespace, func() (map[string]*Live, error) {
		return c.ListMetadata(ctx, m, namespace)
	})
}

// ListKey is a resource and a namespace whose objects' metadata is listed.
type ListKey struct {
	Mapping   *meta.RESTMapping
	Namespace string
}

// ListKeys are the resources and namespaces objs are in (in the scope
// Scope would put them), once each, but for kinds the cluster does not
// serve yet and objects skip rejects. objs are not changed.
func (c *Client) ListKeys(objs []*unstructured.Unstructured, skip func(*unstructured.Unstructured) bool) []ListKey {
	seen := map[string]bool{}
	var keys []ListKey
	for _, obj := range objs {
		if skip != nil && skip(obj) {
			continue
		}
		_, m, err := c.Resource(obj)
		if err != nil {
			continue
		}
		ns := c.namespaceIn(m, obj)
		if id := m.Resource.String() + "|" + ns; !seen[id] {
			seen[id] = true
			keys = append(keys, ListKey{m, ns})
		}
	}
	return keys
}

// stopKey holds, in a run's context, its stop (WithStop).
type stopKey struct{}

// WithStop is requests, the context of a run's requests, carrying stop:
// the context after whose end no request starts (the caller's, which
// Ctrl-C ends), while those in flight finish. A run then passes one
// context down, and what starts requests asks StopOf.
func WithStop(requests, stop context.Context) context.Context {
	return context.WithValue(requests, stopKey{}, stop)
}

// StopOf is the stop WithStop put in ctx, or ctx itself.
func StopOf(ctx context.Context) context.Context {
	if stop, ok := ctx.Value(stopKey{}).(context.Context); ok {
		return stop
	}
	return ctx
}

// Prefetch lists keys, at most concurrency at once, for Of to answer
// from. No list starts once ctx's stop (StopOf) is done; a list's error is what Of
// returns for it. The lists take none of the process's slots (Slots):
// object requests that hold one wait for them.
func (l *Listings) Prefetch(ctx context.Context, c *Client, keys []ListKey, concurrency int) {
	stop := StopOf(ctx)
	var g errgroup.Group
	g.SetLimit(max(1, concurrency))
	for _, k := range keys {
		if stop.Err() != nil {
			break
		}
		g.Go(func() error {
			_, _ = l.Of(ctx, c, k.Mapping, k.Namespace)
			return nil
		})
	}
	_ = g.Wait()
}

// Live is what apply, diff and the inventory know of a live object, read
// or listed: its UID, its resourceVersion and its labels (of a listed
// one, only the ApplySet's part-of label, which says which set holds it).
// A 1,000-cluster apply holds every cluster's listings at once: an
// ObjectMeta kept per listed object was 240 bytes, this is 48.
type Live struct {
	UID             types.UID
	ResourceVersion string
	Labels          map[string]string
}

// LiveOf is what Live holds of an object read whole.
func LiveOf(o metav1.Object) *Live {
	return &Live{UID: o.GetUID(), ResourceVersion: o.GetResourceVersion(), Labels: o.GetLabels()}
}

// ListMetadata lists the metadata of one resource's objects in a
// namespace ("" for cluster-scoped or all), by name: one request instead of
// a read per object. Of each it keeps what Live holds, and of its labels
// only the ApplySet's part-of label: the rest (managedFields first, then
// the labels) was most of a listing.
func (c *Client) ListMetadata(ctx context.Context, m *meta.RESTMapping, namespace string) (map[string]*Live, error) {
	list, err := c.metadataOf(m, namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Live, len(list.Items))
	kept := make([]Live, len(list.Items))     // one allocation, not the list's
	holders := map[string]map[string]string{} // one map per set: its members share it
	for i := range list.Items {
		o := &list.Items[i].ObjectMeta
		kept[i] = Live{UID: o.UID, ResourceVersion: o.ResourceVersion}
		if id, ok := o.Labels[kubectlapply.ApplysetPartOfLabel]; ok {
			if holders[id] == nil {
				holders[id] = map[string]string{kubectlapply.ApplysetPartOfLabel: id}
			}
			kept[i].Labels = holders[id]
		}
		out[o.Name] = &kept[i]
	}
	return out, nil
}
