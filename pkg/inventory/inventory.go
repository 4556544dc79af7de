// Package inventory records which objects belong to an app on a cluster
// with the Kubernetes ApplySet convention (KEP-3659): a parent ConfigMap per
// app, labelled with the set's ID, and the label
// applyset.kubernetes.io/part-of on every member. kubectl apply --applyset
// sees the same set: configmaps/fleet-<app> in namespace kubectl-fleet.
package inventory

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/kubectl/pkg/cmd/apply"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

const (
	// Namespace holds the parent objects.
	Namespace = "kubectl-fleet"
	// ToolName is the tooling name in applyset.kubernetes.io/tooling.
	ToolName = "kubectl-fleet"
	// LastAppliedAnnotation on the parent is when the app was last applied.
	LastAppliedAnnotation = "fleet.kubectl.io/last-applied"
	// AppAnnotation on the parent names the app.
	AppAnnotation = "fleet.kubectl.io/app"
)

var parentGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// ParentName is the name of an app's parent object.
func ParentName(app string) string { return "fleet-" + app }

// ID is the ApplySet ID of an app, computed by kubectl's own code.
func ID(app string) string {
	ref := &apply.ApplySetParentRef{Name: ParentName(app), Namespace: Namespace, RESTMapping: &meta.RESTMapping{GroupVersionKind: parentGVK}}
	return apply.NewApplySet(ref, apply.ApplySetTooling{}, nil, nil).ID()
}

// Set is an app's ApplySet on one cluster as the parent records it.
type Set struct {
	App string
	ID  string
	// Exists is whether the parent object exists.
	Exists bool
	// GroupKinds and Namespaces are where members may be.
	GroupKinds sets.Set[schema.GroupKind]
	Namespaces sets.Set[string]
	// LastApplied is when the app was last applied, if ever.
	LastApplied string
}

// Load reads an app's ApplySet parent. A parent written by another tool is
// an error: its set is not ours to change.
func Load(ctx context.Context, c *kube.Client, app string) (*Set, error) {
	s := &Set{App: app, ID: ID(app), GroupKinds: sets.New[schema.GroupKind](), Namespaces: sets.New[string]()}
	p, err := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(Namespace).Get(ctx, ParentName(app), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the inventory of app %s: %w", app, err)
	}
	ann := p.GetAnnotations()
	tooling := ann[apply.ApplySetToolingAnnotation]
	if name, _, _ := strings.Cut(tooling, "/"); name != ToolName {
		return nil, fmt.Errorf("configmap %s/%s is the ApplySet parent of another tool (%s=%q); refusing to adopt it", Namespace, ParentName(app), apply.ApplySetToolingAnnotation, tooling)
	}
	if id := p.GetLabels()[apply.ApplySetParentIDLabel]; id != s.ID {
		return nil, fmt.Errorf("configmap %s/%s has ApplySet ID %q, want %q; refusing to use it", Namespace, ParentName(app), id, s.ID)
	}
	s.Exists = true
	for _, gk := range splitList(ann[apply.ApplySetGKsAnnotation]) {
		s.GroupKinds.Insert(schema.ParseGroupKind(gk))
	}
	s.Namespaces.Insert(splitList(ann[apply.ApplySetAdditionalNamespacesAnnotation])...)
	s.LastApplied = ann[LastAppliedAnnotation]
	return s, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Label marks obj as a member of the set.
func (s *Set) Label(obj *unstructured.Unstructured) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[apply.ApplysetPartOfLabel] = s.ID
	obj.SetLabels(labels)
}

// Scope is the kinds and namespaces of a set of objects.
func Scope(objs []*unstructured.Unstructured) (sets.Set[schema.GroupKind], sets.Set[string]) {
	gks, nss := sets.New[schema.GroupKind](), sets.New[string]()
	for _, o := range objs {
		gks.Insert(o.GroupVersionKind().GroupKind())
		if ns := o.GetNamespace(); ns != "" {
			nss.Insert(ns)
		}
	}
	return gks, nss
}

// WriteParent records the set's kinds and namespaces in the parent object
// (creating the kubectl-fleet namespace if needed), with server-side apply.
// lastApplied, when not zero, is recorded too.
func (s *Set) WriteParent(ctx context.Context, c *kube.Client, gks sets.Set[schema.GroupKind], nss sets.Set[string], lastApplied time.Time, fieldManager, version string) error {
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": Namespace}}
	if err := applyRaw(ctx, c, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", Namespace, ns, fieldManager); err != nil {
		return fmt.Errorf("creating namespace %s for the inventory: %w", Namespace, err)
	}
	kinds := make([]string, 0, gks.Len())
	for gk := range gks {
		kinds = append(kinds, gk.String())
	}
	sort.Strings(kinds)
	ann := map[string]any{
		apply.ApplySetToolingAnnotation:              ToolName + "/" + version,
		apply.ApplySetGKsAnnotation:                  strings.Join(kinds, ","),
		apply.ApplySetAdditionalNamespacesAnnotation: strings.Join(sets.List(nss.Clone().Delete(Namespace)), ","),
		AppAnnotation: s.App,
	}
	if !lastApplied.IsZero() {
		ann[LastAppliedAnnotation] = lastApplied.UTC().Format(time.RFC3339)
	} else if s.LastApplied != "" {
		ann[LastAppliedAnnotation] = s.LastApplied
	}
	parent := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": ParentName(s.App), "namespace": Namespace,
			"labels":      map[string]any{apply.ApplySetParentIDLabel: s.ID},
			"annotations": ann,
		},
	}
	if err := applyRaw(ctx, c, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace, ParentName(s.App), parent, fieldManager); err != nil {
		return fmt.Errorf("writing the inventory of app %s: %w", s.App, err)
	}
	s.Exists, s.GroupKinds, s.Namespaces = true, gks, nss
	return nil
}

func applyRaw(ctx context.Context, c *kube.Client, gvr schema.GroupVersionResource, ns, name string, obj map[string]any, fieldManager string) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	force := true
	ri := c.Dynamic.Resource(gvr)
	if ns != "" {
		_, err = ri.Namespace(ns).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	} else {
		_, err = ri.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	}
	return err
}

// Members lists the live members of the set: every object of its kinds, in
// its namespaces (or cluster-wide for cluster-scoped kinds), that carries
// the set's part-of label. Kinds the cluster no longer serves are skipped.
func (s *Set) Members(ctx context.Context, c *kube.Client, extraKinds sets.Set[schema.GroupKind], extraNamespaces sets.Set[string]) ([]*unstructured.Unstructured, error) {
	selector := apply.ApplysetPartOfLabel + "=" + s.ID
	gks := s.GroupKinds.Union(extraKinds)
	nss := s.Namespaces.Union(extraNamespaces)
	var out []*unstructured.Unstructured
	for _, gk := range sets.List(gksAsStrings(gks)) {
		m, err := c.MappingFor(schema.ParseGroupKind(gk))
		if err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, err
		}
		ri := c.Dynamic.Resource(m.Resource)
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return nil, err
			}
			out = append(out, items(list)...)
			continue
		}
		for _, ns := range sets.List(nss) {
			list, err := ri.Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return nil, err
			}
			out = append(out, items(list)...)
		}
	}
	return out, nil
}

func gksAsStrings(gks sets.Set[schema.GroupKind]) sets.Set[string] {
	out := sets.New[string]()
	for gk := range gks {
		out.Insert(gk.String())
	}
	return out
}

func items(list *unstructured.UnstructuredList) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out
}

// Release takes a member out of the set without deleting it: it loses the
// part-of label.
func (s *Set) Release(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	if obj.GetLabels()[apply.ApplysetPartOfLabel] != s.ID {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{apply.ApplysetPartOfLabel: nil}}})
	if err != nil {
		return err
	}
	if _, err := ri.Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("taking %s out of app %s: %w", obj.GetName(), s.App, err)
	}
	return nil
}
