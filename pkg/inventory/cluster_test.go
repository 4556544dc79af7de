package inventory_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubectl/pkg/cmd/apply"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

func parent(app string) *unstructured.Unstructured {
	return kubetest.Object("v1", "ConfigMap", inventory.Namespace, inventory.ParentName(app))
}

func labelled(o *unstructured.Unstructured, id string) *unstructured.Unstructured {
	o.SetLabels(map[string]string{apply.ApplysetPartOfLabel: id})
	return o
}

func contents(members ...string) inventory.Contents {
	c := inventory.ContentsOf(nil)
	for _, m := range members {
		c.Members.Insert(m)
		parts := strings.Split(m, "/")
		c.GroupKinds.Insert(schema.ParseGroupKind(parts[0]))
		if len(parts) == 3 {
			c.Namespaces.Insert(parts[1])
		}
	}
	return c
}

// write records an app's parent as apply does.
func write(t *testing.T, c *kubetest.Cluster, app string, members ...string) {
	t.Helper()
	s := &inventory.Set{App: app, ID: inventory.ID(app)}
	if err := s.WriteParent(context.Background(), c.Client, contents(members...), time.Time{}, "kubectl-fleet", "test"); err != nil {
		t.Fatal(err)
	}
}

// loaders read an app's set, alone or with its neighbours.
var loaders = map[string]func(context.Context, *kube.Client, string) (*inventory.Set, error){
	"Load": inventory.Load,
	"LoadWithNeighbours": func(ctx context.Context, c *kube.Client, app string) (*inventory.Set, error) {
		set, _, err := inventory.LoadWithNeighbours(ctx, c, app)
		return set, err
	},
}

// TestLoadRefusesForeignParent: a parent another tool made, or one with
// another set's ID or none, is never adopted, whether read alone or with
// the neighbours' parents.
func TestLoadRefusesForeignParent(t *testing.T) {
	for name, load := range loaders {
		for _, tt := range []struct {
			name    string
			tooling string
			id      string
			wantErr string
		}{
			{"another tool", "kubectl/v1.37.1", inventory.ID("web"), "ApplySet parent of another tool"},
			{"no tooling", "", inventory.ID("web"), "ApplySet parent of another tool"},
			{"another set's ID", "kubectl-fleet/v0.1.0", inventory.ID("api"), "has ApplySet ID"},
			{"no set ID", "kubectl-fleet/v0.1.0", "", "has ApplySet ID"},
			{"ours", "kubectl-fleet/v0.1.0", inventory.ID("web"), ""},
		} {
			c := kubetest.New(t)
			p := parent("web")
			if tt.id != "" {
				p.SetLabels(map[string]string{apply.ApplySetParentIDLabel: tt.id})
			}
			p.SetAnnotations(map[string]string{apply.ApplySetToolingAnnotation: tt.tooling})
			c.Put(p)
			set, err := load(context.Background(), c.Client, "web")
			switch {
			case tt.wantErr == "" && (err != nil || !set.Exists):
				t.Errorf("%s: %s: %v, %+v", name, tt.name, err, set)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("%s: %s: %v, want an error saying %q", name, tt.name, err, tt.wantErr)
			}
		}
		set, err := load(context.Background(), kubetest.New(t).Client, "web")
		if err != nil || set.Exists || set.ID != inventory.ID("web") {
			t.Errorf("%s: no parent: %v, %+v", name, err, set)
		}
	}
}

// TestWriteParentLoadRoundTrip: what WriteParent records, Load reads back.
func TestWriteParentLoadRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	want := contents("ConfigMap/web/settings", "Deployment.apps/web/web", "Namespace/web", "ClusterPolicy.policy.example.com/baseline", "Secret/db/password")
	at := time.Date(2026, 11, 21, 1, 57, 8, 0, time.FixedZone("CET", 3600))
	s := &inventory.Set{App: "web", ID: inventory.ID("web")}
	if err := s.WriteParent(ctx, c.Client, want, at, "kubectl-fleet", "v0.1.0"); err != nil {
		t.Fatal(err)
	}
	if c.Live(kubetest.Object("v1", "Namespace", "", inventory.Namespace)) == nil {
		t.Errorf("namespace %s not created", inventory.Namespace)
	}
	got, err := inventory.Load(ctx, c.Client, "web")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Exists || got.LastApplied != "2026-11-21T00:57:08Z" {
		t.Errorf("exists %v, last applied %q", got.Exists, got.LastApplied)
	}
	if !got.GroupKinds.Equal(want.GroupKinds) {
		t.Errorf("kinds: read %v, wrote %v", got.GroupKinds, want.GroupKinds)
	}
	for _, f := range []struct {
		name      string
		want, got []string
	}{
		{"namespaces", sets.List(want.Namespaces), sets.List(got.Namespaces)},
		{"members", sets.List(want.Members), sets.List(got.Contents.Members)},
	} {
		if diff := cmp.Diff(f.want, f.got); diff != "" {
			t.Errorf("%s (-written +read):\n%s", f.name, diff)
		}
	}
	ann := c.Live(parent("web")).GetAnnotations()
	if ann[apply.ApplySetToolingAnnotation] != "kubectl-fleet/v0.1.0" || ann[inventory.AppAnnotation] != "web" {
		t.Errorf("parent's annotations: %v", ann)
	}

	// A write without a time keeps the one recorded.
	if err := got.WriteParent(ctx, c.Client, contents("Namespace/web"), time.Time{}, "kubectl-fleet", "v0.1.0"); err != nil {
		t.Fatal(err)
	}
	if again, err := inventory.Load(ctx, c.Client, "web"); err != nil || again.LastApplied != "2026-11-21T00:57:08Z" || again.Contents.Members.Len() != 1 {
		t.Errorf("after a second write: %v, %+v", err, again)
	}
}

// TestMembers: the live members are the objects the parent (or extra)
// records that carry the set's label, of the kinds and in the namespaces
// recorded; a labelled object recorded nowhere is no member; kinds the
// cluster does not serve are skipped.
func TestMembers(t *testing.T) {
	c := kubetest.New(t)
	web := inventory.ID("web")
	c.Put(
		labelled(kubetest.Object("v1", "ConfigMap", "web", "member"), web),
		labelled(kubetest.Object("v1", "ConfigMap", "web", "copy-of-member"), web),
		labelled(kubetest.Object("v1", "ConfigMap", "elsewhere", "unrecorded-namespace"), web),
		kubetest.Object("v1", "ConfigMap", "web", "unlabelled"),
		labelled(kubetest.Object("v1", "ConfigMap", "web", "other-set"), inventory.ID("api")),
		labelled(kubetest.Object("v1", "Secret", "web", "unrecorded-kind"), web),
		labelled(kubetest.Object(kubetest.ClusterPolicy.GroupVersion().String(), kubetest.ClusterPolicy.Kind, "", "cluster-scoped"), web),
	)
	write(t, c, "web", "ConfigMap/web/member", "ClusterPolicy.policy.example.com/cluster-scoped", "Widget.unserved.example.com/web/w")
	set, err := inventory.Load(context.Background(), c.Client, "web")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		extra inventory.Contents
		want  []string
	}{
		{"recorded", inventory.ContentsOf(nil), []string{"ClusterPolicy.policy.example.com/cluster-scoped", "ConfigMap/web/member"}},
		// Labelled but recorded nowhere (a user's copy of a member, a
		// controller that copies labels): no member.
		{"and extra", contents("Secret/web/unrecorded-kind", "ConfigMap/elsewhere/x"), []string{
			"ClusterPolicy.policy.example.com/cluster-scoped", "ConfigMap/web/member", "Secret/web/unrecorded-kind",
		}},
	} {
		members, err := set.Members(context.Background(), c.Client, tt.extra)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got []string
		for _, m := range members {
			got = append(got, object.Path(m))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}

	// KeepMembers gives keep the members alone, and keeps what it returns.
	var given []string
	var mu sync.Mutex
	kept, err := inventory.KeepMembers(context.Background(), c.Client, set, contents("Secret/web/unrecorded-kind"), kube.NoManagedFields, func(m *unstructured.Unstructured) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		given = append(given, object.Path(m))
		return "Kept/" + m.GetName(), m.GetKind() != "Secret"
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(given)
	if want := []string{"ClusterPolicy.policy.example.com/cluster-scoped", "ConfigMap/web/member", "Secret/web/unrecorded-kind"}; !slices.Equal(given, want) {
		t.Errorf("keep was given %v, want %v", given, want)
	}
	if want := []string{"Kept/cluster-scoped", "Kept/member"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}

	// A list the server refuses is the server's error, never no members:
	// a prune that read none would delete none, a status would say none.
	c.Inject(kubetest.Fault{Verb: "list", Resource: "configmaps", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC"))})
	if members, err := set.Members(context.Background(), c.Client, inventory.ContentsOf(nil)); !apierrors.IsForbidden(err) {
		t.Errorf("a refused list: %d members, error %v; want Forbidden", len(members), err)
	}
}

// TestLoadNeighbours: the other apps' parents say what they hold; the
// app's own parent and parents without an app are not neighbours; a user
// who may not list them gets none, not an error.
func TestLoadNeighbours(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	write(t, c, "web", "Namespace/shared", "ConfigMap/shared/web-only")
	write(t, c, "api", "Namespace/shared", "ConfigMap/shared/api-only", "ConfigMap/api/config")
	write(t, c, "db", "ConfigMap/db/config")
	stray := parent("stray") // no app annotation: kubectl's own ApplySet, say
	stray.SetLabels(map[string]string{apply.ApplySetParentIDLabel: "applyset-xyz-v1"})
	stray.Object["data"] = map[string]any{inventory.MembersKey: "ConfigMap/api/config"}
	c.Put(stray)
	ghost := parent("ghost") // an app's name and data, but no ApplySet ID: no parent
	ghost.SetAnnotations(map[string]string{inventory.AppAnnotation: "ghost"})
	ghost.Object["data"] = map[string]any{inventory.MembersKey: "ConfigMap/ghost/x"}
	c.Put(ghost)

	web := &inventory.Set{App: "web", ID: inventory.ID("web")}
	check := func(name string, n *inventory.Neighbours) {
		t.Helper()
		for _, tt := range []struct {
			obj    *unstructured.Unstructured
			keep   bool
			to     string
			reason string
		}{
			{kubetest.Object("v1", "Namespace", "", "shared"), true, "api", "shared with app api, which still applies it; left to it"},
			{kubetest.Object("v1", "ConfigMap", "shared", "web-only"), false, "", ""},
			{kubetest.Object("v1", "ConfigMap", "api", "config"), true, "api", "shared with app api, which still applies it; left to it"},
			{kubetest.Object("v1", "Namespace", "", "db"), true, "", "app db has objects in it; left in place and no longer part of app web"},
			{kubetest.Object("v1", "ConfigMap", "ghost", "x"), false, "", ""},
		} {
			if keep, to, reason := keepOf(n, web, tt.obj, nil); keep != tt.keep || to != tt.to || reason != tt.reason {
				t.Errorf("%s: Keep(%s) = %v, %q, %q", name, object.Path(tt.obj), keep, to, reason)
			}
		}
		if warning := n.Claim(web, "ConfigMap/db/config", &kube.Live{Labels: map[string]string{apply.ApplysetPartOfLabel: inventory.ID("db")}}).Warning; warning != "shared with app db, which applies it too (the last apply wins)" {
			t.Errorf("%s: Claim of db's object warned %q", name, warning)
		}
	}
	n, err := inventory.LoadNeighbours(ctx, c.Client, "web")
	if err != nil {
		t.Fatal(err)
	}
	check("LoadNeighbours", n)
	// The app's own parent (its records) is not asked for: the caller
	// read it, and it is most of a one-app cluster's list.
	if got := c.Requests(); len(got) == 0 || !leavesOut(t, got[len(got)-1], inventory.ParentName("web"), inventory.ParentName("api")) {
		t.Errorf("LoadNeighbours asked for the app's own parent: %+v", got)
	}
	// With the app's own set, from the same one list.
	sent := len(c.Requests())
	set, n, err := inventory.LoadWithNeighbours(ctx, c.Client, "web")
	if err != nil || !set.Exists || !set.Contents.Members.Has("ConfigMap/shared/web-only") {
		t.Fatalf("LoadWithNeighbours: %v, %+v", err, set)
	}
	check("LoadWithNeighbours", n)
	if got := c.Requests()[sent:]; len(got) != 1 {
		t.Errorf("LoadWithNeighbours sent %d requests, want one list: %+v", len(got), got)
	}

	c.Inject(kubetest.Fault{Verb: "list", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC"))})
	n, err = inventory.LoadNeighbours(ctx, c.Client, "web")
	if err != nil {
		t.Fatalf("not allowed to list: %v", err)
	}
	// Not knowing the other apps, nothing is deleted: the member stays in
	// the set, for a prune that can read them to decide.
	if d := n.Decide(web, kubetest.Object("v1", "ConfigMap", "shared", "web-only"), nil); !d.Retain || !strings.Contains(d.Reason, "the other apps' inventories could not be read") {
		t.Errorf("not allowed to list, yet decided: %+v", d)
	}
	// Not allowed to list, the set is read alone.
	c.Inject(kubetest.Fault{Verb: "list", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC"))})
	set, n, err = inventory.LoadWithNeighbours(ctx, c.Client, "web")
	if err != nil || !set.Exists {
		t.Fatalf("LoadWithNeighbours not allowed to list: %v, %+v", err, set)
	}
	if d := n.Decide(web, kubetest.Object("v1", "ConfigMap", "shared", "web-only"), nil); !d.Retain {
		t.Errorf("LoadWithNeighbours not allowed to list, yet decided: %+v", d)
	}
}

// TestAppliedRoundTrip: what the last apply sent survives the parent, with
// the plugin version that wrote it; a record past MaxApplied is dropped
// (everything is sent next time) rather than failing the parent's write.
func TestAppliedRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	want := map[string]inventory.Applied{
		"ConfigMap/web/settings":  {Digest: "0a1b", ResourceVersion: "17", UID: "u-1"},
		"Deployment.apps/web/web": {Digest: "2c3d", ResourceVersion: "18", UID: "u-2"},
	}
	s := &inventory.Set{App: "web", ID: inventory.ID("web"), Applied: want}
	if err := s.WriteParent(ctx, c.Client, contents("Namespace/web"), time.Now(), "kubectl-fleet", "v0.2.0"); err != nil {
		t.Fatal(err)
	}
	got, err := inventory.Load(ctx, c.Client, "web")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Applied); diff != "" || got.Version != "v0.2.0" {
		t.Errorf("applied (-written +read):\n%s\nversion %q", diff, got.Version)
	}
	huge := map[string]inventory.Applied{}
	for i := 0; len(huge)*60 < inventory.MaxApplied; i++ {
		huge[fmt.Sprintf("ConfigMap/web/settings-%06d", i)] = inventory.Applied{Digest: strings.Repeat("f", 32), ResourceVersion: "123456", UID: "u"}
	}
	got.Applied = huge
	if err := got.WriteParent(ctx, c.Client, contents("Namespace/web"), time.Now(), "kubectl-fleet", "v0.2.0"); err != nil {
		t.Fatal(err)
	}
	if again, err := inventory.Load(ctx, c.Client, "web"); err != nil || len(again.Applied) != 0 {
		t.Errorf("a record past the bound: %v, %d entries read back", err, len(again.Applied))
	}
}

// TestMoved: only objects at the version the last apply of this very
// render got back count as unmoved; no record, another version, an object
// gone, another render or another plugin version make them moved.
func TestMoved(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	obj := func(name string) *unstructured.Unstructured { return kubetest.Object("v1", "ConfigMap", "web", name) }
	c.Put(obj("same"), obj("edited"), obj("unrecorded"), obj("restored"))
	rv := func(name string) string { return c.Live(obj(name)).GetResourceVersion() }
	uid := func(name string) string { return string(c.Live(obj(name)).GetUID()) }
	s := &inventory.Set{App: "web", Exists: true, Version: "v1", AppliedDigest: "render-1", Applied: map[string]inventory.Applied{
		"ConfigMap/web/same":   {Digest: "d", ResourceVersion: rv("same"), UID: uid("same")},
		"ConfigMap/web/edited": {Digest: "d", ResourceVersion: rv("edited"), UID: uid("edited")},
		"ConfigMap/web/gone":   {Digest: "d", ResourceVersion: "1", UID: "u-gone"},
		// Its resourceVersion came again (a cluster restored from a
		// backup): another object.
		"ConfigMap/web/restored": {Digest: "d", ResourceVersion: rv("restored"), UID: "u-before-the-restore"},
	}}
	live := c.Live(obj("edited"))
	live.SetLabels(map[string]string{"by": "hand"})
	c.Put(live)
	objs := []*unstructured.Unstructured{obj("same"), obj("edited"), obj("unrecorded"), obj("gone"), obj("restored")}
	names := func(objs []*unstructured.Unstructured) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.GetName())
		}
		return out
	}
	for _, tt := range []struct {
		name, digest, version string
		want                  []string
	}{
		{"this render", "render-1", "v1", []string{"edited", "unrecorded", "gone", "restored"}},
		{"another render", "render-2", "v1", names(objs)},
		{"another plugin version", "render-1", "v2", names(objs)},
		{"a development build", "render-1", "dev", names(objs)},
	} {
		if diff := cmp.Diff(tt.want, names(s.Moved(ctx, c.Client, objs, tt.digest, tt.version))); diff != "" {
			t.Errorf("%s: moved (-want +got):\n%s", tt.name, diff)
		}
	}
}

// keepOf is Decide's answer as keep, to and reason.
func keepOf(n *inventory.Neighbours, s *inventory.Set, m *unstructured.Unstructured, inUse map[string]string) (bool, string, string) {
	d := n.Decide(s, m, inUse)
	return d.Keep(), d.To, d.Reason
}

// leavesOut reports whether r is a list whose field selector leaves out
// the object named out and keeps the one named in.
func leavesOut(t *testing.T, r kubetest.Request, out, in string) bool {
	t.Helper()
	sel, err := fields.ParseSelector(r.Fields)
	if err != nil {
		t.Fatalf("%+v: %v", r, err)
	}
	return r.Verb == "list" && !sel.Matches(fields.Set{"metadata.name": out}) && sel.Matches(fields.Set{"metadata.name": in})
}
