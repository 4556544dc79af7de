package inventory

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubectl/pkg/cmd/apply"
)

func obj(kind, ns, name string, ann map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind}}
	o.SetNamespace(ns)
	o.SetName(name)
	o.SetAnnotations(ann)
	return o
}

// neighbours builds what LoadNeighbours reads from parents: app b records
// the Namespace "shared" and a ConfigMap in it.
func neighbours() *Neighbours {
	return &Neighbours{
		holders:     map[string][]string{"Namespace/shared": {"b"}, "ConfigMap/shared/b": {"b"}},
		apps:        map[string]string{ID("b"): "b", ID("c"): "c"},
		inNamespace: map[string][]string{"shared": {"b"}},
	}
}

func TestClaim(t *testing.T) {
	a := &Set{App: "a", ID: ID("a")}
	n := neighbours()
	for _, tt := range []struct {
		name        string
		path        string
		holder      string // the live part-of label; "-" for no live object
		wantPartOf  string
		wantWarning string
	}{
		{"new object", "ConfigMap/x/a", "-", a.ID, ""},
		{"ours", "ConfigMap/x/a", a.ID, a.ID, ""},
		{"unlabelled live object", "ConfigMap/x/a", "", a.ID, ""},
		{"shared, held by b", "Namespace/shared", ID("b"), ID("b"), "shared with app b, which applies it too (the last apply wins)"},
		{"shared, held by us", "Namespace/shared", a.ID, a.ID, "shared with app b, which applies it too (the last apply wins)"},
		{"shared, new", "Namespace/shared", "-", a.ID, "shared with app b, which applies it too (the last apply wins)"},
		{"held by c, which no longer records it", "ConfigMap/x/moved", ID("c"), a.ID, "moved from app c to app a"},
		{"another tool's set", "ConfigMap/x/foreign", "applyset-xyz-v1", a.ID, "taken from another ApplySet (applyset.kubernetes.io/part-of=applyset-xyz-v1)"},
	} {
		var live map[string]string
		if tt.holder != "-" {
			live = map[string]string{apply.ApplysetPartOfLabel: tt.holder}
		}
		partOf, warning := n.Claim(a, tt.path, live)
		if partOf != tt.wantPartOf || warning != tt.wantWarning {
			t.Errorf("%s: Claim = %q, %q; want %q, %q", tt.name, partOf, warning, tt.wantPartOf, tt.wantWarning)
		}
	}
}

func TestKeep(t *testing.T) {
	a := &Set{App: "a", ID: ID("a")}
	n := neighbours()
	for _, tt := range []struct {
		obj    *unstructured.Unstructured
		keep   bool
		to     string
		reason string
	}{
		{obj("ConfigMap", "x", "gone", nil), false, "", ""},
		{obj("Namespace", "", "shared", nil), true, "b", "shared with app b, which still applies it; left to it"},
		{obj("ConfigMap", "shared", "b", nil), true, "b", "shared with app b, which still applies it; left to it"},
		{obj("Namespace", "", "other", nil), false, "", ""},
		{obj("PersistentVolumeClaim", "x", "data", map[string]string{"fleet.kubectl.io/prune": "disabled"}), true, "", "fleet.kubectl.io/prune: disabled; left in place and no longer part of app a"},
		{obj("PersistentVolumeClaim", "x", "data", map[string]string{"fleet.kubectl.io/prune": "enabled"}), false, "", ""},
	} {
		keep, to, reason := n.Keep(a, tt.obj, nil)
		if keep != tt.keep || to != tt.to || reason != tt.reason {
			t.Errorf("%s %s: Keep = %v, %q, %q", tt.obj.GetKind(), tt.obj.GetName(), keep, to, reason)
		}
	}
	// A Namespace b has objects in, that b itself does not record.
	n.holders = map[string][]string{}
	if keep, _, reason := n.Keep(a, obj("Namespace", "", "shared", nil), nil); !keep || reason != "app b has objects in it; left in place and no longer part of app a" {
		t.Errorf("a Namespace with b's objects: %v, %q", keep, reason)
	}
}

func TestContentsRoundTrip(t *testing.T) {
	objs := []*unstructured.Unstructured{obj("Namespace", "", "web", nil), obj("ConfigMap", "web", "settings", nil)}
	c := ContentsOf(objs)
	parent := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{MembersKey: "ConfigMap/web/settings\nNamespace/web"}}}
	parent.SetAnnotations(map[string]string{apply.ApplySetGKsAnnotation: "ConfigMap,Namespace", apply.ApplySetAdditionalNamespacesAnnotation: "web"})
	got := contentsOf(parent)
	if !got.Members.Equal(c.Members) || !got.Namespaces.Equal(c.Namespaces) || !got.GroupKinds.Equal(c.GroupKinds) {
		t.Errorf("read back %+v, want %+v", got, c)
	}
}

// A Namespace the app dropped from its render while objects in it stay,
// or that holds a member the prune keeps, is not deleted with them.
func TestNamespacesInUse(t *testing.T) {
	a := &Set{App: "a", ID: ID("a")}
	n := &Neighbours{holders: map[string][]string{}, apps: map[string]string{}, inNamespace: map[string][]string{}}
	doomed := []*unstructured.Unstructured{
		obj("Namespace", "", "web", nil), obj("Namespace", "", "data", nil), obj("Namespace", "", "gone", nil),
		obj("PersistentVolumeClaim", "data", "db", map[string]string{"fleet.kubectl.io/prune": "disabled"}),
		obj("ConfigMap", "gone", "old", nil),
	}
	inUse := n.NamespacesInUse(a, sets.New("web"), doomed)
	for _, tt := range []struct {
		ns     string
		keep   bool
		reason string
	}{
		{"web", true, "objects app a still applies are in it; left in place and no longer part of app a"},
		{"data", true, "persistentvolumeclaim/db, which is kept, is in it; left in place and no longer part of app a"},
		{"gone", false, ""},
	} {
		keep, _, reason := n.Keep(a, obj("Namespace", "", tt.ns, nil), inUse)
		if keep != tt.keep || reason != tt.reason {
			t.Errorf("namespace %s: keep %v, %q", tt.ns, keep, reason)
		}
	}
}
