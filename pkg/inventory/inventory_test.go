package inventory

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubectl/pkg/cmd/apply"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

func obj(kind, ns, name string, ann map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind}}
	o.SetNamespace(ns)
	o.SetName(name)
	o.SetAnnotations(ann)
	return o
}

// neighbours builds what LoadNeighbours reads from parents: app b records
// the Namespace "shared" and a ConfigMap in it; app c, which no longer
// records them, had adopted ConfigMap/x/adopted-by-c.
func neighbours() *Neighbours {
	return &Neighbours{
		holders:     map[string][]string{"Namespace/shared": {"b"}, "ConfigMap/shared/b": {"b"}},
		apps:        map[string]string{ID("b"): "b", ID("c"): "c"},
		inNamespace: map[string][]string{"shared": {"b"}},
		adopted:     map[string]sets.Set[string]{"b": sets.New[string](), "c": sets.New("ConfigMap/x/adopted-by-c")},
	}
}

func TestClaim(t *testing.T) {
	a := &Set{App: "a", ID: ID("a"), Contents: ContentsOf(nil)}
	a.Contents.Members.Insert("ConfigMap/x/a")
	n := neighbours()
	for _, tt := range []struct {
		name        string
		path        string
		holder      string // the live part-of label; "-" for no live object, "" for none
		wantPartOf  string
		wantWarning string
		wantAdopt   bool
	}{
		{"new object", "ConfigMap/x/a", "-", a.ID, "", false},
		{"ours", "ConfigMap/x/a", a.ID, a.ID, "", false},
		{"unlabelled live object", "ConfigMap/x/a", "", a.ID, "", true},
		{"our label, no record of ours", "ConfigMap/x/copy", a.ID, a.ID, "labelled as app a's, which does not record it; adopted", true},
		{"shared, held by b", "Namespace/shared", ID("b"), ID("b"), "shared with app b, which applies it too (the last apply wins)", false},
		{"shared, held by us", "Namespace/shared", a.ID, a.ID, "shared with app b, which applies it too (the last apply wins)", false},
		{"shared, new", "Namespace/shared", "-", a.ID, "shared with app b, which applies it too (the last apply wins)", false},
		{"labelled as c's, which does not record it", "ConfigMap/x/moved", ID("c"), a.ID, "labelled as app c's, which does not record it; adopted by app a", true},
		{"labelled as c's, which had adopted it", "ConfigMap/x/adopted-by-c", ID("c"), a.ID, "labelled as app c's, which does not record it; adopted by app a", true},
		{"another tool's set", "ConfigMap/x/foreign", "applyset-xyz-v1", a.ID, "taken from another ApplySet (applyset.kubernetes.io/part-of=applyset-xyz-v1)", true},
	} {
		var live *kube.Live
		if tt.holder != "-" {
			live = &kube.Live{}
			if tt.holder != "" {
				live.Labels = map[string]string{apply.ApplysetPartOfLabel: tt.holder}
			}
		}
		got := n.Claim(a, tt.path, live)
		if want := (Claim{PartOf: tt.wantPartOf, Warning: tt.wantWarning, Adopt: tt.wantAdopt}); got != want {
			t.Errorf("%s: Claim = %+v; want %+v", tt.name, got, want)
		}
	}
}

// TestClaimMoved: an object handed over by an app of the run is moved,
// and stays adopted when the app it leaves had adopted it (someone
// else's object is never deleted because it changed apps).
func TestClaimMoved(t *testing.T) {
	a := &Set{App: "a", ID: ID("a"), Contents: ContentsOf(nil)}
	n := neighbours()
	n.inRun, n.rendering = sets.New("c"), map[string]string{}
	n.holders["ConfigMap/x/adopted-by-c"] = []string{"c"}
	n.holders["ConfigMap/x/made-by-c"] = []string{"c"}
	for path, want := range map[string]Claim{
		"ConfigMap/x/adopted-by-c": {PartOf: a.ID, Warning: "moved from app c to app a", Adopt: true},
		"ConfigMap/x/made-by-c":    {PartOf: a.ID, Warning: "moved from app c to app a"},
	} {
		if got := n.Claim(a, path, &kube.Live{Labels: map[string]string{apply.ApplysetPartOfLabel: ID("c")}}); got != want {
			t.Errorf("%s: Claim = %+v; want %+v", path, got, want)
		}
	}
}

func TestKeep(t *testing.T) {
	a := &Set{App: "a", ID: ID("a"), Adopted: sets.New("Namespace/monitoring", "ConfigMap/x/adopted")}
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
		{obj("Namespace", "", "monitoring", nil), true, "", "adopted: it existed before app a applied it; released, not deleted (fleet.kubectl.io/prune: always deletes it)"},
		{obj("ConfigMap", "x", "adopted", map[string]string{"fleet.kubectl.io/prune": "enabled"}), true, "", "adopted: it existed before app a applied it; released, not deleted (fleet.kubectl.io/prune: always deletes it)"},
		{obj("ConfigMap", "x", "adopted", map[string]string{"fleet.kubectl.io/prune": "always"}), false, "", ""},
	} {
		keep, to, reason := keepOf(n, a, tt.obj, nil)
		if keep != tt.keep || to != tt.to || reason != tt.reason {
			t.Errorf("%s %s: Keep = %v, %q, %q", tt.obj.GetKind(), tt.obj.GetName(), keep, to, reason)
		}
	}
	// A Namespace b has objects in, that b itself does not record.
	n.holders = map[string][]string{}
	if keep, _, reason := keepOf(n, a, obj("Namespace", "", "shared", nil), nil); !keep || reason != "app b has objects in it; left in place and no longer part of app a" {
		t.Errorf("a Namespace with b's objects: %v, %q", keep, reason)
	}
}

func TestContentsRoundTrip(t *testing.T) {
	objs := []*unstructured.Unstructured{obj("Namespace", "", "web", nil), obj("ConfigMap", "web", "settings", nil)}
	c := ContentsOf(objs)
	parent := &corev1.ConfigMap{Data: map[string]string{MembersKey: "ConfigMap/web/settings\nNamespace/web", AdoptedKey: "Namespace/web\n"}}
	parent.SetAnnotations(map[string]string{apply.ApplySetGKsAnnotation: "ConfigMap,Namespace", apply.ApplySetAdditionalNamespacesAnnotation: "web"})
	got := contentsOf(parent)
	if !got.Members.Equal(c.Members) || !got.Namespaces.Equal(c.Namespaces) || !got.GroupKinds.Equal(c.GroupKinds) {
		t.Errorf("read back %+v, want %+v", got, c)
	}
	if adopted := adoptedOf(parent); !adopted.Equal(sets.New("Namespace/web")) {
		t.Errorf("adopted: %v", sets.List(adopted))
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
		keep, _, reason := keepOf(n, a, obj("Namespace", "", tt.ns, nil), inUse)
		if keep != tt.keep || reason != tt.reason {
			t.Errorf("namespace %s: keep %v, %q", tt.ns, keep, reason)
		}
	}
}

// A release drops our label and our field manager's entries, keeps the
// others', and clears the list with one empty entry when ours was the
// only one (an empty list would leave it unchanged); handed to another
// app, only the label changes. The patch holds while the object does.
func TestReleasePatch(t *testing.T) {
	entry := func(m string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationApply}
	}
	for _, tt := range []struct {
		name     string
		managers []string
		to       string
		want     string
	}{
		{"ours and kubectl's", []string{"kubectl-fleet", "kubectl-edit"}, "", `{"metadata":{"labels":{"applyset.kubernetes.io/part-of":null},"managedFields":[{"manager":"kubectl-edit","operation":"Apply"}],"resourceVersion":"7","uid":"u1"}}`},
		{"ours alone", []string{"kubectl-fleet"}, "", `{"metadata":{"labels":{"applyset.kubernetes.io/part-of":null},"managedFields":[{}],"resourceVersion":"7","uid":"u1"}}`},
		{"not ours", []string{"helm"}, "", `{"metadata":{"labels":{"applyset.kubernetes.io/part-of":null},"resourceVersion":"7","uid":"u1"}}`},
		{"handed to app b", []string{"kubectl-fleet"}, "b", `{"metadata":{"labels":{"applyset.kubernetes.io/part-of":"` + ID("b") + `"},"resourceVersion":"7","uid":"u1"}}`},
	} {
		o := obj("ConfigMap", "x", "c", nil)
		o.SetResourceVersion("7")
		o.SetUID("u1")
		var mf []metav1.ManagedFieldsEntry
		for _, m := range tt.managers {
			mf = append(mf, entry(m))
		}
		o.SetManagedFields(mf)
		got, err := releasePatch(o, tt.to, "kubectl-fleet")
		if err != nil || string(got) != tt.want {
			t.Errorf("%s:\n got %s, %v\nwant %s", tt.name, got, err, tt.want)
		}
	}
}

// keepOf is Decide's answer as keep, to and reason.
func keepOf(n *Neighbours, s *Set, m *unstructured.Unstructured, inUse map[string]string) (bool, string, string) {
	d := n.Decide(s, m, inUse)
	return d.Keep(), d.To, d.Reason
}

// TestDecideThisRun: what another app of this run renders is handed to
// it, whatever the order the apps run in (an adopted member is released
// for it to adopt in turn); a Namespace it renders objects in, and a CRD
// whose kind it renders, are left in place.
func TestDecideThisRun(t *testing.T) {
	a := &Set{App: "a", ID: ID("a"), Adopted: sets.New("ConfigMap/x/adopted")}
	n := neighbours()
	n.rendering = map[string]string{"ConfigMap/x/moved": "c", "ConfigMap/x/adopted": "c", "ConfigMap/inside/cm": "c", "Widget.example.com/x/w": "c", "ConfigMap/x/claimed": "c"}
	// c recorded "claimed" already (it ran first); b keeps "handed" only
	// until the app it handed it to records it: b no longer applies it.
	n.holders["ConfigMap/x/claimed"] = []string{"c"}
	n.holders["ConfigMap/x/handed"], n.handingOver = []string{"b"}, map[string][]string{"ConfigMap/x/handed": {"b"}}
	crd := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": "widgets.example.com"}, "spec": map[string]any{"group": "example.com", "names": map[string]any{"kind": "Widget"}}}}
	other := crd.DeepCopy()
	unstructured.SetNestedField(other.Object, "Gadget", "spec", "names", "kind")
	for _, tt := range []struct {
		obj  *unstructured.Unstructured
		want Decision
	}{
		{obj("ConfigMap", "x", "moved", nil), Decision{To: "c", Stay: true, Reason: "rendered by app c in this run; handed to it, not deleted"}},
		{obj("ConfigMap", "x", "moved", map[string]string{"fleet.kubectl.io/prune": "always"}), Decision{To: "c", Stay: true, Reason: "rendered by app c in this run; handed to it, not deleted"}},
		{obj("ConfigMap", "x", "claimed", nil), Decision{To: "c", Reason: "rendered by app c in this run; handed to it, not deleted"}},
		{obj("ConfigMap", "x", "handed", nil), Decision{Delete: true}},
		{obj("ConfigMap", "x", "adopted", nil), Decision{Reason: "rendered by app c in this run; released for it to adopt (it existed before app a applied it)"}},
		{obj("Namespace", "", "inside", nil), Decision{Reason: "app c renders objects in it in this run; left in place and no longer part of app a"}},
		{crd, Decision{Reason: "app c renders custom resources of its kind in this run; left in place and no longer part of app a"}},
		{other, Decision{Delete: true}},
		{obj("ConfigMap", "x", "gone", nil), Decision{Delete: true}},
	} {
		if got := n.Decide(a, tt.obj, nil); got != tt.want {
			t.Errorf("%s: Decide = %+v, want %+v", tt.obj.GetName(), got, tt.want)
		}
	}
	// Not knowing the other apps, nothing is decided.
	n.unknown = errors.New("forbidden")
	if got := n.Decide(a, obj("ConfigMap", "x", "gone", nil), nil); !got.Retain || got.Delete {
		t.Errorf("neighbours unknown: %+v", got)
	}
}

// TestOwnedBy: a set is its fleet's; another fleet's app of the same name
// is refused; a parent of an earlier version is claimed (by OwnedBy, not
// by Foreign, which only reads).
func TestOwnedBy(t *testing.T) {
	for _, tt := range []struct {
		name      string
		set       Set
		fleet     string
		wantErr   bool
		wantFleet string
	}{
		{"new", Set{App: "web"}, "team-a", false, "team-a"},
		{"ours", Set{App: "web", Exists: true, Fleet: "team-a"}, "team-a", false, "team-a"},
		{"an earlier version's", Set{App: "web", Exists: true}, "team-a", false, "team-a"},
		{"another fleet's", Set{App: "web", Exists: true, Fleet: "team-a"}, "team-b", true, "team-a"},
		{"no fleet file", Set{App: "web", Exists: true, Fleet: "team-a"}, "", false, "team-a"},
	} {
		before := tt.set.Fleet
		if err := tt.set.Foreign(tt.fleet); (err != nil) != tt.wantErr || tt.set.Fleet != before {
			t.Errorf("%s: Foreign: %v, fleet %q: it decides as OwnedBy, and claims nothing", tt.name, err, tt.set.Fleet)
		}
		err := tt.set.OwnedBy(tt.fleet)
		if (err != nil) != tt.wantErr || tt.set.Fleet != tt.wantFleet {
			t.Errorf("%s: %v, fleet %q", tt.name, err, tt.set.Fleet)
		}
		if err != nil && (!errors.Is(err, ErrOtherFleet) || !strings.Contains(err.Error(), "app web on this cluster is fleet team-a's")) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}
