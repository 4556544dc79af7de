package kubetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func configMap(ns, name string, data map[string]any) *unstructured.Unstructured {
	o := Object("v1", "ConfigMap", ns, name)
	o.Object["data"] = data
	return o
}

func apply(t *testing.T, c *Cluster, obj *unstructured.Unstructured, dryRun bool) (before, after *unstructured.Unstructured) {
	t.Helper()
	return applyAs(t, c, "test", obj, dryRun)
}

func applyAs(t *testing.T, c *Cluster, manager string, obj *unstructured.Unstructured, dryRun bool) (before, after *unstructured.Unstructured) {
	t.Helper()
	before, after, err := c.Client.Apply(context.Background(), obj.DeepCopy(), kube.ApplyOptions{FieldManager: manager, DryRun: dryRun})
	if err != nil {
		t.Fatalf("apply %s: %v", obj.GetName(), err)
	}
	return before, after
}

// TestServerSideApply: an apply creates with a UID, merges into what is
// there, removes what its manager no longer applies, and moves the
// resourceVersion only on a change; a dry run answers the same without
// persisting.
func TestServerSideApply(t *testing.T) {
	c := New(t)
	c.Put(Object("v1", "Namespace", "", "web"))
	_, created := apply(t, c, configMap("web", "a", map[string]any{"k": "1"}), false)
	if created.GetUID() == "" || created.GetResourceVersion() == "" {
		t.Fatalf("created without UID or resourceVersion: %v", created.Object)
	}
	if _, again := apply(t, c, configMap("web", "a", map[string]any{"k": "1"}), false); again.GetResourceVersion() != created.GetResourceVersion() || again.GetUID() != created.GetUID() {
		t.Errorf("an unchanged apply moved the object: %s/%s, then %s/%s", created.GetUID(), created.GetResourceVersion(), again.GetUID(), again.GetResourceVersion())
	}
	_, changed := apply(t, c, configMap("web", "a", map[string]any{"k": "1", "other": "2"}), false)
	if changed.GetResourceVersion() == created.GetResourceVersion() || changed.GetUID() != created.GetUID() {
		t.Errorf("a change: %s/%s, then %s/%s", created.GetUID(), created.GetResourceVersion(), changed.GetUID(), changed.GetResourceVersion())
	}
	for _, step := range []struct {
		manager string
		data    map[string]any
		want    map[string]any
	}{
		{"someone", map[string]any{"theirs": "x"}, map[string]any{"k": "1", "other": "2", "theirs": "x"}},
		{"test", map[string]any{"k": "1"}, map[string]any{"k": "1", "theirs": "x"}},
	} {
		_, got := applyAs(t, c, step.manager, configMap("web", "a", step.data), false)
		if diff := cmp.Diff(step.want, got.Object["data"]); diff != "" {
			t.Errorf("after %s applied %v (-want +got):\n%s", step.manager, step.data, diff)
		}
	}

	live := c.Live(configMap("web", "a", nil))
	before, dry := apply(t, c, configMap("web", "a", map[string]any{"k": "dry"}), true)
	if got, _, _ := unstructured.NestedString(dry.Object, "data", "k"); got != "dry" {
		t.Errorf("dry run answered data.k %q, want dry", got)
	}
	if diff := cmp.Diff(live.Object, c.Live(live).Object); diff != "" || before.GetResourceVersion() != live.GetResourceVersion() {
		t.Errorf("a dry run changed the object (-before +after):\n%s", diff)
	}
	if _, dryNew := apply(t, c, configMap("web", "new", nil), true); dryNew.GetUID() == "" || c.Live(dryNew) != nil {
		t.Errorf("a dry-run create: uid %q, stored %v", dryNew.GetUID(), c.Live(dryNew))
	}

	_, _, err := c.Client.Apply(context.Background(), configMap("gone", "a", nil), kube.ApplyOptions{FieldManager: "test"})
	if !kube.IsNamespaceNotFound(err) {
		t.Errorf("apply into a missing namespace: %v, want namespaces not found", err)
	}
}

// TestScopeAndMapper: the mapper knows what is namespaced, and an object
// rendered with a namespace its cluster-scoped kind does not have is
// stored without it.
func TestScopeAndMapper(t *testing.T) {
	c := New(t)
	for _, tt := range []struct {
		gk         schema.GroupKind
		namespaced bool
	}{
		{schema.GroupKind{Kind: "ConfigMap"}, true},
		{schema.GroupKind{Kind: "Secret"}, true},
		{schema.GroupKind{Kind: "Namespace"}, false},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, true},
		{schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, false},
		{ClusterPolicy.GroupKind(), false},
	} {
		m, err := c.Client.MappingFor(tt.gk)
		if err != nil || (m.Scope.Name() == meta.RESTScopeNameNamespace) != tt.namespaced {
			t.Errorf("%s: %v, %v", tt.gk, m, err)
		}
	}
	if _, err := c.Client.MappingFor(schema.GroupKind{Kind: "Pod"}); !meta.IsNoMatchError(err) {
		t.Errorf("an unserved kind: %v", err)
	}
	c.Client.Mapper.Reset()

	p := Object(ClusterPolicy.GroupVersion().String(), ClusterPolicy.Kind, "guessed", "p")
	if _, after := apply(t, c, p, false); after.GetNamespace() != "" {
		t.Errorf("cluster-scoped object stored in namespace %q", after.GetNamespace())
	}
	crd := Object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "clusterpolicies.policy.example.com")
	if _, after := apply(t, c, crd, false); !meta.IsStatusConditionTrue(conditions(after), "Established") {
		t.Errorf("a CRD is not established: %v", after.Object["status"])
	}
}

func conditions(o *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	var out []metav1.Condition
	for _, r := range raw {
		m := r.(map[string]any)
		out = append(out, metav1.Condition{Type: m["type"].(string), Status: metav1.ConditionStatus(m["status"].(string))})
	}
	return out
}

// TestListsAndDeletes: both clients list the same store, by namespace and
// label selector (which the fakes themselves apply); merge patches and
// deletes change it, except in a dry run.
func TestListsAndDeletes(t *testing.T) {
	ctx := context.Background()
	c := New(t)
	a, b, other := configMap("web", "a", nil), configMap("web", "b", nil), configMap("db", "a", nil)
	a.SetLabels(map[string]string{"set": "x"})
	other.SetLabels(map[string]string{"set": "x"})
	c.Put(a, b, other, Object("v1", "Secret", "web", "s"))

	names := func(objs []unstructured.Unstructured) (out []string) {
		for _, o := range objs {
			out = append(out, o.GetNamespace()+"/"+o.GetName())
		}
		return out
	}
	list, err := c.Client.Dynamic.Resource(configMaps).Namespace("web").List(ctx, metav1.ListOptions{LabelSelector: "set=x"})
	if err != nil || !cmp.Equal(names(list.Items), []string{"web/a"}) {
		t.Errorf("labelled configmaps of web: %v, %v", names(list.Items), err)
	}
	list, err = c.Client.Dynamic.Resource(configMaps).List(ctx, metav1.ListOptions{})
	if err != nil || !cmp.Equal(names(list.Items), []string{"db/a", "web/a", "web/b"}) {
		t.Errorf("configmaps everywhere: %v, %v", names(list.Items), err)
	}
	mapping, _ := c.Client.MappingFor(schema.GroupKind{Kind: "ConfigMap"})
	md, err := c.Client.ListMetadata(ctx, mapping, "web")
	if err != nil || len(md) != 2 || md["a"].UID != c.Live(a).GetUID() {
		t.Errorf("metadata of web's configmaps: %v, %v", md, err)
	}
	mdList, err := c.Client.Metadata.Resource(configMaps).List(ctx, metav1.ListOptions{LabelSelector: "set=x"})
	if err != nil || len(mdList.Items) != 2 || mdList.Items[0].Labels["set"] != "x" {
		t.Errorf("metadata list by label: %v, %v", mdList, err)
	}

	ri := c.Client.Dynamic.Resource(configMaps).Namespace("web")
	rv := c.Live(a).GetResourceVersion()
	if _, err := ri.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"set":null}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if live := c.Live(a); len(live.GetLabels()) != 0 || live.GetResourceVersion() == rv {
		t.Errorf("after removing the label: %v, resourceVersion %s (was %s)", live.GetLabels(), live.GetResourceVersion(), rv)
	}
	if _, err := ri.Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("merge patch of a missing object: %v", err)
	}
	if err := ri.Delete(ctx, "a", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil || c.Live(a) == nil {
		t.Errorf("a dry-run delete: %v, still there: %v", err, c.Live(a) != nil)
	}
	if err := ri.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil || c.Live(a) != nil {
		t.Errorf("a delete: %v, still there: %v", err, c.Live(a) != nil)
	}
	if err := ri.Delete(ctx, "a", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deleting it again: %v", err)
	}
	if _, err := ri.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("reading it: %v", err)
	}
}

// TestFaultsAndRequests: a fault fails the Nth matching request, or every
// one, from either client; every request is recorded.
func TestFaultsAndRequests(t *testing.T) {
	ctx := context.Background()
	c := New(t)
	c.Put(configMap("web", "a", nil))
	forbidden := apierrors.NewForbidden(configMaps.GroupResource(), "", nil)
	c.Inject(Fault{Verb: "list", Resource: "configmaps", Err: forbidden})
	c.Inject(Fault{Verb: "get", Name: "a", Nth: 2, Err: apierrors.NewConflict(configMaps.GroupResource(), "a", nil)})

	if _, err := c.Client.Dynamic.Resource(configMaps).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("dynamic list: %v", err)
	}
	if _, err := c.Client.Metadata.Resource(configMaps).Namespace("web").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("metadata list: %v", err)
	}
	ri := c.Client.Dynamic.Resource(configMaps).Namespace("web")
	for i, wantConflict := range []bool{false, true, false} {
		if _, err := ri.Get(ctx, "a", metav1.GetOptions{}); apierrors.IsConflict(err) != wantConflict {
			t.Errorf("get %d: %v", i+1, err)
		}
	}
	hooked := 0
	c.Inject(Fault{Verb: "delete", Nth: 1, Hook: func() { hooked++ }})
	if err := ri.Delete(ctx, "a", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil || hooked != 1 {
		t.Errorf("a fault with a hook and no error: %v, hook ran %d times", err, hooked)
	}
	want := []Request{
		{Verb: "list", Resource: "configmaps"},
		{Verb: "list", Resource: "configmaps", Namespace: "web"},
		{Verb: "get", Resource: "configmaps", Namespace: "web", Name: "a"},
		{Verb: "get", Resource: "configmaps", Namespace: "web", Name: "a"},
		{Verb: "get", Resource: "configmaps", Namespace: "web", Name: "a"},
		{Verb: "delete", Resource: "configmaps", Namespace: "web", Name: "a", DryRun: true},
	}
	if diff := cmp.Diff(want, c.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestCreateUpdateAndPreconditions: a create stores a new object of a
// served kind in an existing namespace, and refuses a second one; an
// update with a stale resourceVersion is a Conflict, a current one
// replaces the object; a delete whose preconditions do not hold is a
// Conflict and deletes nothing.
func TestCreateUpdateAndPreconditions(t *testing.T) {
	ctx := context.Background()
	c := New(t)
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	ri := c.Client.Dynamic.Resource(leases).Namespace("locks")
	lease := Object("coordination.k8s.io/v1", "Lease", "locks", "l")
	lease.Object["spec"] = map[string]any{"holderIdentity": "a"}

	if _, err := ri.Create(ctx, lease.DeepCopy(), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a create in a missing namespace: %v", err)
	}
	c.Put(Object("v1", "Namespace", "", "locks"))
	created, err := ri.Create(ctx, lease.DeepCopy(), metav1.CreateOptions{})
	if err != nil || created.GetUID() == "" || created.GetResourceVersion() == "" {
		t.Fatalf("create: %v, %v", created, err)
	}
	if _, err := ri.Create(ctx, lease.DeepCopy(), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("a second create: %v", err)
	}
	if _, err := c.Client.Dynamic.Resource(schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "selfsubjectreviews"}).Create(ctx, Object("authentication.k8s.io/v1", "SelfSubjectReview", "", ""), metav1.CreateOptions{}); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("a create of a kind not served: %v", err)
	}

	next := created.DeepCopy()
	next.Object["spec"] = map[string]any{"holderIdentity": "b"}
	updated, err := ri.Update(ctx, next.DeepCopy(), metav1.UpdateOptions{})
	if err != nil || updated.GetResourceVersion() == created.GetResourceVersion() || updated.GetUID() != created.GetUID() {
		t.Fatalf("update: %v, %v", updated, err)
	}
	next.Object["spec"] = map[string]any{"holderIdentity": "c"}
	if _, err := ri.Update(ctx, next.DeepCopy(), metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("an update with a stale resourceVersion: %v", err)
	}
	if h, _, _ := unstructured.NestedString(c.Live(lease).Object, "spec", "holderIdentity"); h != "b" {
		t.Errorf("holder after the stale update: %q", h)
	}
	if _, err := ri.Update(ctx, Object("coordination.k8s.io/v1", "Lease", "locks", "missing"), metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("an update of a missing object: %v", err)
	}

	stale, uid, otherUID := created.GetResourceVersion(), updated.GetUID(), types.UID("uid-other")
	for _, pre := range []*metav1.Preconditions{{ResourceVersion: &stale}, {UID: &otherUID}} {
		if err := ri.Delete(ctx, "l", metav1.DeleteOptions{Preconditions: pre}); !apierrors.IsConflict(err) || c.Live(lease) == nil {
			t.Errorf("a delete with preconditions %v: %v, still there: %v", pre, err, c.Live(lease) != nil)
		}
	}
	current := updated.GetResourceVersion()
	if err := ri.Delete(ctx, "l", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &current}}); err != nil || c.Live(lease) != nil {
		t.Errorf("a delete whose preconditions hold: %v, still there: %v", err, c.Live(lease) != nil)
	}
}

// A patch's resourceVersion is a precondition, an apply's too, and a
// uid another object's is refused; nothing is written then.
func TestPatchPreconditions(t *testing.T) {
	ctx := context.Background()
	c := New(t)
	c.Put(Object("v1", "Namespace", "", "web"))
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	ri := c.Client.Dynamic.Resource(cms).Namespace("web")
	cm := Object("v1", "ConfigMap", "web", "conf")
	cm.Object["data"] = map[string]any{"k": "1"}
	b, _ := json.Marshal(cm.Object)
	live, err := ri.Patch(ctx, "conf", types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "me"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		pt    types.PatchType
		patch string
	}{
		{types.MergePatchType, `{"metadata":{"resourceVersion":"0"},"data":{"k":"2"}}`},
		{types.ApplyPatchType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"conf","namespace":"web","resourceVersion":"0"},"data":{"k":"2"}}`},
		{types.MergePatchType, `{"metadata":{"uid":"uid-other"},"data":{"k":"2"}}`},
	} {
		if _, err := ri.Patch(ctx, "conf", tt.pt, []byte(tt.patch), metav1.PatchOptions{FieldManager: "me"}); !apierrors.IsConflict(err) {
			t.Errorf("%s %s: %v; want a conflict", tt.pt, tt.patch, err)
		}
	}
	if got := c.Live(cm); got.GetResourceVersion() != live.GetResourceVersion() {
		t.Errorf("written after refused patches: %v", got)
	}
	fresh := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"data":{"k":"3"}}`, live.GetResourceVersion())
	if _, err := ri.Patch(ctx, "conf", types.MergePatchType, []byte(fresh), metav1.PatchOptions{}); err != nil {
		t.Errorf("a patch whose resourceVersion holds: %v", err)
	}
}

// Deleting a Namespace deletes what is in it; deleting a CRD, its
// custom resources; nothing else goes.
func TestDeleteCascades(t *testing.T) {
	ctx := context.Background()
	c := New(t)
	crd := Object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "clusterpolicies.policy.example.com")
	crd.Object["spec"] = map[string]any{"group": "policy.example.com", "names": map[string]any{"plural": "clusterpolicies"}}
	inWeb, inData := Object("v1", "ConfigMap", "web", "a"), Object("v1", "ConfigMap", "data", "b")
	policy := Object("policy.example.com/v1", "ClusterPolicy", "", "p")
	c.Put(Object("v1", "Namespace", "", "web"), Object("v1", "Namespace", "", "data"), inWeb, inData, crd, policy)
	if err := c.Client.Dynamic.Resource(namespacesGVR).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if err := c.Client.Dynamic.Resource(crds).Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if c.Live(inWeb) != nil || c.Live(policy) != nil || c.Live(inData) == nil {
		t.Errorf("after the deletes: web's ConfigMap %v, the policy %v, data's ConfigMap %v", c.Live(inWeb) != nil, c.Live(policy) != nil, c.Live(inData) != nil)
	}
}
