package apply_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"
	kubectlapply "k8s.io/kubectl/pkg/cmd/apply"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

func ns(name string) *unstructured.Unstructured { return kubetest.Object("v1", "Namespace", "", name) }

// cm is a ConfigMap whose data is the key=value pairs given.
func cm(namespace, name string, kv ...string) *unstructured.Unstructured {
	o := kubetest.Object("v1", "ConfigMap", namespace, name)
	data := map[string]any{}
	for _, p := range kv {
		k, v, _ := strings.Cut(p, "=")
		data[k] = v
	}
	o.Object["data"] = data
	return o
}

func annotate(o *unstructured.Unstructured, key, value string) *unstructured.Unstructured {
	o.SetAnnotations(map[string]string{key: value})
	return o
}

// run applies cfg (app "web" unless named) and returns each object's
// change by Ref.
func run(t *testing.T, c *kubetest.Cluster, cfg apply.Config) (map[string]apply.Change, error) {
	t.Helper()
	if cfg.App == "" {
		cfg.App = "web"
	}
	cfg.Version = "test"
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 4
	}
	var mu sync.Mutex
	got := map[string]apply.Change{}
	report := cfg.Report
	cfg.Report = func(ch apply.Change) {
		mu.Lock()
		got[ch.Ref] = ch
		mu.Unlock()
		if report != nil {
			report(ch)
		}
	}
	err := apply.Run(context.Background(), c.Client, cfg)
	return got, err
}

// mustRun is run that fails the test on an error.
func mustRun(t *testing.T, c *kubetest.Cluster, cfg apply.Config) map[string]apply.Change {
	t.Helper()
	got, err := run(t, c, cfg)
	if err != nil {
		t.Fatalf("apply: %v (changes %v)", err, got)
	}
	return got
}

func actions(changes map[string]apply.Change) map[string]change.Action {
	out := map[string]change.Action{}
	for ref, ch := range changes {
		out[ref] = ch.Action
	}
	return out
}

// renderDigest is the digest of objs under the cluster's key.
func renderDigest(t *testing.T, c *kubetest.Cluster, objs []*unstructured.Unstructured) string {
	t.Helper()
	key, err := digest.KeyOf(context.Background(), c.Client)
	if err != nil {
		t.Fatal(err)
	}
	return digest.Render(objs, key)
}

// members is what the app's parent records.
func members(t *testing.T, c *kubetest.Cluster, app string) []string {
	t.Helper()
	set, err := inventory.Load(context.Background(), c.Client, app)
	if err != nil {
		t.Fatal(err)
	}
	return sets.List(set.Contents.Members)
}

func TestApplyCreatesThenUnchangedThenConfigured(t *testing.T) {
	c := kubetest.New(t)
	for _, step := range []struct {
		name    string
		objects []*unstructured.Unstructured
		want    map[string]change.Action
	}{
		{"first apply", []*unstructured.Unstructured{ns("web"), cm("web", "a", "k=1"), cm("web", "b", "k=1")},
			map[string]change.Action{"namespace/web": change.Created, "configmap/a": change.Created, "configmap/b": change.Created}},
		{"same render", []*unstructured.Unstructured{ns("web"), cm("web", "a", "k=1"), cm("web", "b", "k=1")},
			map[string]change.Action{"namespace/web": change.Unchanged, "configmap/a": change.Unchanged, "configmap/b": change.Unchanged}},
		{"a changed", []*unstructured.Unstructured{ns("web"), cm("web", "a", "k=2"), cm("web", "b", "k=1")},
			map[string]change.Action{"namespace/web": change.Unchanged, "configmap/a": change.Configured, "configmap/b": change.Unchanged}},
	} {
		before := map[string]string{}
		for _, o := range step.objects {
			if live := c.Live(o); live != nil {
				before[o.GetName()] = live.GetResourceVersion()
			}
		}
		got := actions(mustRun(t, c, apply.Config{Objects: step.objects}))
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Fatalf("%s (-want +got):\n%s", step.name, diff)
		}
		for _, o := range step.objects {
			live := c.Live(o)
			if live.GetLabels()[kubectlapply.ApplysetPartOfLabel] != inventory.ID("web") {
				t.Errorf("%s: %s is not labelled a member: %v", step.name, o.GetName(), live.GetLabels())
			}
			if moved := live.GetResourceVersion() != before[o.GetName()]; moved != (got[object.Ref(o)] != change.Unchanged) {
				t.Errorf("%s: %s %s, resourceVersion %s → %s", step.name, object.Ref(o), got[object.Ref(o)], before[o.GetName()], live.GetResourceVersion())
			}
		}
	}
	if diff := cmp.Diff([]string{"ConfigMap/web/a", "ConfigMap/web/b", "Namespace/web"}, members(t, c, "web")); diff != "" {
		t.Errorf("parent's members (-want +got):\n%s", diff)
	}
}

// TestPruneOnlyMembers: --prune deletes a member no longer rendered, and
// never an object outside the set: one without the part-of label, or one
// with another set's.
func TestPruneOnlyMembers(t *testing.T) {
	c := kubetest.New(t)
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a"), cm("web", "gone")}})
	stranger := cm("web", "stranger")
	foreign := cm("web", "foreign")
	foreign.SetLabels(map[string]string{kubectlapply.ApplysetPartOfLabel: inventory.ID("other")})
	c.Put(stranger, foreign)

	got := actions(mustRun(t, c, apply.Config{Prune: true, Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a")}}))
	want := map[string]change.Action{"namespace/web": change.Unchanged, "configmap/a": change.Unchanged, "configmap/gone": change.Pruned}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if c.Live(cm("web", "gone")) != nil {
		t.Error("configmap/gone was not deleted")
	}
	for _, o := range []*unstructured.Unstructured{stranger, foreign, cm("web", "a"), ns("web")} {
		if c.Live(o) == nil {
			t.Errorf("%s was deleted", object.Path(o))
		}
	}
	if diff := cmp.Diff([]string{"ConfigMap/web/a", "Namespace/web"}, members(t, c, "web")); diff != "" {
		t.Errorf("parent's members (-want +got):\n%s", diff)
	}
}

// A member re-created under its name by someone else between the listing
// and the delete is not deleted: the delete carries the listed uid.
func TestPruneOnlyTheObjectListed(t *testing.T) {
	c := kubetest.New(t)
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a"), cm("web", "gone")}})
	listed := c.Live(cm("web", "gone")).GetUID()
	recreated := false
	c.DynamicFake().PrependReactor("delete", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if d, ok := a.(clienttesting.DeleteAction); ok && d.GetName() == "gone" && !recreated {
			recreated = true
			c.Remove(cm("web", "gone"))
			c.Put(cm("web", "gone", "owner=someone-else"))
		}
		return false, nil, nil
	})
	got := actions(mustRun(t, c, apply.Config{Prune: true, Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a")}}))
	if got["configmap/gone"] != change.Skipped {
		t.Errorf("actions %v", got)
	}
	live := c.Live(cm("web", "gone"))
	if !recreated || live == nil || live.GetUID() == listed {
		t.Errorf("the object re-created since the listing was deleted (recreated %v, live %v)", recreated, live)
	}
}

// TestPruneByUID: a cluster-scoped object rendered with a namespace the
// render guessed is the member the server returned, not a prune, and the
// set records it without the namespace.
func TestPruneByUID(t *testing.T) {
	c := kubetest.New(t)
	policy := func() *unstructured.Unstructured {
		return kubetest.Object(kubetest.ClusterPolicy.GroupVersion().String(), kubetest.ClusterPolicy.Kind, "guessed", "baseline")
	}
	// The first apply fails: the parent recorded first still names the
	// member where the cluster puts it.
	c.Inject(kubetest.Fault{Verb: "patch", Resource: "clusterpolicies", Nth: 1, Err: apierrors.NewServiceUnavailable("try again")})
	if _, err := run(t, c, apply.Config{Prune: true, Objects: []*unstructured.Unstructured{policy()}}); err == nil {
		t.Fatal("the fault did not fail the apply")
	}
	if diff := cmp.Diff([]string{"ClusterPolicy.policy.example.com/baseline"}, members(t, c, "web")); diff != "" {
		t.Errorf("parent's members after a failure (-want +got):\n%s", diff)
	}
	mustRun(t, c, apply.Config{Prune: true, Objects: []*unstructured.Unstructured{policy()}})
	got := actions(mustRun(t, c, apply.Config{Prune: true, Objects: []*unstructured.Unstructured{policy()}}))
	if diff := cmp.Diff(map[string]change.Action{"clusterpolicy.policy.example.com/baseline": change.Unchanged}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if c.Live(policy()) == nil {
		t.Error("the policy was pruned")
	}
	if diff := cmp.Diff([]string{"ClusterPolicy.policy.example.com/baseline"}, members(t, c, "web")); diff != "" {
		t.Errorf("parent's members (-want +got):\n%s", diff)
	}
}

// TestPruneDisabledKeepsAndReleases: a member that asks never to be
// pruned is left in place and leaves the set.
func TestPruneDisabledKeepsAndReleases(t *testing.T) {
	c := kubetest.New(t)
	data := annotate(cm("web", "data"), object.PruneAnnotation, "disabled")
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a"), data}})
	changes := mustRun(t, c, apply.Config{Prune: true, Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a")}})
	if ch := changes["configmap/data"]; ch.Action != change.Kept || !strings.Contains(ch.Reason, "disabled") {
		t.Errorf("configmap/data: %+v, want kept because prune is disabled", ch)
	}
	live := c.Live(data)
	if live == nil {
		t.Fatal("configmap/data was deleted")
	}
	if label, ok := live.GetLabels()[kubectlapply.ApplysetPartOfLabel]; ok {
		t.Errorf("configmap/data is still labelled part of %q", label)
	}
	if diff := cmp.Diff([]string{"ConfigMap/web/a", "Namespace/web"}, members(t, c, "web")); diff != "" {
		t.Errorf("parent's members (-want +got):\n%s", diff)
	}
}

func TestCreateOnlyIsNotUpdated(t *testing.T) {
	c := kubetest.New(t)
	secret := func(value string) *unstructured.Unstructured {
		return annotate(cm("web", "token", "value="+value), object.ApplyAnnotation, "create-only")
	}
	if got := actions(mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), secret("first")}})); got["configmap/token"] != change.Created {
		t.Fatalf("first apply: %v", got)
	}
	ch := mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), secret("second")}})["configmap/token"]
	if ch.Action != change.Unchanged || !strings.Contains(ch.Reason, "create-only") {
		t.Errorf("second apply: %+v", ch)
	}
	if v, _, _ := unstructured.NestedString(c.Live(secret("")).Object, "data", "value"); v != "first" {
		t.Errorf("value %q, want first", v)
	}
}

// TestEmptyRenderPrune: an empty render refuses to prune everything
// without AllowEmpty, before any request; with it, everything goes.
func TestEmptyRenderPrune(t *testing.T) {
	c := kubetest.New(t)
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a")}})
	sent := len(c.Requests())
	if _, err := run(t, c, apply.Config{Prune: true}); !errors.Is(err, apply.ErrEmptyPrune) {
		t.Fatalf("empty render with prune: %v, want ErrEmptyPrune", err)
	}
	if n := len(c.Requests()) - sent; n != 0 || c.Live(cm("web", "a")) == nil {
		t.Fatalf("refused, yet %d requests sent; configmap/a there: %v", n, c.Live(cm("web", "a")) != nil)
	}
	got := actions(mustRun(t, c, apply.Config{Prune: true, AllowEmpty: true}))
	if diff := cmp.Diff(map[string]change.Action{"namespace/web": change.Pruned, "configmap/a": change.Pruned}, got); diff != "" {
		t.Errorf("with AllowEmpty (-want +got):\n%s", diff)
	}
}

// TestSharedObjectHandedOver: an object another app's parent records is
// handed to that app when this app drops it, not deleted.
func TestSharedObjectHandedOver(t *testing.T) {
	c := kubetest.New(t)
	mustRun(t, c, apply.Config{App: "web", Objects: []*unstructured.Unstructured{ns("shared"), cm("shared", "common"), cm("shared", "web-only")}})
	changes := mustRun(t, c, apply.Config{App: "api", Objects: []*unstructured.Unstructured{ns("shared"), cm("shared", "common")}})
	if w := changes["configmap/common"].Warning; !strings.Contains(w, "shared with app web") {
		t.Errorf("api's apply of the shared object warned %q", w)
	}
	if holder := c.Live(cm("shared", "common")).GetLabels()[kubectlapply.ApplysetPartOfLabel]; holder != inventory.ID("web") {
		t.Fatalf("the shared object moved to %q on api's apply; it stays with web", holder)
	}

	changes = mustRun(t, c, apply.Config{App: "web", Prune: true, Objects: []*unstructured.Unstructured{cm("shared", "web-only")}})
	for _, ref := range []string{"configmap/common", "namespace/shared"} {
		if ch := changes[ref]; ch.Action != change.Kept || !strings.Contains(ch.Reason, "shared with app api") {
			t.Errorf("%s: %+v, want kept for api", ref, ch)
		}
	}
	for _, o := range []*unstructured.Unstructured{cm("shared", "common"), ns("shared")} {
		live := c.Live(o)
		if live == nil {
			t.Fatalf("%s was deleted", object.Path(o))
		}
		if holder := live.GetLabels()[kubectlapply.ApplysetPartOfLabel]; holder != inventory.ID("api") {
			t.Errorf("%s is held by %q, want api's set", object.Path(o), holder)
		}
	}
}

// TestForbiddenListFallsBackToReads: a user who may not list gets a
// working apply that still tells created, configured and unchanged apart.
func TestForbiddenListFallsBackToReads(t *testing.T) {
	c := kubetest.New(t)
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), cm("web", "same"), cm("web", "edited", "k=1")}})
	c.Inject(kubetest.Fault{Verb: "list", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC: list not allowed"))})
	sent := len(c.Requests())
	got := actions(mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), cm("web", "same"), cm("web", "edited", "k=2"), cm("web", "new")}}))
	want := map[string]change.Action{"namespace/web": change.Unchanged, "configmap/same": change.Unchanged, "configmap/edited": change.Configured, "configmap/new": change.Created}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	reads := 0
	for _, r := range c.Requests()[sent:] {
		if r.Verb == "get" && r.Resource == "configmaps" && r.Namespace == "web" {
			reads++
		}
	}
	if reads != 3 {
		t.Errorf("%d configmaps read, want one per configmap (3)", reads)
	}
}

// TestFailedObjectStopsBeforePrune: when an object fails, nothing is
// pruned and the parent still records the union of the old and new
// members, so that the next apply converges.
func TestFailedObjectStopsBeforePrune(t *testing.T) {
	c := kubetest.New(t)
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a"), cm("web", "old")}})
	c.Inject(kubetest.Fault{Verb: "patch", Name: "new", Nth: 1, Err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "new", errors.New("RBAC"))})
	render := []*unstructured.Unstructured{ns("web"), cm("web", "a"), cm("web", "new")}
	changes, err := run(t, c, apply.Config{Prune: true, Objects: render})
	if err == nil || changes["configmap/new"].Action != change.Failed || !apierrors.IsForbidden(changes["configmap/new"].Err) {
		t.Fatalf("apply: %v; configmap/new %+v", err, changes["configmap/new"])
	}
	if _, pruned := changes["configmap/old"]; pruned || c.Live(cm("web", "old")) == nil {
		t.Errorf("configmap/old was pruned after a failure: %+v", changes["configmap/old"])
	}
	union := []string{"ConfigMap/web/a", "ConfigMap/web/new", "ConfigMap/web/old", "Namespace/web"}
	if diff := cmp.Diff(union, members(t, c, "web")); diff != "" {
		t.Errorf("parent's members after the failure (-want +got):\n%s", diff)
	}

	got := actions(mustRun(t, c, apply.Config{Prune: true, Objects: render}))
	want := map[string]change.Action{"namespace/web": change.Unchanged, "configmap/a": change.Unchanged, "configmap/new": change.Created, "configmap/old": change.Pruned}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the next apply (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ConfigMap/web/a", "ConfigMap/web/new", "Namespace/web"}, members(t, c, "web")); diff != "" {
		t.Errorf("parent's members after the next apply (-want +got):\n%s", diff)
	}
}

// TestServerRefusals: a conflict (someone edited the field by hand: the
// double's field manager refuses our apply) and an immutable field fail
// the object with advice; an object that asks for it is replaced instead.
func TestServerRefusals(t *testing.T) {
	immutable := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", []*field.Error{field.Invalid(field.NewPath("spec", "selector"), "{…}", "field is immutable")})
	for _, tt := range []struct {
		name       string
		fault      error
		force      bool
		want       change.Action
		wantInErr  string
		wantNewUID bool
	}{
		{"conflict", nil, false, change.Failed, `conflict with "kubectl-edit" using apps/v1: .spec.replicas (another field manager owns these fields; --force-conflicts takes them over)`, false},
		{"immutable", immutable, false, change.Failed, "delete deployment.apps/web and apply again", false},
		{"immutable, force enabled", immutable, true, change.Replaced, "", true},
	} {
		c := kubetest.New(t)
		// The second apply changes the object, so that it is sent.
		deploy := func(replicas int64) *unstructured.Unstructured {
			d := kubetest.Object("apps/v1", "Deployment", "web", "web")
			d.Object["spec"] = map[string]any{"replicas": replicas}
			if tt.force {
				annotate(d, object.ForceAnnotation, "enabled")
			}
			return d
		}
		mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), deploy(1)}})
		uid := c.Live(deploy(1)).GetUID()
		if tt.fault != nil {
			c.Inject(kubetest.Fault{Verb: "patch", Resource: "deployments", Nth: 1, Err: tt.fault})
		} else if _, err := c.Client.Dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("web").Patch(context.Background(), "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
		changes, err := run(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), deploy(2)}})
		ch := changes["deployment.apps/web"]
		if ch.Action != tt.want || (err != nil) != (tt.want == change.Failed) {
			t.Errorf("%s: %+v, Run: %v", tt.name, ch, err)
		}
		if tt.wantInErr != "" && (ch.Err == nil || !strings.Contains(ch.Err.Error(), tt.wantInErr)) {
			t.Errorf("%s: error %v, want it to say %q", tt.name, ch.Err, tt.wantInErr)
		}
		if live := c.Live(deploy(2)); live == nil || (live.GetUID() != uid) != tt.wantNewUID {
			t.Errorf("%s: live object %v (uid was %s)", tt.name, live, uid)
		}
	}
}

// TestInterruptStartsNoRequest: once ctx is cancelled (Ctrl-C) no request
// starts: neither a further object, nor a prune, nor an inventory write.
func TestInterruptStartsNoRequest(t *testing.T) {
	before := []*unstructured.Unstructured{ns("web"), cm("web", "a"), cm("web", "old")}
	render := []*unstructured.Unstructured{ns("web"), cm("web", "a", "k=2"), cm("web", "b"), cm("web", "c")}

	t.Run("during the apply", func(t *testing.T) {
		c := kubetest.New(t)
		mustRun(t, c, apply.Config{Objects: before})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var atCancel int
		err := apply.Run(ctx, c.Client, apply.Config{App: "web", Prune: true, Objects: render, Concurrency: 1, Report: func(ch apply.Change) {
			if ch.Ref == "configmap/a" {
				cancel()
				atCancel = len(c.Requests())
			}
		}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v, want context.Canceled", err)
		}
		if after := c.Requests()[atCancel:]; len(after) > 0 {
			t.Errorf("%d requests after Ctrl-C: %+v", len(after), after)
		}
		if c.Live(cm("web", "b")) != nil || c.Live(cm("web", "c")) != nil || c.Live(cm("web", "old")) == nil {
			t.Error("objects applied or pruned after Ctrl-C")
		}
		union := []string{"ConfigMap/web/a", "ConfigMap/web/b", "ConfigMap/web/c", "ConfigMap/web/old", "Namespace/web"}
		if diff := cmp.Diff(union, members(t, c, "web")); diff != "" {
			t.Errorf("parent's members (-want +got):\n%s", diff)
		}
	})

	t.Run("during the prune", func(t *testing.T) {
		c := kubetest.New(t)
		mustRun(t, c, apply.Config{Objects: append([]*unstructured.Unstructured{cm("web", "old2")}, before...)})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var atCancel int
		err := apply.Run(ctx, c.Client, apply.Config{App: "web", Prune: true, Objects: before[:2], Concurrency: 1, Report: func(ch apply.Change) {
			if ch.Action == change.Pruned && atCancel == 0 {
				cancel()
				atCancel = len(c.Requests())
			}
		}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v, want context.Canceled", err)
		}
		if after := c.Requests()[atCancel:]; len(after) > 0 {
			t.Errorf("%d requests after Ctrl-C: %+v", len(after), after)
		}
		if (c.Live(cm("web", "old")) == nil) == (c.Live(cm("web", "old2")) == nil) {
			t.Error("not exactly one of the two members pruned")
		}
	})

	t.Run("during the last prune", func(t *testing.T) {
		c := kubetest.New(t)
		mustRun(t, c, apply.Config{Objects: before})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var atCancel int
		err := apply.Run(ctx, c.Client, apply.Config{App: "web", Prune: true, Objects: before[:2], Concurrency: 1, Report: func(ch apply.Change) {
			if ch.Action == change.Pruned {
				cancel()
				atCancel = len(c.Requests())
			}
		}})
		if !errors.Is(err, context.Canceled) || c.Live(cm("web", "old")) != nil {
			t.Errorf("Run: %v, want context.Canceled after configmap/old was pruned", err)
		}
		if after := c.Requests()[atCancel:]; len(after) > 0 {
			t.Errorf("%d requests after Ctrl-C: %+v", len(after), after)
		}
	})

	t.Run("while the inventory is read", func(t *testing.T) {
		c := kubetest.New(t)
		mustRun(t, c, apply.Config{Objects: before})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Ctrl-C during the read of the other apps' parents.
		c.Inject(kubetest.Fault{Verb: "list", Resource: "configmaps", Nth: 1, Hook: cancel})
		sent := len(c.Requests())
		err := apply.Run(ctx, c.Client, apply.Config{App: "web", Prune: true, Objects: render, Concurrency: 1, Report: func(apply.Change) {}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v, want context.Canceled", err)
		}
		// The live objects are listed while the inventory is read; only
		// reads went out, the parents' list among them.
		got := c.Requests()[sent:]
		parent := kubetest.Request{Verb: "list", Resource: "configmaps", Namespace: inventory.Namespace}
		if !slices.Contains(got, parent) {
			t.Errorf("the parent was not read: %+v", got)
		}
		for _, r := range got {
			if r.Verb != "get" && r.Verb != "list" {
				t.Errorf("%s %s/%s sent after Ctrl-C during the inventory's read", r.Verb, r.Resource, r.Name)
			}
		}
	})

	t.Run("before the apply", func(t *testing.T) {
		c := kubetest.New(t)
		mustRun(t, c, apply.Config{Objects: before})
		sent := len(c.Requests())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := apply.Run(ctx, c.Client, apply.Config{App: "web", Prune: true, Objects: render, Concurrency: 1, Report: func(apply.Change) {}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v, want context.Canceled", err)
		}
		if after := c.Requests()[sent:]; len(after) > 0 {
			t.Errorf("%d requests after Ctrl-C: %+v", len(after), after)
		}
	})
}

// TestDryRunWritesNothing: a dry run reports what apply --prune would do,
// in diff's words (an object in a namespace the apply creates is created,
// not validated), and every write it sends is a dry run.
func TestDryRunWritesNothing(t *testing.T) {
	c := kubetest.New(t)
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a", "k=1"), cm("web", "same"), cm("web", "old")}})
	snapshot := c.Objects()
	sent := len(c.Requests())
	got := actions(mustRun(t, c, apply.Config{DryRun: true, Prune: true, Objects: []*unstructured.Unstructured{
		ns("web"), cm("web", "a", "k=2"), cm("web", "same"), cm("web", "new"), ns("extra"), cm("extra", "x"),
	}}))
	want := map[string]change.Action{
		"namespace/web": change.Unchanged, "configmap/a": change.Configured, "configmap/same": change.Unchanged,
		"configmap/new": change.Created, "namespace/extra": change.Created, "configmap/x": change.Created, "configmap/old": change.Pruned,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(snapshot, c.Objects()); diff != "" {
		t.Errorf("a dry run changed the cluster (-before +after):\n%s", diff)
	}
	for _, r := range c.Requests()[sent:] {
		if (r.Verb == "patch" || r.Verb == "delete") && !r.DryRun {
			t.Errorf("a dry run sent a write: %+v", r)
		}
	}
}

// TestDelete: delete removes exactly the set's members, keeps what asks
// to be kept, then the parent; a Namespace that holds an object no app
// owns is left (deleting it would delete that object); an app never
// applied is not found.
func TestDelete(t *testing.T) {
	c := kubetest.New(t)
	stranger := cm("web", "stranger")
	c.Put(ns("data"))
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a"), annotate(cm("data", "pvc"), object.PruneAnnotation, "disabled"), kubetest.Object("v1", "Secret", "web", "s")}})
	c.Put(stranger)
	var order []string
	var mu sync.Mutex
	found, err := apply.Delete(context.Background(), c.Client, "", "web", false, func(ch apply.Change) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, ch.Ref+" "+string(ch.Action))
		if ch.Ref == "namespace/web" && ch.Reason != "not deleted: 1 object that is not the app's remains: configmaps/stranger; left in place, no longer the app's" {
			t.Errorf("the namespace's reason: %q", ch.Reason)
		}
	})
	if !found || err != nil {
		t.Fatalf("Delete: %v, %v", found, err)
	}
	want := []string{"configmap/pvc kept", "configmap/a deleted", "secret/s deleted", "namespace/web kept"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if c.Live(stranger) == nil || c.Live(cm("data", "pvc")) == nil || c.Live(cm("web", "a")) != nil {
		t.Error("deleted the wrong objects")
	}
	parent := kubetest.Object("v1", "ConfigMap", inventory.Namespace, inventory.ParentName("web"))
	if c.Live(parent) != nil {
		t.Error("the parent is still there")
	}
	if found, err := apply.Delete(context.Background(), c.Client, "", "never", false, func(apply.Change) {}); found || err != nil {
		t.Errorf("an app never applied: %v, %v", found, err)
	}
	// A Namespace that holds only the app's objects, and what the
	// cluster puts in every namespace, goes.
	mustRun(t, c, apply.Config{App: "solo", Objects: []*unstructured.Unstructured{ns("solo"), cm("solo", "a")}})
	c.Put(cm("solo", "kube-root-ca.crt"))
	got := map[string]change.Action{}
	if _, err := apply.Delete(context.Background(), c.Client, "", "solo", false, func(ch apply.Change) { got[ch.Ref] = ch.Action }); err != nil {
		t.Fatal(err)
	}
	if got["namespace/solo"] != change.Deleted || c.Live(ns("solo")) != nil {
		t.Errorf("a namespace with only the app's objects: %v", got)
	}
	// Endpoints the endpoints controller keeps, and those of a Service,
	// go with their Service; Endpoints of no Service are someone's (a
	// Service with no selector) and keep the Namespace.
	for _, tc := range []struct {
		name   string
		app    *unstructured.Unstructured // besides the Namespace
		others []*unstructured.Unstructured
		want   change.Action
	}{
		{"mirror", cm("mirror", "a"), []*unstructured.Unstructured{endpoints("mirror", "web", true)}, change.Deleted},
		{"service", kubetest.Object("v1", "Service", "service", "web"), []*unstructured.Unstructured{endpoints("service", "web", false)}, change.Deleted},
		{"manual", cm("manual", "a"), []*unstructured.Unstructured{endpoints("manual", "db", false)}, change.Kept},
	} {
		mustRun(t, c, apply.Config{App: tc.name, Objects: []*unstructured.Unstructured{ns(tc.name), tc.app}})
		for _, o := range tc.others {
			c.Put(o)
		}
		got := map[string]change.Action{}
		if _, err := apply.Delete(context.Background(), c.Client, "", tc.name, false, func(ch apply.Change) { got[ch.Ref] = ch.Action }); err != nil {
			t.Fatal(err)
		}
		if got["namespace/"+tc.name] != tc.want {
			t.Errorf("%s: the namespace %s, want %s", tc.name, got["namespace/"+tc.name], tc.want)
		}
	}
}

// endpoints is an Endpoints object, labelled as the endpoints controller
// labels those it keeps when mirror.
func endpoints(namespace, name string, mirror bool) *unstructured.Unstructured {
	o := kubetest.Object("v1", "Endpoints", namespace, name)
	if mirror {
		o.SetLabels(map[string]string{"endpoints.kubernetes.io/managed-by": "endpoint-controller"})
	}
	return o
}

// TestTrimKeepsTheCurrentRevision: old revisions are deleted while the
// parent is written, but never the one the parent names until then: when
// that write fails it is still there, and with --history-limit 1 it goes
// once the parent names the new one.
func TestTrimKeepsTheCurrentRevision(t *testing.T) {
	c := kubetest.New(t)
	record := func() *apply.Record { return &apply.Record{Revision: revision.Revision{User: "alice"}, Limit: 1} }
	v := func(value string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{ns("web"), cm("web", "conf", "v="+value)}
	}
	numbers := func() []int {
		list, err := revision.List(context.Background(), c.Client, "web")
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, r := range list {
			out = append(out, r.Number)
		}
		return out
	}
	mustRun(t, c, apply.Config{Objects: v("1"), Record: record()})
	mustRun(t, c, apply.Config{Objects: v("2"), Record: record()})
	if diff := cmp.Diff([]int{2}, numbers()); diff != "" {
		t.Errorf("limit 1 (-want +got):\n%s", diff)
	}
	// The parent's last write (after the objects) fails: r2 stays current
	// and stored, r3 is stored but not current.
	c.Inject(kubetest.Fault{Verb: "patch", Resource: "configmaps", Name: inventory.ParentName("web"), Nth: 1, Err: errors.New("etcd is gone")})
	if err := apply.Run(context.Background(), c.Client, apply.Config{App: "web", Objects: v("3"), Record: record(), Report: func(apply.Change) {}}); err == nil {
		t.Fatal("the parent's write failed, and Run did not say so")
	}
	set, err := inventory.Load(context.Background(), c.Client, "web")
	if err != nil || set.Revision != 2 {
		t.Fatalf("parent: revision %d, %v; want 2", set.Revision, err)
	}
	if diff := cmp.Diff([]int{2, 3}, numbers()); diff != "" {
		t.Errorf("after the failed write (-want +got):\n%s", diff)
	}
	if _, _, err := revision.Load(context.Background(), c.Client, "web", 2); err != nil {
		t.Errorf("the current revision cannot be loaded: %v", err)
	}
	mustRun(t, c, apply.Config{Objects: v("4"), Record: record()})
	if diff := cmp.Diff([]int{4}, numbers()); diff != "" {
		t.Errorf("then (-want +got):\n%s", diff)
	}
}

// TestRecordUsesTheCallersUser: who applies, when the caller knows it
// (from its lock), is not asked of the cluster again.
func TestRecordUsesTheCallersUser(t *testing.T) {
	c := kubetest.New(t)
	asked := 0
	rec := &apply.Record{User: func(context.Context) string { asked++; return "bob" }}
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("web"), cm("web", "conf", "v=1")}, Record: rec})
	for _, r := range c.Requests() {
		if r.Resource == "selfsubjectreviews" {
			t.Errorf("the cluster was asked who applies: %+v", r)
		}
	}
	list, err := revision.List(context.Background(), c.Client, "web")
	if err != nil || len(list) != 1 || list[0].User != "bob" || asked != 1 {
		t.Errorf("revisions %+v, %v; asked %d times", list, err, asked)
	}
}

// TestRecordRevisions: a real apply records a revision when the render
// changed, none when it did not, none on a dry run; the parent names the
// current one; --history-limit trims the oldest.
func TestRecordRevisions(t *testing.T) {
	c := kubetest.New(t)
	var recorded []string
	record := func() *apply.Record {
		return &apply.Record{Revision: revision.Revision{Description: "apply", User: "alice"}, Limit: 2, Done: func(r revision.Revision, isNew bool) {
			recorded = append(recorded, fmt.Sprintf("%d %v", r.Number, isNew))
		}}
	}
	v := func(value string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{ns("web"), cm("web", "conf", "v="+value)}
	}
	mustRun(t, c, apply.Config{Objects: v("1"), Record: record()})
	mustRun(t, c, apply.Config{Objects: v("1"), Record: record()})
	mustRun(t, c, apply.Config{Objects: v("2"), Record: record(), DryRun: true})
	mustRun(t, c, apply.Config{Objects: v("2"), Record: record()})
	mustRun(t, c, apply.Config{Objects: v("3"), Record: record()})
	if diff := cmp.Diff([]string{"1 true", "1 false", "2 true", "3 true"}, recorded); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	set, err := inventory.Load(context.Background(), c.Client, "web")
	if err != nil || set.Revision != 3 || set.Digest != renderDigest(t, c, v("3")) {
		t.Fatalf("parent: %+v %v", set, err)
	}
	list, err := revision.List(context.Background(), c.Client, "web")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, r := range list {
		kept = append(kept, fmt.Sprintf("%d %s %s %d", r.Number, r.User, r.Description, r.Objects))
		if r.Namespace != "default" {
			t.Errorf("revision %d records the namespace %q, want the context's, default", r.Number, r.Namespace)
		}
	}
	if diff := cmp.Diff([]string{"2 alice apply 2", "3 alice apply 2"}, kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	_, objs, err := revision.Load(context.Background(), c.Client, "web", 2)
	if err != nil || objs[1].Object["data"].(map[string]any)["v"] != "2" {
		t.Errorf("revision 2: %v %v", objs, err)
	}
	// Delete takes the history with it.
	if _, err := apply.Delete(context.Background(), c.Client, "", "web", false, func(apply.Change) {}); err != nil {
		t.Fatal(err)
	}
	if list, err := revision.List(context.Background(), c.Client, "web"); err != nil || len(list) != 0 {
		t.Errorf("after delete: %v %v", list, err)
	}
}

// TestUnchangedNeedsNoRequest: an object whose render and live version
// are what the last apply sent and got back is reported unchanged without
// a request; any doubt sends it: an edit behind our back, a deletion, a
// changed render, --force-conflicts, another plugin version, a dry run.
func TestUnchangedNeedsNoRequest(t *testing.T) {
	c := kubetest.New(t)
	objs := func(v string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{ns("web"), cm("web", "a", "k=1"), cm("web", "b", "k="+v)}
	}
	patched := func(cfg apply.Config) []string {
		t.Helper()
		before := len(c.Requests())
		changes := mustRun(t, c, cfg)
		var sent []string
		for _, r := range c.Requests()[before:] {
			if objectPatch(r) {
				sent = append(sent, r.Resource+"/"+r.Name)
			}
		}
		for ref, ch := range changes {
			if ch.Action != change.Unchanged && ch.Action != change.Configured && ch.Action != change.Created {
				t.Errorf("%s %s", ref, ch.Action)
			}
		}
		sort.Strings(sent)
		return sent
	}
	all := []string{"configmaps/a", "configmaps/b", "namespaces/web"}
	for _, step := range []struct {
		name  string
		setup func()
		cfg   apply.Config
		want  []string
	}{
		{"first apply", nil, apply.Config{Objects: objs("1")}, all},
		{"nothing changed", nil, apply.Config{Objects: objs("1")}, nil},
		{"a changed render", nil, apply.Config{Objects: objs("2")}, []string{"configmaps/b"}},
		{"an edit behind our back", func() {
			live := c.Live(cm("web", "a"))
			live.Object["data"] = map[string]any{"k": "by hand"}
			c.Put(live)
		}, apply.Config{Objects: objs("2")}, []string{"configmaps/a"}},
		{"deleted behind our back", func() {
			if err := c.Client.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("web").Delete(context.Background(), "b", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, apply.Config{Objects: objs("2")}, []string{"configmaps/b"}},
		{"--force-conflicts", nil, apply.Config{Objects: objs("2"), Force: true}, all},
		{"nothing changed again", nil, apply.Config{Objects: objs("2")}, nil},
		{"a dry run", nil, apply.Config{Objects: objs("2"), DryRun: true}, nil},
	} {
		if step.setup != nil {
			step.setup()
		}
		got := patched(step.cfg)
		if step.cfg.DryRun {
			// A dry run reads and sends every object (with dryRun).
			if len(got) != len(all) {
				t.Errorf("%s: sent %v", step.name, got)
			}
			continue
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("%s: objects sent (-want +got):\n%s", step.name, diff)
		}
	}
	// Another plugin version trusts nothing the last one recorded.
	before := len(c.Requests())
	cfg := apply.Config{App: "web", Version: "other", Objects: objs("2"), Concurrency: 4, Report: func(apply.Change) {}}
	if err := apply.Run(context.Background(), c.Client, cfg); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range c.Requests()[before:] {
		if objectPatch(r) {
			n++
		}
	}
	if n != 3 {
		t.Errorf("another version sent %d objects, want 3", n)
	}
}

// objectPatch reports a request that applies one of the app's objects,
// not the inventory (the parent, its namespace) nor a revision.
func objectPatch(r kubetest.Request) bool {
	return r.Verb == "patch" && r.Resource != "secrets" && !(r.Resource == "configmaps" && r.Name == inventory.ParentName("web")) && !(r.Resource == "namespaces" && r.Name == inventory.Namespace)
}

// TestNoOpApplyWritesNothing: an apply of what the last one sent writes
// nothing: not the parent (its record holds already, but the time of the
// last apply), not the revision's verdict, not the inventory's namespace.
func TestNoOpApplyWritesNothing(t *testing.T) {
	c := kubetest.New(t)
	objs := []*unstructured.Unstructured{ns("web"), cm("web", "a", "k=1")}
	record := func() *apply.Record {
		return &apply.Record{Revision: revision.Revision{Verification: revision.Verification{State: revision.Verified, Gates: []string{"applied"}}}, Verified: func(revision.Verification) {}}
	}
	mustRun(t, c, apply.Config{Objects: objs, Record: record()})
	before := len(c.Requests())
	mustRun(t, c, apply.Config{Objects: objs, Record: record()})
	var writes []string
	for _, r := range c.Requests()[before:] {
		if r.Verb != "get" && r.Verb != "list" && r.Resource != "selfsubjectreviews" { // who applies: asked, not stored
			writes = append(writes, r.Verb+" "+r.Resource+"/"+r.Name)
		}
	}
	if len(writes) > 0 {
		t.Errorf("a no-op apply wrote %v", writes)
	}
	// A changed verdict is written, and nothing else.
	changed := record()
	changed.Revision.Verification = revision.Verification{State: revision.Failed, Reason: "check smoke: exit status 1"}
	before = len(c.Requests())
	mustRun(t, c, apply.Config{Objects: objs, Record: changed})
	writes = nil
	for _, r := range c.Requests()[before:] {
		if r.Verb != "get" && r.Verb != "list" && r.Resource != "selfsubjectreviews" { // who applies: asked, not stored
			writes = append(writes, r.Verb+" "+r.Resource+"/"+r.Name)
		}
	}
	if want := []string{"patch secrets/" + revision.SecretName("web", 1)}; !cmp.Equal(writes, want) {
		t.Errorf("an apply whose verdict changed wrote %v, want %v", writes, want)
	}
}

// Config.Namespace (a rollback) puts objects without a namespace where
// they went then, not in the context's default; the revision recorded
// keeps the render's digest and says where they went.
func TestNamespaceOfARollback(t *testing.T) {
	c := kubetest.New(t)
	objs := []*unstructured.Unstructured{ns("team-a"), kubetest.Object("v1", "ConfigMap", "", "conf")}
	mustRun(t, c, apply.Config{Objects: objs, Namespace: "team-a", Record: &apply.Record{Revision: revision.Revision{Description: "rollback to 1"}}})
	if c.Live(kubetest.Object("v1", "ConfigMap", "team-a", "conf")) == nil || c.Live(kubetest.Object("v1", "ConfigMap", "default", "conf")) != nil {
		t.Fatal("the ConfigMap did not go to team-a")
	}
	if live := c.Live(ns("team-a")); live == nil || live.GetNamespace() != "" {
		t.Errorf("the Namespace object: %v", live)
	}
	list, err := revision.List(context.Background(), c.Client, "web")
	if err != nil || len(list) != 1 || list[0].Namespace != "team-a" || list[0].Digest != renderDigest(t, c, objs) {
		t.Errorf("revisions %+v, %v", list, err)
	}
	if objs[1].GetNamespace() != "" {
		t.Error("the caller's object was changed")
	}
}

// A CRD the app no longer renders is not deleted while custom resources
// of its kind that the app does not delete remain (deleting it would
// delete them): it is left, released from the set, and said. Once only
// the app's own remain, they go and so does it.
// crd is the CRD of kubetest's ClusterPolicy kind.
func crd() *unstructured.Unstructured {
	o := kubetest.Object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "clusterpolicies.policy.example.com")
	o.Object["spec"] = map[string]any{"group": "policy.example.com", "scope": "Cluster",
		"names":    map[string]any{"plural": "clusterpolicies", "kind": "ClusterPolicy"},
		"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true}}}
	return o
}

func TestPruneKeepsACRDWithOthersResources(t *testing.T) {
	c := kubetest.New(t)
	policy := func(name string) *unstructured.Unstructured {
		return kubetest.Object(kubetest.ClusterPolicy.GroupVersion().String(), kubetest.ClusterPolicy.Kind, "", name)
	}
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{crd(), policy("ours")}})
	c.Put(policy("theirs"))
	got := mustRun(t, c, apply.Config{Prune: true, AllowEmpty: true})
	var crdChange apply.Change
	for _, ch := range got {
		if ch.Ref == "customresourcedefinition.apiextensions.k8s.io/clusterpolicies.policy.example.com" {
			crdChange = ch
		}
	}
	if crdChange.Action != change.Kept || crdChange.Reason != "not deleted: 1 custom resource remains; left in place, no longer the app's" {
		t.Errorf("the CRD: %+v", crdChange)
	}
	if c.Live(crd()) == nil || c.Live(policy("theirs")) == nil {
		t.Error("the CRD, or their policy, was deleted")
	}
	if c.Live(policy("ours")) != nil {
		t.Error("the app's own policy was not pruned")
	}

	// Only the app's own: the CRD goes with them.
	c2 := kubetest.New(t)
	mustRun(t, c2, apply.Config{Objects: []*unstructured.Unstructured{crd(), policy("ours")}})
	if got := actions(mustRun(t, c2, apply.Config{Prune: true, AllowEmpty: true})); got["customresourcedefinition.apiextensions.k8s.io/clusterpolicies.policy.example.com"] != change.Pruned {
		t.Errorf("a CRD with only the app's resources: %v", got)
	}
}

// TestAdoptedIsReleasedNotDeleted: objects that existed before the app
// first applied them (a Namespace "monitoring" with someone's ConfigMap
// in it, a ConfigMap the app takes over) are said adopted, recorded so
// before any of them is written (an apply that fails half-way remembers
// them), and delete releases them instead of deleting them; created
// objects go. fleet.kubectl.io/prune: always deletes an adopted object.
func TestAdoptedIsReleasedNotDeleted(t *testing.T) {
	c := kubetest.New(t)
	theirs := cm("monitoring", "theirs")
	c.Put(ns("monitoring"), theirs, cm("monitoring", "grafana", "k=old"))
	render := []*unstructured.Unstructured{ns("monitoring"), cm("monitoring", "grafana", "k=new"), cm("monitoring", "own")}
	// grafana's k is someone else's ("before-first-apply", as the
	// double's field manager says): taking it needs --force-conflicts.
	if _, err := run(t, c, apply.Config{Objects: render}); err == nil || !strings.Contains(err.Error(), "1 of 2 objects failed") {
		t.Fatalf("adopting a field another manager set, without force: %v", err)
	}
	force := func(cfg apply.Config) apply.Config { cfg.Force = true; return cfg }

	c.Inject(kubetest.Fault{Verb: "patch", Name: "grafana", Nth: 1, Err: apierrors.NewServiceUnavailable("down")})
	if _, err := run(t, c, force(apply.Config{Objects: render})); err == nil {
		t.Fatal("the apply whose patch failed succeeded")
	}
	set, err := inventory.Load(context.Background(), c.Client, "web")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ConfigMap/monitoring/grafana", "Namespace/monitoring"}; !slices.Equal(sets.List(set.Adopted), want) {
		t.Errorf("after a failed apply the parent records %v adopted, want %v", sets.List(set.Adopted), want)
	}

	got := actions(mustRun(t, c, force(apply.Config{Objects: render})))
	// The failed apply applied the Namespace (its first stage) and own:
	// they are members already, the Namespace recorded adopted.
	want := map[string]change.Action{"namespace/monitoring": change.Unchanged, "configmap/grafana": change.Adopted, "configmap/own": change.Unchanged}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first apply (-want +got):\n%s", diff)
	}
	got = actions(mustRun(t, c, apply.Config{Objects: render}))
	if got["namespace/monitoring"] != change.Unchanged || got["configmap/grafana"] != change.Unchanged {
		t.Errorf("a second apply adopts again: %v", got)
	}

	reasons := map[string]string{}
	if _, err := apply.Delete(context.Background(), c.Client, "", "web", false, func(ch apply.Change) { reasons[ch.Ref] = string(ch.Action) + ": " + ch.Reason }); err != nil {
		t.Fatal(err)
	}
	const released = "kept: adopted: it existed before app web applied it; released, not deleted (fleet.kubectl.io/prune: always deletes it)"
	if reasons["namespace/monitoring"] != released || reasons["configmap/grafana"] != released || reasons["configmap/own"] != "deleted: " {
		t.Errorf("delete: %v", reasons)
	}
	grafana := c.Live(cm("monitoring", "grafana"))
	if c.Live(ns("monitoring")) == nil || c.Live(theirs) == nil || grafana == nil || c.Live(cm("monitoring", "own")) != nil {
		t.Fatal("delete removed an adopted object, or kept a created one")
	}
	if l := grafana.GetLabels()[kubectlapply.ApplysetPartOfLabel]; l != "" {
		t.Errorf("the released ConfigMap is still labelled %q", l)
	}

	// Asked explicitly: an adopted object goes.
	always := annotate(cm("monitoring", "grafana"), object.PruneAnnotation, "always")
	if got := actions(mustRun(t, c, apply.Config{App: "x", Objects: []*unstructured.Unstructured{always}})); got["configmap/grafana"] != change.Adopted {
		t.Errorf("app x: %v", got)
	}
	reasons = map[string]string{}
	if _, err := apply.Delete(context.Background(), c.Client, "", "x", false, func(ch apply.Change) { reasons[ch.Ref] = string(ch.Action) }); err != nil {
		t.Fatal(err)
	}
	if reasons["configmap/grafana"] != "deleted" || c.Live(always) != nil {
		t.Errorf("prune: always: %v", reasons)
	}
}

// TestDryRunSaysAdopted: a dry run says adopted too, and records nothing.
func TestDryRunSaysAdopted(t *testing.T) {
	c := kubetest.New(t)
	c.Put(ns("monitoring"))
	got := actions(mustRun(t, c, apply.Config{DryRun: true, Objects: []*unstructured.Unstructured{ns("monitoring"), cm("monitoring", "own")}}))
	if got["namespace/monitoring"] != change.Adopted || got["configmap/own"] != change.Created {
		t.Errorf("dry run: %v", got)
	}
	if set, err := inventory.Load(context.Background(), c.Client, "web"); err != nil || set.Exists {
		t.Errorf("a dry run wrote the parent: %v", err)
	}
}

// TestAggregatedAPINeverSkipped: an object of a group an aggregated API
// server serves (an APIService with a service) is applied every time: its
// resourceVersion need not move when it changes. The ConfigMap beside it
// is skipped.
func TestAggregatedAPINeverSkipped(t *testing.T) {
	objs := []*unstructured.Unstructured{ns("web"), cm("web", "a", "k=1"), kubetest.Object("policy.example.com/v1", "ClusterPolicy", "", "strict")}
	for _, aggregated := range []bool{false, true} {
		c := kubetest.New(t)
		svc := kubetest.Object("apiregistration.k8s.io/v1", "APIService", "", "v1.policy.example.com")
		svc.Object["spec"] = map[string]any{"group": "policy.example.com", "version": "v1"}
		if aggregated {
			svc.Object["spec"].(map[string]any)["service"] = map[string]any{"name": "policy", "namespace": "policy-system"}
		}
		c.Put(svc)
		mustRun(t, c, apply.Config{Objects: objs})
		before := len(c.Requests())
		mustRun(t, c, apply.Config{Objects: objs})
		var sent []string
		for _, r := range c.Requests()[before:] {
			if objectPatch(r) {
				sent = append(sent, r.Resource+"/"+r.Name)
			}
		}
		want := []string(nil)
		if aggregated {
			want = []string{"clusterpolicies/strict"}
		}
		if !slices.Equal(sent, want) {
			t.Errorf("aggregated %v: the second apply sent %v, want %v", aggregated, sent, want)
		}
	}
}

// TestUnchangedRenderVerdictBesideParent: an apply of the current
// revision's render with a verdict known before it (rollout's Final
// apps) writes that verdict on the current revision beside the parent,
// and says so (Record.Verified), so that the rollout does not write it
// in a round trip of its own after the parent's.
func TestUnchangedRenderVerdictBesideParent(t *testing.T) {
	c := kubetest.New(t)
	objs := []*unstructured.Unstructured{ns("web"), cm("web", "conf", "v=1")}
	var verified []string
	record := func() *apply.Record {
		return &apply.Record{Revision: revision.Revision{User: "alice", Verification: revision.Verification{State: revision.Verified, Gates: []string{"applied"}}},
			Verified: func(v revision.Verification) { verified = append(verified, string(v.State)) }}
	}
	mustRun(t, c, apply.Config{Objects: objs, Record: record()})
	if err := revision.Verify(context.Background(), c.Client, "web", 1, revision.Verification{State: revision.Failed, Reason: "check smoke: exit status 1"}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, c, apply.Config{Objects: objs, Record: record()})
	if v, err := revision.VerificationOf(context.Background(), c.Client, "web", 1); err != nil || v.State != revision.Verified || !slices.Equal(verified, []string{"verified", "verified"}) {
		t.Errorf("revision 1's verdict %+v, %v; told %v; want verified, told twice", v, err, verified)
	}
}

// TestRevisionStoredWhileApplying: a new render's revision is written
// while its objects are, not after them (a round trip less), and the
// parent names it once they are applied; an apply that fails leaves no
// revision: the one stored meanwhile is removed, and the parent still
// names the one before.
func TestRevisionStoredWhileApplying(t *testing.T) {
	c := kubetest.New(t)
	v := func(value string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{ns("web"), cm("web", "conf", "v="+value)}
	}
	var verified []string
	record := func() *apply.Record {
		// A verdict known before the apply (rollout's Final apps).
		return &apply.Record{Revision: revision.Revision{User: "alice", Verification: revision.Verification{State: revision.Verified, Gates: []string{"applied"}}},
			Verified: func(v revision.Verification) { verified = append(verified, string(v.State)) }}
	}
	mustRun(t, c, apply.Config{Objects: v("1"), Record: record()})

	// The ConfigMap's write waits for the revision's (or 10 s).
	gate := make(chan struct{})
	var (
		once    sync.Once
		timeout atomic.Bool
	)
	timer := time.AfterFunc(10*time.Second, func() { timeout.Store(true); once.Do(func() { close(gate) }) })
	defer timer.Stop()
	c.Inject(kubetest.Fault{Verb: "patch", Resource: "secrets", Name: revision.SecretName("web", 2), Hook: func() { once.Do(func() { close(gate) }) }})
	c.Inject(kubetest.Fault{Verb: "patch", Resource: "configmaps", Name: "conf", Before: gate})
	mustRun(t, c, apply.Config{Objects: v("2"), Record: record()})
	if timeout.Load() {
		t.Errorf("the revision was not written while the objects were: the ConfigMap waited 10 s for it")
	}
	set, err := inventory.Load(context.Background(), c.Client, "web")
	if err != nil || set.Revision != 2 {
		t.Fatalf("parent after the apply: %+v, %v; want revision 2", set, err)
	}
	if v, err := revision.VerificationOf(context.Background(), c.Client, "web", 2); err != nil || v.State != revision.Verified || !slices.Equal(verified, []string{"verified", "verified"}) {
		t.Errorf("revision 2's verdict %+v, %v; told %v; want verified, told twice", v, err, verified)
	}

	c.Inject(kubetest.Fault{Verb: "patch", Resource: "configmaps", Name: "conf", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "conf", errors.New("RBAC"))})
	if changes, err := run(t, c, apply.Config{Objects: v("3"), Record: record()}); err == nil || !apierrors.IsForbidden(changes["configmap/conf"].Err) {
		t.Fatalf("apply: %v, configmap/conf %+v; want the ConfigMap refused", err, changes["configmap/conf"])
	}
	stored, removed := false, false
	for _, r := range c.Requests() {
		if r.Resource == "secrets" && r.Name == revision.SecretName("web", 3) {
			stored = stored || r.Verb == "patch"
			removed = removed || r.Verb == "delete"
		}
	}
	if !stored || !removed {
		t.Errorf("revision 3: stored %v, removed %v; want both", stored, removed)
	}
	list, err := revision.List(context.Background(), c.Client, "web")
	var numbers []int
	for _, r := range list {
		numbers = append(numbers, r.Number)
	}
	if err != nil || !slices.Equal(numbers, []int{1, 2}) {
		t.Errorf("revisions after the failed apply: %v, %v; want 1 and 2", numbers, err)
	}
	if set, err := inventory.Load(context.Background(), c.Client, "web"); err != nil || set.Revision != 2 {
		t.Errorf("parent after the failed apply: revision %d, %v; want 2", set.Revision, err)
	}

	// One that cannot be removed says no verdict: it was written before
	// the objects were applied.
	c.Inject(kubetest.Fault{Verb: "patch", Resource: "configmaps", Name: "conf", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "conf", errors.New("RBAC"))})
	c.Inject(kubetest.Fault{Verb: "delete", Resource: "secrets", Err: apierrors.NewServiceUnavailable("down")})
	if _, err := run(t, c, apply.Config{Objects: v("4"), Record: record()}); err == nil {
		t.Fatal("apply: no error, want the ConfigMap's refusal")
	}
	if v, err := revision.VerificationOf(context.Background(), c.Client, "web", 3); err != nil || v.State != revision.Unverified {
		t.Errorf("revision 3, left by a failed apply: %+v, %v; want unverified", v, err)
	}
	if len(verified) != 2 {
		t.Errorf("told verified %d times, want 2 (the failed applies' never)", len(verified))
	}
}

// TestBuiltInKindsNeedNoAPIServices: a render of Kubernetes' own kinds
// only is never served by an aggregated API server, so the APIServices
// are not listed; one with another group's kind lists them.
func TestBuiltInKindsNeedNoAPIServices(t *testing.T) {
	listed := func(objs []*unstructured.Unstructured) bool {
		c := kubetest.New(t)
		mustRun(t, c, apply.Config{Objects: objs})
		return slices.ContainsFunc(c.Requests(), func(r kubetest.Request) bool { return r.Resource == "apiservices" })
	}
	if listed([]*unstructured.Unstructured{ns("web"), cm("web", "a", "k=1"), kubetest.Object("apps/v1", "Deployment", "web", "d")}) {
		t.Error("built-in kinds only: the APIServices were listed")
	}
	if !listed([]*unstructured.Unstructured{ns("web"), kubetest.Object("policy.example.com/v1", "ClusterPolicy", "", "strict")}) {
		t.Error("a kind of another group: the APIServices were not listed")
	}
}

// TestKeptResourceKeepsItsCRD: an app that drops its CRD and a custom
// resource of it marked fleet.kubectl.io/prune: disabled keeps the
// resource, and so the CRD (whose deletion would take the resource
// along), both released.
func TestKeptResourceKeepsItsCRD(t *testing.T) {
	c := kubetest.New(t)
	crd := kubetest.Object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "clusterpolicies.policy.example.com")
	crd.Object["spec"] = map[string]any{"group": "policy.example.com", "scope": "Cluster",
		"names":    map[string]any{"plural": "clusterpolicies", "kind": "ClusterPolicy"},
		"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true}}}
	kept := annotate(kubetest.Object(kubetest.ClusterPolicy.GroupVersion().String(), kubetest.ClusterPolicy.Kind, "", "kept"), "fleet.kubectl.io/prune", "disabled")
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{crd, kept}})
	got := mustRun(t, c, apply.Config{Prune: true, AllowEmpty: true})
	if ch := got["customresourcedefinition.apiextensions.k8s.io/clusterpolicies.policy.example.com"]; ch.Action != change.Kept || ch.Reason != "not deleted: 1 custom resource remains; left in place, no longer the app's" {
		t.Errorf("the CRD: %+v", ch)
	}
	if c.Live(crd) == nil || c.Live(kept) == nil {
		t.Error("the CRD, or the resource kept, was deleted")
	}
}

// TestMovedToALaterApp: an object one commit moves from app a to app b,
// a applied first, is handed to b by a's prune, never deleted: b then
// finds it its own, the same object.
func TestMovedToALaterApp(t *testing.T) {
	c := kubetest.New(t)
	c.Put(ns("web"))
	moved := cm("web", "moved", "k=v")
	mustRun(t, c, apply.Config{App: "a", Objects: []*unstructured.Unstructured{cm("web", "a-only"), moved}})
	uid := c.Live(moved).GetUID()
	got := mustRun(t, c, apply.Config{App: "a", Prune: true, Objects: []*unstructured.Unstructured{cm("web", "a-only")}, Others: map[string][]*unstructured.Unstructured{"b": {cm("web", "moved", "k=v")}}})
	if ch := got["configmap/moved"]; ch.Action != change.Kept || ch.Reason != "rendered by app b in this run; handed to it, not deleted" {
		t.Errorf("a's prune: %+v", ch)
	}
	got = mustRun(t, c, apply.Config{App: "b", Prune: true, Objects: []*unstructured.Unstructured{cm("web", "moved", "k=v")}, Others: map[string][]*unstructured.Unstructured{"a": {cm("web", "a-only")}}})
	if ch := got["configmap/moved"]; ch.Action == change.Created || ch.Action == change.Adopted || ch.Warning != "moved from app a to app b" {
		t.Errorf("b's apply: %+v", ch)
	}
	// The next run of a lets go of it for good.
	mustRun(t, c, apply.Config{App: "a", Prune: true, Objects: []*unstructured.Unstructured{cm("web", "a-only")}, Others: map[string][]*unstructured.Unstructured{"b": {cm("web", "moved", "k=v")}}})
	if set, err := inventory.Load(context.Background(), c.Client, "a"); err != nil || set.Contents.Members.Has("ConfigMap/web/moved") {
		t.Errorf("a's set still records it: %v %+v", err, set)
	}
	if live := c.Live(moved); live == nil || live.GetUID() != uid {
		t.Errorf("the moved ConfigMap was deleted or re-created: %v", live)
	}
	set, err := inventory.Load(context.Background(), c.Client, "b")
	if err != nil || !set.Contents.Members.Has("ConfigMap/web/moved") || set.Adopted.Has("ConfigMap/web/moved") {
		t.Errorf("b's set: %v %+v", err, set)
	}
}

// TestHandedOverThenDeleted: an object handed to a later app of the run
// stays in the first app's record only as handed over: deleting the app
// it went to deletes it (the first app no longer applies it). Handed to
// an earlier app, which records it already, it leaves the first app's
// record at once.
func TestHandedOverThenDeleted(t *testing.T) {
	c := kubetest.New(t)
	c.Put(ns("web"))
	moved := cm("web", "moved", "k=v")
	mustRun(t, c, apply.Config{App: "a", Objects: []*unstructured.Unstructured{cm("web", "a-only"), moved}})
	mustRun(t, c, apply.Config{App: "a", Prune: true, Objects: []*unstructured.Unstructured{cm("web", "a-only")}, Others: map[string][]*unstructured.Unstructured{"b": {cm("web", "moved", "k=v")}}})
	mustRun(t, c, apply.Config{App: "b", Prune: true, Objects: []*unstructured.Unstructured{cm("web", "moved", "k=v")}, Others: map[string][]*unstructured.Unstructured{"a": {cm("web", "a-only")}}})
	if set, err := inventory.Load(context.Background(), c.Client, "a"); err != nil || !set.Handing.Has("ConfigMap/web/moved") {
		t.Fatalf("a's set does not record it as handed over: %v %+v", err, set)
	}
	got := map[string]apply.Change{}
	if _, err := apply.Delete(context.Background(), c.Client, "", "b", false, func(ch apply.Change) { got[ch.Ref] = ch }); err != nil {
		t.Fatal(err)
	}
	if ch := got["configmap/moved"]; ch.Action != change.Deleted || c.Live(moved) != nil {
		t.Errorf("deleting the app it was handed to: %+v, live %v", ch, c.Live(moved))
	}

	// Handed to an earlier app of the run: gone from a's record at once.
	mustRun(t, c, apply.Config{App: "a", Prune: true, Objects: []*unstructured.Unstructured{cm("web", "a-only"), moved}})
	mustRun(t, c, apply.Config{App: "c", Prune: true, Objects: []*unstructured.Unstructured{cm("web", "moved", "k=v")}, Others: map[string][]*unstructured.Unstructured{"a": {cm("web", "a-only")}}})
	mustRun(t, c, apply.Config{App: "a", Prune: true, Objects: []*unstructured.Unstructured{cm("web", "a-only")}, Others: map[string][]*unstructured.Unstructured{"c": {cm("web", "moved", "k=v")}}})
	if set, err := inventory.Load(context.Background(), c.Client, "a"); err != nil || set.Contents.Members.Has("ConfigMap/web/moved") || set.Handing.Len() != 0 {
		t.Errorf("a's set after handing it to c, which records it: %v %+v", err, set)
	}
}

// TestHandedOverRunKilledBetween: a run killed after app a handed an
// object to app b and before b's apply leaves it a's, under a's label:
// the next run hands it over again, and b takes it as moved, not as an
// object labelled by no record (adopted, and never pruned after).
func TestHandedOverRunKilledBetween(t *testing.T) {
	c := kubetest.New(t)
	c.Put(ns("web"))
	moved := cm("web", "moved", "k=v")
	mustRun(t, c, apply.Config{App: "a", Objects: []*unstructured.Unstructured{cm("web", "a-only"), moved}})
	others := map[string][]*unstructured.Unstructured{"b": {cm("web", "moved", "k=v")}}
	mustRun(t, c, apply.Config{App: "a", Prune: true, Objects: []*unstructured.Unstructured{cm("web", "a-only")}, Others: others})
	// Killed here; the next run: a, then b.
	got := mustRun(t, c, apply.Config{App: "a", Prune: true, Objects: []*unstructured.Unstructured{cm("web", "a-only")}, Others: others})
	if ch := got["configmap/moved"]; ch.Action != change.Kept || ch.Reason != "rendered by app b in this run; handed to it, not deleted" {
		t.Errorf("a's prune in the next run: %+v", ch)
	}
	got = mustRun(t, c, apply.Config{App: "b", Prune: true, Objects: []*unstructured.Unstructured{cm("web", "moved", "k=v")}, Others: map[string][]*unstructured.Unstructured{"a": {cm("web", "a-only")}}})
	if ch := got["configmap/moved"]; ch.Action == change.Adopted || ch.Warning != "moved from app a to app b" {
		t.Errorf("b's apply: %+v", ch)
	}
	if set, err := inventory.Load(context.Background(), c.Client, "b"); err != nil || set.Adopted.Len() != 0 {
		t.Errorf("b's set: %v %+v", err, set)
	}
}

// TestTestsRefuseForeignObjects: a test object's name taken by someone
// else's object is refused, that object neither deleted nor changed; a
// test object an earlier run left (labelled fleet.kubectl.io/test-of) is
// replaced, and removed once the tests pass.
func TestTestsRefuseForeignObjects(t *testing.T) {
	c := kubetest.New(t)
	c.Put(ns("web"), cm("web", "smoke-settings", "theirs=yes"))
	uid := c.Live(cm("web", "smoke-settings")).GetUID()
	err := apply.Test(context.Background(), c.Client, apply.TestConfig{App: "web", Objects: []*unstructured.Unstructured{cm("web", "smoke-settings", "ours=yes")}, Report: func(apply.Change) {}})
	if err == nil || !strings.Contains(err.Error(), "configmap/smoke-settings already exists and is not a test object of app web") {
		t.Errorf("tests over someone else's object: %v", err)
	}
	if live := c.Live(cm("web", "smoke-settings")); live == nil || live.GetUID() != uid || live.Object["data"].(map[string]any)["theirs"] != "yes" {
		t.Errorf("someone else's object was deleted or changed: %v", live)
	}

	left := cm("web", "smoke-left", "old=yes")
	left.SetLabels(map[string]string{apply.TestLabel: "web"})
	c.Put(left)
	if err := apply.Test(context.Background(), c.Client, apply.TestConfig{App: "web", Objects: []*unstructured.Unstructured{cm("web", "smoke-left", "new=yes")}, Report: func(apply.Change) {}}); err != nil {
		t.Fatalf("tests over an earlier run's object: %v", err)
	}
	if c.Live(left) != nil {
		t.Error("the test object is still there after the tests passed")
	}
}

// TestSetBelongsToOneFleet: a set an earlier version recorded (no fleet)
// is claimed by the next apply, nothing re-created or adopted; an app of
// the same name in another fleet is refused, by apply and delete alike,
// and nothing of the first fleet's is touched.
func TestSetBelongsToOneFleet(t *testing.T) {
	c := kubetest.New(t)
	c.Put(ns("web"))
	objs := []*unstructured.Unstructured{cm("web", "settings", "k=v")}
	mustRun(t, c, apply.Config{Objects: objs}) // as the last release wrote it: no fleet
	uid := c.Live(cm("web", "settings")).GetUID()
	got := mustRun(t, c, apply.Config{Fleet: "team-a", Prune: true, Objects: objs})
	if ch := got["configmap/settings"]; ch.Action != change.Unchanged && ch.Action != change.Configured {
		t.Errorf("claiming the set: %+v", ch)
	}
	set, err := inventory.Load(context.Background(), c.Client, "web")
	if err != nil || set.Fleet != "team-a" || set.Adopted.Len() != 0 || !set.Contents.Members.Has("ConfigMap/web/settings") {
		t.Fatalf("the claimed set: %v %+v", err, set)
	}
	_, err = run(t, c, apply.Config{Fleet: "team-b", Prune: true, AllowEmpty: true})
	if !errors.Is(err, inventory.ErrOtherFleet) {
		t.Errorf("another fleet's apply: %v", err)
	}
	if _, err := apply.Delete(context.Background(), c.Client, "team-b", "web", false, func(apply.Change) {}); !errors.Is(err, inventory.ErrOtherFleet) {
		t.Errorf("another fleet's delete: %v", err)
	}
	if live := c.Live(cm("web", "settings")); live == nil || live.GetUID() != uid {
		t.Errorf("the first fleet's ConfigMap was deleted or re-created: %v", live)
	}
}

// TestCreatedMeanwhileIsAdopted: an object someone creates after the
// apply listed the live objects and before it applies them is adopted
// (the apply's answer names their field manager), not called created, so
// that prune, delete and --atomic release it rather than delete it.
func TestCreatedMeanwhileIsAdopted(t *testing.T) {
	c := kubetest.New(t)
	c.Put(ns("web"))
	theirs := cm("web", "racy", "theirs=yes")
	hold := make(chan struct{})
	c.Inject(kubetest.Fault{Verb: "patch", Name: "racy", Before: hold})
	done := make(chan map[string]apply.Change)
	go func() {
		got, _ := run(t, c, apply.Config{Objects: []*unstructured.Unstructured{cm("web", "racy", "ours=yes")}})
		done <- got
	}()
	// Once the ConfigMaps are listed, someone creates it; then our patch.
	for listed := false; !listed; time.Sleep(time.Millisecond) {
		for _, r := range c.Requests() {
			listed = listed || r.Verb == "list" && r.Resource == "configmaps" && r.Namespace == "web"
		}
	}
	// Created by another field manager: the double records it so.
	if _, err := c.Client.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("web").Create(context.Background(), theirs.DeepCopy(), metav1.CreateOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	close(hold)
	if ch := (<-done)["configmap/racy"]; ch.Action != change.Adopted {
		t.Errorf("created meanwhile: %+v", ch)
	}
	mustRun(t, c, apply.Config{Prune: true, AllowEmpty: true})
	if c.Live(theirs) == nil {
		t.Error("the object someone created meanwhile was deleted by the prune")
	}
}

// TestNamespaceGuardOwners: before a Namespace goes, an object in it whose
// owners are all gone (garbage the collector deletes: a Pod whose
// ReplicaSet went first) does not keep it; one owned by an object that is
// there, outside the Namespace, does.
func TestNamespaceGuardOwners(t *testing.T) {
	c := kubetest.New(t)
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("data"), cm("data", "ours")}})
	policy := kubetest.Object(kubetest.ClusterPolicy.GroupVersion().String(), kubetest.ClusterPolicy.Kind, "", "live")
	c.Put(policy)
	owned := func(name string, owner *unstructured.Unstructured, uid types.UID) *unstructured.Unstructured {
		o := cm("data", name)
		o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: uid}})
		return o
	}
	c.Put(owned("garbage", cm("data", "gone"), "uid-gone"))
	got := mustRun(t, c, apply.Config{Prune: true, AllowEmpty: true})
	if ch := got["namespace/data"]; ch.Action != change.Pruned {
		t.Errorf("a Namespace holding only garbage: %+v", ch)
	}

	c2 := kubetest.New(t)
	mustRun(t, c2, apply.Config{Objects: []*unstructured.Unstructured{ns("data"), cm("data", "ours")}})
	c2.Put(policy)
	c2.Put(owned("held", policy, c2.Live(policy).GetUID()))
	got = mustRun(t, c2, apply.Config{Prune: true, AllowEmpty: true})
	if ch := got["namespace/data"]; ch.Action != change.Kept || !strings.Contains(ch.Reason, "configmaps/held") {
		t.Errorf("a Namespace holding an object whose owner is elsewhere: %+v", ch)
	}
}

// TestNamespaceGuardKinds: what people keep in a Namespace beside an
// app's objects, of any kind (a Secret, a ServiceAccount, a Role), keeps
// it when the app lets it go; the ServiceAccount the cluster makes in
// every Namespace does not.
func TestNamespaceGuardKinds(t *testing.T) {
	for _, tt := range []struct {
		theirs *unstructured.Unstructured
		kept   string // "" for pruned
	}{
		{kubetest.Object("v1", "Secret", "data", "token"), "secrets/token"},
		{kubetest.Object("v1", "ServiceAccount", "data", "builder"), "serviceaccounts/builder"},
		{kubetest.Object("rbac.authorization.k8s.io/v1", "Role", "data", "reader"), "roles/reader"},
		{kubetest.Object("v1", "ServiceAccount", "data", "default"), ""},
	} {
		t.Run(tt.theirs.GetKind()+"/"+tt.theirs.GetName(), func(t *testing.T) {
			c := kubetest.New(t)
			mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("data"), cm("data", "ours")}})
			c.Put(tt.theirs)
			ch := mustRun(t, c, apply.Config{Prune: true, AllowEmpty: true})["namespace/data"]
			switch {
			case tt.kept == "" && ch.Action != change.Pruned:
				t.Errorf("a Namespace holding only what the cluster makes: %+v", ch)
			case tt.kept != "" && (ch.Action != change.Kept || !strings.Contains(ch.Reason, tt.kept)):
				t.Errorf("a Namespace holding %s: %+v", tt.kept, ch)
			}
		})
	}
}

// A new app's first apply writes its parent without asking for the
// kubectl-fleet namespace first when it is there (a round trip less on
// every cluster but the first), and makes it when it is not.
func TestParentNamespaceOnlyWhenMissing(t *testing.T) {
	c := kubetest.New(t)
	ensured := func() int {
		n := 0
		for _, r := range c.Requests() {
			if r.Verb == "patch" && r.Resource == "namespaces" && r.Name == inventory.Namespace {
				n++
			}
		}
		return n
	}
	mustRun(t, c, apply.Config{App: "web", Objects: []*unstructured.Unstructured{ns("web"), cm("web", "a")}})
	if n := ensured(); n != 1 {
		t.Fatalf("first apply on the cluster: namespace %s asked for %d times; want 1", inventory.Namespace, n)
	}
	mustRun(t, c, apply.Config{App: "db", Objects: []*unstructured.Unstructured{ns("db"), cm("db", "b")}})
	if n := ensured(); n != 1 {
		t.Errorf("a second app's first apply asked for namespace %s again (%d in all)", inventory.Namespace, n)
	}
	if set, err := inventory.Load(context.Background(), c.Client, "db"); err != nil || !set.Exists {
		t.Errorf("db's parent: %+v, %v", set, err)
	}
}

// A pause given while an app is written stops its next write and its
// prune, not only the next app: Held is asked before each write; what
// was not written is said, the parent keeps every member, and Run
// returns what held it.
func TestHeldBeforeEachWrite(t *testing.T) {
	paused := errors.New("app web is paused")
	before := []*unstructured.Unstructured{ns("web"), cm("web", "old")}
	render := []*unstructured.Unstructured{ns("web")}
	for i := range 8 {
		render = append(render, cm("web", fmt.Sprintf("c%d", i)))
	}
	for _, tt := range []struct {
		name  string
		after int // Held answers paused from its after-th asking on
	}{{"during the apply", 3}, {"at the prune", 9}} {
		t.Run(tt.name, func(t *testing.T) {
			c := kubetest.New(t)
			mustRun(t, c, apply.Config{Objects: before})
			var asked atomic.Int32
			got, err := run(t, c, apply.Config{Prune: true, Objects: render, Concurrency: 1, HeldEvery: time.Nanosecond,
				Held: func(context.Context) error {
					if asked.Add(1) >= int32(tt.after) {
						return paused
					}
					return nil
				}})
			if !errors.Is(err, paused) {
				t.Fatalf("Run: %v, want the pause", err)
			}
			written := 0
			for i := range 8 {
				if c.Live(cm("web", fmt.Sprintf("c%d", i))) != nil {
					written++
				}
			}
			if want := min(tt.after-1, 8); written != want {
				t.Errorf("%d objects written, want %d (%v)", written, want, actions(got))
			}
			if c.Live(cm("web", "old")) == nil {
				t.Error("pruned after the pause")
			}
			if ms := members(t, c, "web"); !slices.Contains(ms, "ConfigMap/web/old") || !slices.Contains(ms, "ConfigMap/web/c7") {
				t.Errorf("the parent lost members: %v", ms)
			}
		})
	}
}

// A neighbour the prune cannot read keeps the object: a CRD whose custom
// resources may not be listed, a Namespace whose contents may not be, is
// left in the set untouched, whatever the refusal (Forbidden included:
// not allowed to see is not "nothing there").
func TestPruneKeepsWhatItCannotRead(t *testing.T) {
	for _, tt := range []struct {
		name     string
		obj      *unstructured.Unstructured
		resource string
		err      error
	}{
		{"a CRD, Forbidden", crd(), "clusterpolicies", apierrors.NewForbidden(schema.GroupResource{Group: "policy.example.com", Resource: "clusterpolicies"}, "", errors.New("RBAC: list not allowed"))},
		{"a CRD, unavailable", crd(), "clusterpolicies", apierrors.NewServiceUnavailable("etcd is away")},
		{"a Namespace, Forbidden", ns("web"), "configmaps", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("RBAC: list not allowed"))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := kubetest.New(t)
			mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{tt.obj}})
			for range 20 {
				c.Inject(kubetest.Fault{Verb: "list", Resource: tt.resource, Err: tt.err})
			}
			got, _ := run(t, c, apply.Config{Prune: true, AllowEmpty: true})
			if c.Live(tt.obj) == nil {
				t.Fatalf("deleted although what it holds could not be read: %+v", got)
			}
			for _, ch := range got {
				if ch.Action == change.Pruned {
					t.Errorf("said pruned: %+v", ch)
				}
			}
		})
	}
}

// Apply reads the render it is given and never writes into it: a fleet's
// renders share their maps between clusters and are read again after the
// apply (the revision stored, a promotion's notes). What it sends is a
// copy: in scope, labelled as a member, with ignored fields kept live.
func TestApplyLeavesTheRenderAsItWas(t *testing.T) {
	c := kubetest.New(t)
	mustRun(t, c, apply.Config{Objects: []*unstructured.Unstructured{ns("default"), ns("web"), cm("", "settings", "a=1")}})
	objs := []*unstructured.Unstructured{
		kubetest.Object("v1", "Namespace", "guessed", "web"), // cluster-scoped: its namespace goes
		cm("", "settings", "a=2"),                            // the context's namespace, a kept field
		annotate(cm("web", "labelled", "b=1"), "note", "x"),
	}
	objs[2].SetLabels(map[string]string{"tier": "front"})
	before := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		before[i] = o.DeepCopy()
	}
	ignore := []object.IgnoreRule{{Kind: "ConfigMap", Name: "settings", JSONPointers: []string{"/data/a"}}}
	mustRun(t, c, apply.Config{Objects: objs, Ignore: ignore})
	for i, o := range objs {
		if !equality.Semantic.DeepEqual(o.Object, before[i].Object) {
			t.Errorf("apply wrote into the render's %s:\n got %v\nwant %v", object.Ref(o), o.Object, before[i].Object)
		}
	}
	settings := c.Live(cm("default", "settings"))
	if settings == nil || settings.GetLabels()[kubectlapply.ApplysetPartOfLabel] != inventory.ID("web") {
		t.Fatalf("settings was not applied to the context's namespace as a member: %v", settings)
	}
	if a, _, _ := unstructured.NestedString(settings.Object, "data", "a"); a != "1" {
		t.Errorf("the ignored field became %q, want the live 1", a)
	}
	if live := c.Live(objs[2]); live.GetLabels()["tier"] != "front" || live.GetLabels()[kubectlapply.ApplysetPartOfLabel] != inventory.ID("web") {
		t.Errorf("labelled was applied with labels %v, want its own and the set's", live.GetLabels())
	}
}
