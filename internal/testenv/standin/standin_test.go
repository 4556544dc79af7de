package standin

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// start serves one cluster and returns a kubectl fleet client for it.
func start(t *testing.T) (*Env, *kube.Client) {
	t.Helper()
	env, err := Start(t.Context(), Options{Clusters: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	flags := genericclioptions.NewConfigFlags(true)
	kc, ctxName, cacheDir := env.Kubeconfig, env.Clusters[0].Context, filepath.Join(t.TempDir(), "cache")
	flags.KubeConfig, flags.Context, flags.CacheDir = &kc, &ctxName, &cacheDir
	c, err := kube.NewClient(flags)
	if err != nil {
		t.Fatal(err)
	}
	return env, c
}

func objects(t *testing.T, revision string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range []string{
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: app, labels: {app.kubernetes.io/name: settings}}\ndata: {revision: \"" + revision + "\"}\n",
		`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.` + revision + `"}]}
`,
	} {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// run applies objs with the plugin's engine and returns each object's
// action.
func run(t *testing.T, c *kube.Client, version string, objs []*unstructured.Unstructured) map[string]change.Action {
	t.Helper()
	got := map[string]change.Action{}
	var errs []error
	var mu sync.Mutex // Report is called from the engine's workers
	err := apply.Run(t.Context(), c, apply.Config{App: "demo", Version: version, Objects: objs, Prune: true, Concurrency: 4, Report: func(ch apply.Change) {
		mu.Lock()
		defer mu.Unlock()
		got[ch.Ref] = ch.Action
		if ch.Err != nil {
			errs = append(errs, ch.Err)
		}
	}})
	if err != nil || len(errs) > 0 {
		t.Fatalf("apply: %v %v", err, errs)
	}
	return got
}

// The plugin's apply engine sees what it sees on a real server: a create
// creates, the same apply again changes nothing (the resourceVersion
// stays), and a change configures only what changed, moving a
// Deployment's generation.
func TestApplyCreateNoOpChange(t *testing.T) {
	env, c := start(t)
	want := func(got map[string]change.Action, actions map[string]change.Action) {
		t.Helper()
		for ref, a := range actions {
			if got[ref] != a {
				t.Errorf("%s: %s, want %s (all: %v)", ref, got[ref], a, got)
			}
		}
	}
	want(run(t, c, "dev", objects(t, "1")), map[string]change.Action{"namespace/app": change.Created, "configmap/settings": change.Created, "deployment.apps/web": change.Created})
	// A development build sends every object again: the server must
	// answer the same resourceVersion, in a later second too (the
	// managedFields' times do not move).
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	want(run(t, c, "dev", objects(t, "1")), map[string]change.Action{"namespace/app": change.Unchanged, "configmap/settings": change.Unchanged, "deployment.apps/web": change.Unchanged})
	deployments := c.Dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("app")
	d, err := deployments.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.GetGeneration() != 1 || len(d.GetManagedFields()) != 1 || d.GetManagedFields()[0].Manager != apply.FieldManager {
		t.Errorf("deployment: generation %d, managedFields %v; want 1, one entry of %s", d.GetGeneration(), d.GetManagedFields(), apply.FieldManager)
	}
	if st, ok := d.Object["status"].(map[string]any); !ok || len(st) != 0 {
		t.Errorf("deployment status %v, want {} (no controllers)", d.Object["status"])
	}
	want(run(t, c, "dev", objects(t, "2")), map[string]change.Action{"namespace/app": change.Unchanged, "configmap/settings": change.Configured, "deployment.apps/web": change.Configured})
	if d2, err := deployments.Get(t.Context(), "web", metav1.GetOptions{}); err != nil || d2.GetGeneration() != 2 {
		t.Errorf("deployment after a change: generation %d (%v), want 2", d2.GetGeneration(), err)
	}
	// A release build skips what its digests say is unchanged: nothing
	// of the app is written.
	run(t, c, "v1.0.0", objects(t, "2"))
	rvs := func() []string {
		d, err1 := deployments.Get(t.Context(), "web", metav1.GetOptions{})
		cm, err2 := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("app").Get(t.Context(), "settings", metav1.GetOptions{})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		return []string{d.GetResourceVersion(), cm.GetResourceVersion()}
	}
	before := rvs()
	want(run(t, c, "v1.0.0", objects(t, "2")), map[string]change.Action{"namespace/app": change.Unchanged, "configmap/settings": change.Unchanged, "deployment.apps/web": change.Unchanged})
	if after := rvs(); !slices.Equal(before, after) {
		t.Errorf("a no-op apply moved resourceVersions %v to %v", before, after)
	}
	if env.Clusters[0].Requests() == 0 || env.Clusters[0].Counts()["discovery"] == 0 {
		t.Errorf("counts %v: want discovery and more", env.Clusters[0].Counts())
	}
}

// Optimistic concurrency, preconditions, conflicts between field
// managers, dry runs, metadata lists in protobuf and reviews answer as a
// real server's do.
func TestServerSemantics(t *testing.T) {
	_, c := start(t)
	ctx := context.Background()
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "kubectl-fleet"}}}
	nsRes := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	if _, err := nsRes.Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	leases := c.Dynamic.Resource(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}).Namespace("kubectl-fleet")
	lease := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": map[string]any{"name": "fleet-demo"}, "spec": map[string]any{"holderIdentity": "a"}}}
	created, err := leases.Create(ctx, lease, metav1.CreateOptions{FieldManager: "kubectl-fleet"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}
	next := created.DeepCopy()
	next.Object["spec"] = map[string]any{"holderIdentity": "b"}
	updated, err := leases.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil || updated.GetResourceVersion() == created.GetResourceVersion() {
		t.Fatalf("update: %v, resourceVersion %s → %s", err, created.GetResourceVersion(), updated.GetResourceVersion())
	}
	if _, err := leases.Update(ctx, next, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with a stale resourceVersion: %v, want Conflict", err)
	}
	uid, rv := created.GetUID(), created.GetResourceVersion()
	if err := leases.Delete(ctx, "fleet-demo", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with a stale resourceVersion: %v, want Conflict", err)
	}
	rv = updated.GetResourceVersion()
	if err := leases.Delete(ctx, "fleet-demo", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}); err != nil {
		t.Errorf("delete: %v", err)
	}
	if _, err := leases.Get(ctx, "fleet-demo", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}

	cms := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("kubectl-fleet")
	cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"}}`)
	if _, err := cms.Patch(ctx, "a", types.ApplyPatchType, cm, metav1.PatchOptions{FieldManager: "one", DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a dry-run apply stored the object: %v", err)
	}
	if _, err := cms.Patch(ctx, "a", types.ApplyPatchType, cm, metav1.PatchOptions{FieldManager: "one"}); err != nil {
		t.Fatal(err)
	}
	other := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"w"}}`)
	if _, err := cms.Patch(ctx, "a", types.ApplyPatchType, other, metav1.PatchOptions{FieldManager: "two"}); !apierrors.IsConflict(err) {
		t.Errorf("another manager's apply of an owned field: %v, want Conflict", err)
	}
	force := true
	if got, err := cms.Patch(ctx, "a", types.ApplyPatchType, other, metav1.PatchOptions{FieldManager: "two", Force: &force}); err != nil || got.Object["data"].(map[string]any)["k"] != "w" {
		t.Errorf("forced apply: %v", err)
	}
	if _, err := cms.Patch(ctx, "b", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`), metav1.PatchOptions{FieldManager: "one"}); err != nil {
		t.Fatal(err)
	}
	list, err := c.Metadata.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("kubectl-fleet").List(ctx, metav1.ListOptions{LabelSelector: "x=1"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "a" || list.Items[0].UID == "" {
		t.Errorf("metadata list x=1: %v, %+v", err, list)
	}
	// The typed client reads built-in kinds in protobuf, as from
	// kube-apiserver; the dynamic one, and custom kinds, in JSON.
	var contentType string
	typed := &corev1.ConfigMapList{}
	err = c.Core.RESTClient().Get().Namespace("kubectl-fleet").Resource("configmaps").Do(ctx).ContentType(&contentType).Into(typed)
	if err != nil || contentType != runtime.ContentTypeProtobuf || len(typed.Items) != 2 || typed.Items[0].Data["k"] != "w" {
		t.Errorf("typed list: %v, %s, %+v", err, contentType, typed.Items)
	}
	if got, err := c.Core.ConfigMaps("kubectl-fleet").Get(ctx, "a", metav1.GetOptions{}); err != nil || got.Labels["x"] != "1" {
		t.Errorf("typed get: %v, %+v", err, got)
	}
	review, err := c.Dynamic.Resource(schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "selfsubjectreviews"}).Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}}, metav1.CreateOptions{})
	if user, _, _ := unstructured.NestedString(review.Object, "status", "userInfo", "username"); err != nil || user != "admin" {
		t.Errorf("SelfSubjectReview: %v, user %q", err, user)
	}
	if err := nsRes.Delete(ctx, "kubectl-fleet", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ns, err := nsRes.Get(ctx, "kubectl-fleet", metav1.GetOptions{}); err != nil || ns.GetDeletionTimestamp() == nil {
		t.Errorf("a deleted Namespace: %v; want it Terminating", err)
	}
	if _, err := cms.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create in a terminating namespace: %v, want Forbidden", err)
	}
}

// The stand-in measures; the e2e suite proves behaviour on real servers
// only: no test there may import it.
func TestNotUsedByTheE2ESuite(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "test", "e2e", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no e2e sources found (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"github.com/kubectl-fleet/kubectl-fleet/internal/testenv/standin"`) {
			t.Errorf("%s imports the stand-in: the e2e proofs run on real API servers (package testenv)", f)
		}
	}
}

// What the servers would log is counted by kind, the client's address
// left out, and in all.
func TestServerErrorKinds(t *testing.T) {
	env := &Env{}
	w := countWriter{&env.errorKinds}
	_, _ = w.Write([]byte("http: TLS handshake error from 127.0.0.1:5001: EOF\n"))
	_, _ = w.Write([]byte("http: TLS handshake error from 127.0.0.1:5002: EOF\nhttp: TLS handshake error from 127.0.0.1:5003: remote error: tls: bad certificate\n"))
	want := map[string]int64{"TLS handshake error: EOF": 2, "TLS handshake error: remote error: tls: bad certificate": 1}
	if got := env.ServerErrorKinds(); !maps.Equal(got, want) || env.ServerErrors() != 3 {
		t.Errorf("kinds %v, %d in all; want %v, 3", got, env.ServerErrors(), want)
	}
}
