package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The hunt's runs that cannot see everything, where a guard that fails
// open deletes what it could not read: an identity that may not list
// some kinds (PodTemplates, the custom resources across namespaces), one
// that may not list the other apps' inventories (and applies one app),
// and discovery failing for the custom resources' group version. And
// runs without --force-conflicts, which must not take a field someone
// else set. Each is checked for what must hold even when a run fails,
// then the step's applyAll runs once more, with every right.

// restricted applies w's renders (changed from before) as s.Flag says,
// and checks that what no app owns is untouched and that nothing still
// rendered was deleted. The run may fail (it cannot read what it would
// need); it may not lose anything.
func (h *hunter) restricted(ctx context.Context, w *world, s step, before map[string]map[string]spec) error {
	args := []string{"-F", w.write(h.t, "fleet.yaml", false, false), "apply", "--prune", "--allow-empty", "--yes", "--force-conflicts"}
	kc := h.kubeconfig
	switch s.Flag {
	case "reads", "inventories":
		if err := h.ensureRBAC(ctx, w); err != nil {
			return err
		}
		args = append(args, "--as", w.p+"-"+s.Flag)
		// What it must list in the Namespace "two", for this run only
		// (a Role there counts as someone else's object in it).
		if h.canHold(ctx, w, "fcm2/x") {
			if err := h.lists(ctx, w, s.Flag, w.ns("two")); err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
				return err
			}
			defer h.unlist(ctx, w, s.Flag, w.ns("two"))
		}
		if s.Flag == "inventories" {
			// The app that rendered the key: what it no longer renders
			// another app may render now, which this run cannot see.
			app := s.App
			for a, r := range before {
				if _, ok := r[s.Key]; ok {
					app = a
				}
			}
			args = append(args, "--app", w.app(app))
		}
	case "discovery":
		p, pkc := h.proxy()
		defer p.Close()
		p.FailDiscovery(w.group() + "/v1")
		kc = pkc
		args = append(args, "--cache-dir", h.t.TempDir())
	}
	out, code := h.applyRun(ctx, w, kc, args)
	if err := w.secretFree(out); err != nil {
		return err
	}
	if code != 0 && code != 1 {
		return fmt.Errorf("apply (restricted: %s): exit %d\n%s", s.Flag, code, out)
	}
	if err := h.untouched(ctx, w); err != nil {
		return fmt.Errorf("restricted (%s): %w", s.Flag, err)
	}
	return h.present(ctx, w)
}

// present: what an app rendered at the last apply and an app still
// renders was not deleted, whatever run came between (its content aside:
// the run may not have applied it).
func (h *hunter) present(ctx context.Context, w *world) error { return h.same(ctx, w, false) }

// noForce applies w's renders without --force-conflicts. A field
// someone else set (an object the foreign actor made or labelled, not
// yet taken by a forced apply) stops the apply that would change it:
// its value stays theirs, and the apply fails for a conflict. An apply with
// nothing of anyone else's in its way succeeds as any other (done).
func (h *hunter) noForce(ctx context.Context, w *world, before map[string]map[string]spec) (done bool, err error) {
	theirs := map[string]string{} // key → their value, where it differs
	others := false
	for _, a := range w.apps {
		for k, sp := range w.render[a] {
			// The foreign actor's value, or a label it set. A released
			// object may meet a conflict too: an app that let go of it
			// as its only manager left its fields to no one (the server
			// then says "before-first-apply").
			v, made := w.pristine[k]
			others = others || made || w.labelled[k] || w.released[k]
			if kind, _, _ := strings.Cut(k, "/"); made && v != sp.data && (kind == "cm" || kind == "cm2" || kind == "cr") {
				theirs[k] = v
			}
		}
	}
	args := []string{"-F", w.write(h.t, "fleet.yaml", false, false), "apply", "--prune", "--allow-empty", "--yes"}
	out, code := h.applyRun(ctx, w, h.kubeconfig, args)
	if err := w.secretFree(out); err != nil {
		return false, err
	}
	for _, k := range slices.Sorted(maps.Keys(theirs)) {
		gvr, ns, name := w.ref(k)
		live, err := h.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("%s, the foreign actor's, is gone after an apply without --force-conflicts: %v", k, err)
		}
		if got := liveValue(k, live); got != theirs[k] {
			return false, fmt.Errorf("%s, the foreign actor's, was changed by an apply without --force-conflicts: %q, was %q (exit %d)\n%s", k, got, theirs[k], code, out)
		}
	}
	switch {
	case code == 0:
		return true, h.afterApply(ctx, w, before)
	case !others:
		return false, fmt.Errorf("apply: without --force-conflicts, nothing of anyone else's in its way: exit %d\n%s", code, out)
	case !strings.Contains(strings.ToLower(out), "conflict"):
		return false, fmt.Errorf("apply: without --force-conflicts: exit %d, not for a conflict\n%s", code, out)
	}
	return false, h.untouched(ctx, w)
}

// ensureRBAC makes the run's restricted identities, once. <p>-reads may
// do everything but list PodTemplates (a kind no app renders, so only
// the Namespace guard, which lists every kind, meets the refusal) and
// list the custom resources across namespaces (as the CRD guard does);
// <p>-inventories everything but list ConfigMaps in kubectl-fleet (the
// apps' inventories). Each lists what it must to find an app's members
// in the apps' namespaces: granted in "one" here, in "two" for the
// length of a run (lists).
func (h *hunter) ensureRBAC(ctx context.Context, w *world) error {
	if w.rbac {
		return nil
	}
	ns := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	_, err := h.dyn.Resource(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "kubectl-fleet"}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	core := []any{"namespaces", "serviceaccounts", "services", "endpoints", "events", "pods", "persistentvolumeclaims", "limitranges", "resourcequotas", "replicationcontrollers"}
	var groups []any // every group the server serves but the core one
	for _, g := range h.groups {
		groups = append(groups, g)
	}
	roles := map[string][]any{
		"reads": {
			rbacRule([]any{""}, append(core, "configmaps", "secrets"), rbacAll),
			rbacRule([]any{""}, []any{"podtemplates"}, rbacNoList),
			rbacRule(groups, rbacAll, rbacAll),
			rbacRule([]any{w.group()}, rbacAll, rbacNoList),
		},
		"inventories": {
			rbacRule([]any{""}, append(core, "secrets", "podtemplates"), rbacAll),
			rbacRule([]any{""}, []any{"configmaps"}, rbacNoList),
			rbacRule(append(groups, w.group()), rbacAll, rbacAll),
		},
	}
	for _, flavour := range []string{"reads", "inventories"} {
		name := w.p + "-" + flavour
		subjects := []any{map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}}
		if err := h.create(ctx, rbacResource("clusterroles"), "", map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": name}, "rules": roles[flavour]}); err != nil {
			return err
		}
		if err := h.create(ctx, rbacResource("clusterrolebindings"), "", map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": name},
			"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}, "subjects": subjects}); err != nil {
			return err
		}
		if err := h.lists(ctx, w, flavour, w.ns("one")); err != nil {
			return err
		}
	}
	w.rbac = true
	return nil
}

var (
	rbacAll    = []any{"*"}
	rbacNoList = []any{"get", "create", "update", "patch", "delete"}
)

func rbacRule(groups, resources, verbs []any) any {
	return map[string]any{"apiGroups": groups, "resources": resources, "verbs": verbs}
}

func rbacResource(r string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: r}
}

func (h *hunter) create(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj map[string]any) error {
	_, err := h.dyn.Resource(gvr).Namespace(namespace).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	return err
}

// lists lets flavour's identity list what an app's members may be in
// namespace ns: the custom resources (reads), the ConfigMaps
// (inventories), with a Role and RoleBinding there (unlist takes them
// back).
func (h *hunter) lists(ctx context.Context, w *world, flavour, ns string) error {
	rules := map[string][]any{
		"reads":       {rbacRule([]any{w.group()}, rbacAll, rbacAll)},
		"inventories": {rbacRule([]any{""}, []any{"configmaps"}, rbacAll)},
	}[flavour]
	name := w.p + "-" + flavour + "-lists"
	if err := h.create(ctx, rbacResource("roles"), ns, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": map[string]any{"name": name}, "rules": rules}); err != nil {
		return err
	}
	return h.create(ctx, rbacResource("rolebindings"), ns, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": map[string]any{"name": name},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
		"subjects": []any{map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": w.p + "-" + flavour}}})
}

// unlist takes back what lists gave in ns, best effort.
func (h *hunter) unlist(ctx context.Context, w *world, flavour, ns string) {
	name := w.p + "-" + flavour + "-lists"
	_ = h.dyn.Resource(rbacResource("rolebindings")).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	_ = h.dyn.Resource(rbacResource("roles")).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

// cleanupRBAC deletes the run's restricted identities, best effort.
func (h *hunter) cleanupRBAC(ctx context.Context, w *world) {
	if !w.rbac {
		return
	}
	for _, flavour := range []string{"reads", "inventories"} {
		_ = h.dyn.Resource(rbacResource("clusterrolebindings")).Delete(ctx, w.p+"-"+flavour, metav1.DeleteOptions{})
		_ = h.dyn.Resource(rbacResource("clusterroles")).Delete(ctx, w.p+"-"+flavour, metav1.DeleteOptions{})
	}
}

// canHold reports whether the cluster can take key now: its Namespace
// ("two") there and not being deleted, its CRD serving its kind.
func (h *hunter) canHold(ctx context.Context, w *world, key string) bool {
	var holder string
	switch kind, _, _ := strings.Cut(canon(key), "/"); kind {
	case "cm2", "ep":
		holder = "ns/two"
	case "cr":
		holder = "crd/hunts"
	default:
		return true
	}
	gvr, _, name := w.ref(holder)
	live, err := h.dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	if err != nil || live.GetDeletionTimestamp() != nil {
		return false
	}
	return holder == "ns/two" || established(live)
}

// liveValue is the value the hunt writes in an object: data.v of a
// ConfigMap, spec.v of a custom resource.
func liveValue(key string, live *unstructured.Unstructured) string {
	field := "data"
	if kind, _, _ := strings.Cut(key, "/"); kind == "cr" || kind == "fcr" {
		field = "spec"
	}
	v, _, _ := unstructured.NestedString(live.Object, field, "v")
	return v
}

// pick is an index below n drawn from a step's data ("v17"), so that a
// step replayed picks the same.
func pick(data string, n int) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(data, "v"))
	return i % n
}
