package standin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv/serverside"
)

// resource is one resource discovery names.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	verbs      []string
}

// gvk is the resource's kind.
func (r *resource) gvk() schema.GroupVersionKind {
	return r.gvr.GroupVersion().WithKind(r.kind)
}

// stored is one object as the server keeps it: its JSON (what a get
// answers) and its metadata (what a metadata get answers).
type stored struct {
	obj  map[string]any
	json []byte
	meta metav1.ObjectMeta
}

// objKey names a stored object.
type objKey struct {
	gr              schema.GroupResource
	namespace, name string
}

// store is one cluster's objects.
type store struct {
	mu      sync.RWMutex
	objects map[objKey]*stored
	// rv is the last resourceVersion given (etcd's revision).
	rv int64
}

func newStore() *store { return &store{objects: map[objKey]*stored{}} }

// seed holds what a new kube-apiserver starts with.
type seed []struct {
	key objKey
	obj map[string]any
}

// loadSeed reads the recorded objects a new server holds.
func loadSeed(d *discovery) (seed, error) {
	b, err := recorded.ReadFile("testdata/seed.json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := utiljson.Unmarshal(b, &list); err != nil {
		return nil, err
	}
	var out seed
	for _, o := range list.Items {
		u := &unstructured.Unstructured{Object: o}
		gvk := u.GroupVersionKind()
		var gr schema.GroupResource
		for _, r := range d.resources {
			if r.gvk() == gvk {
				gr = r.gvr.GroupResource()
			}
		}
		if gr.Resource == "" {
			return nil, fmt.Errorf("seed: no resource for %s", gvk)
		}
		out = append(out, struct {
			key objKey
			obj map[string]any
		}{objKey{gr, u.GetNamespace(), u.GetName()}, o})
	}
	return out, nil
}

// plant stores the seed's objects, each with a resourceVersion of its own.
func (s *store) plant(sd seed) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range sd {
		obj := runtime.DeepCopyJSON(o.obj)
		(&unstructured.Unstructured{Object: obj}).SetResourceVersion(s.nextRV())
		st, err := newStored(obj)
		if err != nil {
			return err
		}
		s.objects[o.key] = st
	}
	return nil
}

// withGeneration are the resources whose registry strategy keeps
// metadata.generation, moved by a change of anything but metadata and
// status.
var withGeneration = map[schema.GroupResource]bool{
	{Group: "apps", Resource: "deployments"}:                               true,
	{Group: "apps", Resource: "replicasets"}:                               true,
	{Group: "apps", Resource: "statefulsets"}:                              true,
	{Group: "apps", Resource: "daemonsets"}:                                true,
	{Group: "batch", Resource: "jobs"}:                                     true,
	{Group: "batch", Resource: "cronjobs"}:                                 true,
	{Group: "networking.k8s.io", Resource: "ingresses"}:                    true,
	{Group: "networking.k8s.io", Resource: "networkpolicies"}:              true,
	{Group: "policy", Resource: "poddisruptionbudgets"}:                    true,
	{Group: "autoscaling", Resource: "horizontalpodautoscalers"}:           true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
}

// withStatus are the resources whose status only their status
// subresource (a controller) writes: a write of the object keeps the
// stored one. initialStatus is what a create starts with.
var withStatus = map[schema.GroupResource]func(name string) map[string]any{
	{Group: "apps", Resource: "deployments"}: emptyStatus,
	{Group: "apps", Resource: "replicasets"}: emptyStatus,
	{Group: "apps", Resource: "statefulsets"}: func(string) map[string]any {
		return map[string]any{"availableReplicas": int64(0), "replicas": int64(0)}
	},
	{Group: "apps", Resource: "daemonsets"}: func(string) map[string]any {
		return map[string]any{"currentNumberScheduled": int64(0), "desiredNumberScheduled": int64(0), "numberMisscheduled": int64(0), "numberReady": int64(0)}
	},
	{Group: "batch", Resource: "jobs"}:     emptyStatus,
	{Group: "batch", Resource: "cronjobs"}: emptyStatus,
	{Resource: "namespaces"}:               func(string) map[string]any { return map[string]any{"phase": "Active"} },
	{Resource: "services"}:                 func(string) map[string]any { return map[string]any{"loadBalancer": map[string]any{}} },
	{Resource: "pods"}:                     func(string) map[string]any { return map[string]any{"phase": "Pending", "qosClass": "BestEffort"} },
	{Resource: "persistentvolumeclaims"}:   func(string) map[string]any { return map[string]any{"phase": "Pending"} },
	{Group: "networking.k8s.io", Resource: "ingresses"}: func(string) map[string]any {
		return map[string]any{"loadBalancer": map[string]any{}}
	},
}

func emptyStatus(string) map[string]any { return map[string]any{} }

// nextRV is a new resourceVersion; s.mu is held for writing.
func (s *store) nextRV() string {
	s.rv++
	return strconv.FormatInt(s.rv, 10)
}

// get returns a stored object, or nil.
func (s *store) get(k objKey) *stored {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.objects[k]
}

// list returns the stored objects of gr in namespace (every namespace
// when ""), in name order, and the list's resourceVersion.
func (s *store) list(gr schema.GroupResource, namespace string, keep func(*stored) bool) ([]*stored, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*stored
	for k, o := range s.objects {
		if k.gr == gr && (namespace == "" || k.namespace == namespace) && keep(o) {
			out = append(out, o)
		}
	}
	sortStored(out)
	return out, strconv.FormatInt(s.rv, 10)
}

// namespaceUsable checks that objects can be made in namespace ns: it
// exists, and is not being deleted. s.mu is held.
func (s *store) namespaceUsable(ns string) error {
	n := s.objects[objKey{gr: schema.GroupResource{Resource: "namespaces"}, name: ns}]
	switch {
	case n == nil:
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, ns)
	case n.meta.DeletionTimestamp != nil:
		return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, ns, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
	}
	return nil
}

// write stores next as the object k (live being what is stored, nil for a
// create), the server's fields set: uid, creationTimestamp, generation,
// status and resourceVersion, which only moves when something changed.
// It returns what the server answers. dryRun stores nothing.
func (s *store) write(r *resource, k objKey, live *stored, next map[string]any, dryRun bool) (*stored, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.objects[k]
	if cur != live && live == nil { // another create came first
		return nil, apierrors.NewAlreadyExists(k.gr, k.name)
	}
	if cur != live { // another write came between read and write
		return nil, modified(k)
	}
	if live == nil && r.namespaced {
		if err := s.namespaceUsable(k.namespace); err != nil {
			return nil, err
		}
	}
	u := serverFields(r, k, live, next)
	if live != nil {
		u.SetResourceVersion(live.meta.ResourceVersion)
		keepManagedTimes(u, &unstructured.Unstructured{Object: live.obj})
		b, err := json.Marshal(next)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(b, live.json) {
			return live, nil // nothing changed: nothing written
		}
	}
	if dryRun {
		// A dry run answers what would be stored; a create's version is
		// empty, an update's the live one.
		if live == nil {
			u.SetResourceVersion("")
		}
		return newStored(next)
	}
	u.SetResourceVersion(s.nextRV())
	o, err := newStored(next)
	if err != nil {
		return nil, err
	}
	s.objects[k] = o
	return o, nil
}

// keepManagedTimes gives next's managedFields entries the times of live's
// where nothing else of them changed, as kube-apiserver does (a field
// manager's time moves only when its fields do): an apply that changes
// nothing, in a later second, stays a no-op.
func keepManagedTimes(next, live *unstructured.Unstructured) {
	old := live.GetManagedFields()
	entries := next.GetManagedFields()
	for i := range entries {
		for _, o := range old {
			e := entries[i]
			if e.Manager == o.Manager && e.Operation == o.Operation && e.Subresource == o.Subresource && e.APIVersion == o.APIVersion && e.FieldsV1 != nil && o.FieldsV1 != nil && bytes.Equal(e.FieldsV1.Raw, o.FieldsV1.Raw) {
				entries[i].Time = o.Time
			}
		}
	}
	if len(entries) > 0 {
		next.SetManagedFields(entries)
	}
}

// serverFields sets what the server owns on next, the object k about to
// be stored over live (nil for a create): type and name, defaults, uid,
// creationTimestamp, generation (moved when more than metadata changed),
// status, and a Namespace's name label and finalizer.
func serverFields(r *resource, k objKey, live *stored, next map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: next}
	u.SetAPIVersion(r.gvr.GroupVersion().String())
	u.SetKind(r.kind)
	u.SetName(k.name)
	u.SetNamespace(k.namespace)
	serverside.Default(k.gr, next)
	status := withStatus[k.gr]
	if live == nil {
		u.SetUID(types.UID(uuid.NewUUID()))
		u.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
		u.SetDeletionTimestamp(nil)
		if withGeneration[k.gr] {
			u.SetGeneration(1)
		} else {
			u.SetGeneration(0)
		}
		if status != nil {
			next["status"] = status(k.name)
		}
	} else {
		old := live.obj
		lu := &unstructured.Unstructured{Object: old}
		u.SetUID(lu.GetUID())
		u.SetCreationTimestamp(lu.GetCreationTimestamp())
		u.SetDeletionTimestamp(lu.GetDeletionTimestamp())
		if status != nil {
			if st, ok := old["status"]; ok {
				next["status"] = st
			} else {
				delete(next, "status")
			}
		}
		u.SetGeneration(lu.GetGeneration())
		if withGeneration[k.gr] && !sameBeyondMeta(old, next) {
			u.SetGeneration(lu.GetGeneration() + 1)
		}
	}
	if k.gr == (schema.GroupResource{Resource: "namespaces"}) {
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["kubernetes.io/metadata.name"] = k.name
		u.SetLabels(labels)
		if live == nil {
			next["spec"] = map[string]any{"finalizers": []any{"kubernetes"}}
		}
	}
	return u
}

// modified is the Conflict of a write whose read of k is out of date.
func modified(k objKey) error {
	return apierrors.NewConflict(k.gr, k.name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

// remove deletes the object k, if live is still what is stored; a
// Namespace is only marked as being deleted, for ever, as an apiserver
// without its namespace controller leaves it.
func (s *store) remove(k objKey, live *stored, dryRun bool) (*stored, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.objects[k] != live {
		return nil, modified(k)
	}
	if k.gr != (schema.GroupResource{Resource: "namespaces"}) {
		if !dryRun {
			delete(s.objects, k)
		}
		return live, nil
	}
	if live.meta.DeletionTimestamp != nil {
		return live, nil
	}
	next := runtime.DeepCopyJSON(live.obj)
	u := &unstructured.Unstructured{Object: next}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	u.SetDeletionTimestamp(&now)
	next["status"] = map[string]any{"phase": "Terminating"}
	if dryRun {
		return newStored(next)
	}
	u.SetResourceVersion(s.nextRV())
	o, err := newStored(next)
	if err != nil {
		return nil, err
	}
	s.objects[k] = o
	return o, nil
}

// dropNamespace forgets every object in namespace ns, and ns.
func (s *store) dropNamespace(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.objects {
		if k.namespace == ns || k.gr == (schema.GroupResource{Resource: "namespaces"}) && k.name == ns {
			delete(s.objects, k)
		}
	}
}

// newStored encodes obj once for every later read.
func newStored(obj map[string]any) (*stored, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	o := &stored{obj: obj, json: b}
	if md, ok := obj["metadata"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &o.meta); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// sameBeyondMeta reports whether a and b agree on everything but
// metadata and status: whether a write leaves the generation alone.
func sameBeyondMeta(a, b map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		c := maps.Clone(m)
		delete(c, "metadata")
		delete(c, "status")
		return c
	}
	ja, errA := json.Marshal(strip(a))
	jb, errB := json.Marshal(strip(b))
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
