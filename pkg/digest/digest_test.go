package digest_test

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

func cm(name, value string) *unstructured.Unstructured {
	o := kubetest.Object("v1", "ConfigMap", "web", name)
	o.Object["data"] = map[string]any{"value": value}
	return o
}

func secret(password string) *unstructured.Unstructured {
	o := kubetest.Object("v1", "Secret", "web", "db")
	o.Object["stringData"] = map[string]any{"password": password}
	return o
}

func TestRenderIgnoresOrderNotContent(t *testing.T) {
	a := []*unstructured.Unstructured{cm("a", "x"), cm("b", "x"), cm("c", "x")}
	b := []*unstructured.Unstructured{cm("c", "x"), cm("b", "x"), cm("a", "x")}
	if digest.Render(a, nil) != digest.Render(b, nil) {
		t.Error("the same objects in another order have another digest")
	}
	b[1] = cm("b", "y")
	if digest.Render(a, nil) == digest.Render(b, nil) {
		t.Error("a changed value keeps the digest")
	}
	if d := digest.Render(nil, nil); !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
		t.Errorf("digest %q", d)
	}
}

// A Secret's values enter digests only through the key: someone who reads
// the digest (in a ConfigMap, a plan file) and guesses a password cannot
// check the guess without it. With the key a changed value still changes
// the digest; without one (not readable) values are left out.
func TestSecretValuesAreKeyed(t *testing.T) {
	k1, k2 := digest.Key("0123456789abcdef0123456789abcdef"), digest.Key("fedcba9876543210fedcba9876543210")
	hunter2 := []*unstructured.Unstructured{secret("hunter2"), cm("a", "x")}
	other := []*unstructured.Unstructured{secret("letmein"), cm("a", "x")}
	if digest.Render(hunter2, k1) == digest.Render(other, k1) || digest.Object(hunter2[0], k1) == digest.Object(other[0], k1) {
		t.Error("with a key, a changed password keeps the digest")
	}
	if digest.Render(hunter2, k1) == digest.Render(hunter2, k2) || digest.Object(hunter2[0], k1) == digest.Object(hunter2[0], k2) {
		t.Error("the digest does not depend on the key: a guess can be checked without it")
	}
	if digest.Render(hunter2, nil) == digest.Render(hunter2, k1) || digest.Object(hunter2[0], nil) == digest.Object(hunter2[0], k1) {
		t.Error("without a key, the digest is the keyed one")
	}
	// A ConfigMap's values are not keyed: its digest is the same under
	// any key (renders without Secrets keep the digests they had).
	if digest.Object(cm("a", "x"), k1) != digest.Object(cm("a", "x"), k2) || digest.Object(cm("a", "x"), nil) != digest.Object(cm("a", "x"), k1) {
		t.Error("a ConfigMap's digest depends on the key")
	}
	// The digest of earlier versions (revisions recorded then still load)
	// is the keyed one for renders without Secrets.
	cms := []*unstructured.Unstructured{cm("a", "x"), cm("b", "y")}
	if digest.Unkeyed(cms) != digest.Render(cms, k1) || digest.Unkeyed(hunter2) == digest.Unkeyed(other) {
		t.Error("Unkeyed")
	}
	// What is hashed does not hold the value: the object is not changed.
	if v, _, _ := unstructured.NestedString(hunter2[0].Object, "stringData", "password"); v != "hunter2" {
		t.Errorf("digest changed the object: %q", v)
	}
}

// Ensure makes the key once (and its namespace); every later read gets
// it; a user who may not read Secrets gets none, and no error.
func TestEnsureAndKeyOf(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	if k, err := digest.KeyOf(ctx, c.Client); k != nil || err != nil {
		t.Fatalf("before any apply: %v, %v", k, err)
	}
	k, err := digest.Ensure(ctx, c.Client, "kubectl-fleet")
	if err != nil || len(k) != 32 {
		t.Fatalf("Ensure: %d bytes, %v", len(k), err)
	}
	if c.Live(kubetest.Object("v1", "Namespace", "", digest.Namespace)) == nil || c.Live(kubetest.Object("v1", "Secret", digest.Namespace, digest.KeySecret)) == nil {
		t.Fatal("the key or its namespace was not created")
	}
	again, err := digest.KeyOf(ctx, kubetest.New(t).Client)
	if err != nil || again != nil {
		t.Errorf("another cluster: %v, %v", again, err)
	}
	// Another client of the same cluster (the next run) reads it.
	if read, err := digest.KeyOf(ctx, &kube.Client{Dynamic: c.Client.Dynamic}); err != nil || string(read) != string(k) {
		t.Errorf("read back: %v", err)
	}
	k2, err := digest.Ensure(ctx, c.Client, "kubectl-fleet")
	if err != nil || string(k2) != string(k) {
		t.Errorf("a second Ensure made another key: %v", err)
	}

	d := kubetest.New(t)
	d.Inject(kubetest.Fault{Verb: "get", Resource: "secrets", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, digest.KeySecret, errors.New("RBAC"))})
	d.Inject(kubetest.Fault{Verb: "create", Resource: "secrets", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, digest.KeySecret, errors.New("RBAC"))})
	if k, err := digest.Ensure(ctx, d.Client, "kubectl-fleet"); k != nil || err != nil {
		t.Errorf("not allowed: %v, %v", k, err)
	}
}

// Without a key a Secret's values cannot enter a digest safely, and a
// digest without them would call a rotated password unchanged: apply,
// diff and reconcile would skip it. So nothing holding a Secret's values
// compares equal without a key: its object digest is "" (never
// unchanged), its render's digest is NoKey and random, equal to no other,
// not even the next one of the same render. Objects without Secret values
// keep their digests.
func TestNoKeyComparesNothing(t *testing.T) {
	render := []*unstructured.Unstructured{secret("hunter2"), cm("a", "x")}
	if d := digest.Object(render[0], nil); d != "" {
		t.Errorf("a Secret's digest without a key: %q", d)
	}
	a, b := digest.Render(render, nil), digest.Render(render, nil)
	if a == b || !strings.HasPrefix(a, digest.NoKey) || digest.Comparable(a) {
		t.Errorf("the same render without a key: %q, %q", a, b)
	}
	if !digest.Comparable(digest.Render(render, digest.Key("0123456789abcdef0123456789abcdef"))) || !digest.Keyed(render) {
		t.Error("a keyed digest is not comparable, or the render's digest does not depend on the key")
	}
	empty := kubetest.Object("v1", "Secret", "web", "empty")
	empty.Object["data"] = map[string]any{}
	plain := []*unstructured.Unstructured{empty, cm("a", "x")}
	if digest.Object(empty, nil) == "" || digest.Render(plain, nil) != digest.Render(plain, nil) || digest.Keyed(plain) {
		t.Error("a Secret without values lost its digest without a key")
	}
	// Renders recorded by earlier versions without a key left the values
	// out: WithoutValues is that digest, for revisions recorded then.
	if digest.WithoutValues(render) != digest.WithoutValues([]*unstructured.Unstructured{secret("letmein"), cm("a", "x")}) || digest.WithoutValues(plain) != digest.Render(plain, nil) {
		t.Error("WithoutValues")
	}
}

// A key's ID names it in what is recorded with it, and says nothing of it.
func TestKeyID(t *testing.T) {
	k1, k2 := digest.Key("0123456789abcdef0123456789abcdef"), digest.Key("fedcba9876543210fedcba9876543210")
	if digest.Key(nil).ID() != "" || k1.ID() == "" || k1.ID() == k2.ID() || k1.ID() != digest.Key(string(k1)).ID() {
		t.Errorf("IDs: %q %q", k1.ID(), k2.ID())
	}
	if strings.Contains(k1.ID(), hex.EncodeToString(k1[:6])) || len(k1.ID()) > 24 {
		t.Errorf("ID %q", k1.ID())
	}
}
