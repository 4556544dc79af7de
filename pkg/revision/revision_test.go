package revision

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

func configMaps(n int, value string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i := range n {
		o := kubetest.Object("v1", "ConfigMap", "web", fmt.Sprintf("cm-%d", i))
		o.Object["data"] = map[string]any{"value": value}
		out = append(out, o)
	}
	return out
}

func newCluster(t *testing.T) *kubetest.Cluster {
	c := kubetest.New(t)
	c.Put(kubetest.Object("v1", "Namespace", "", inventory.Namespace))
	return c
}

func TestStoreListLoad(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	for n, value := range []string{"one", "two", "three"} {
		objs := configMaps(2, value)
		r := Revision{App: "web", Number: n + 1, Digest: digest.Render(objs, nil), Description: "apply", Source: Source{Commit: "0123456789abcdef0123", Dirty: n == 2}, User: "alice"}
		if err := Store(ctx, c.Client, &r, objs); err != nil {
			t.Fatal(err)
		}
	}
	// Another app's revision is not listed.
	other := configMaps(1, "other")
	if err := Store(ctx, c.Client, &Revision{App: "db", Number: 1, Digest: digest.Render(other, nil)}, other); err != nil {
		t.Fatal(err)
	}
	list, err := List(ctx, c.Client, "web")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range list {
		got = append(got, fmt.Sprintf("%d %s %s %d %s", r.Number, r.User, r.Source, r.Objects, r.Description))
	}
	want := []string{"1 alice 0123456789ab 2 apply", "2 alice 0123456789ab 2 apply", "3 alice 0123456789ab-dirty 2 apply"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	r, objs, err := Load(ctx, c.Client, "web", 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Number != 2 || len(objs) != 2 || objs[1].Object["data"].(map[string]any)["value"] != "two" {
		t.Errorf("revision 2: %+v %v", r, objs)
	}
	if _, _, err := Load(ctx, c.Client, "web", 7); err == nil || !strings.Contains(err.Error(), "app web has no revision 7 here") {
		t.Errorf("a missing revision: %v", err)
	}
	if Next(list, 0) != 4 || Next(list, 9) != 10 {
		t.Errorf("next: %d, %d", Next(list, 0), Next(list, 9))
	}
}

// TestLargeRenderInSeveralSecrets: a render larger than one Secret is
// split, read back whole, and trimmed whole; one larger than MaxChunks is
// recorded without its objects, and loading it says why.
func TestLargeRenderInSeveralSecrets(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	defer func(size, most int) { ChunkSize, MaxChunks = size, most }(ChunkSize, MaxChunks)
	ChunkSize, MaxChunks = 1024, 4
	random := func(seed uint64) []*unstructured.Unstructured {
		rng := rand.New(rand.NewPCG(seed, seed))
		var b strings.Builder
		for range 3000 {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
		return configMaps(1, b.String()) // ~1.9 KiB compressed: 2 Secrets
	}
	objs := random(1)
	r := Revision{App: "web", Number: 1, Digest: digest.Render(objs, nil)}
	if err := Store(ctx, c.Client, &r, objs); err != nil {
		t.Fatal(err)
	}
	if r.Chunks != 2 || r.NotStored != "" {
		t.Fatalf("chunks %d, not stored %q", r.Chunks, r.NotStored)
	}
	_, back, err := Load(ctx, c.Client, "web", 1)
	if err != nil || digest.Render(back, nil) != r.Digest {
		t.Fatalf("read back: %v", err)
	}
	big := append(append(random(2), random(3)...), random(4)...) // ~5.7 KiB
	big[1].SetName("b")
	big[2].SetName("c")
	r2 := Revision{App: "web", Number: 2, Digest: digest.Render(big, nil)}
	if err := Store(ctx, c.Client, &r2, big); err != nil {
		t.Fatal(err)
	}
	if r2.NotStored == "" || r2.Chunks != 0 {
		t.Fatalf("a render over %d Secrets: %+v", MaxChunks, r2)
	}
	if _, _, err := Load(ctx, c.Client, "web", 2); err == nil || !strings.Contains(err.Error(), "recorded without its objects (the compressed render is") {
		t.Errorf("loading an unstored revision: %v", err)
	}
	list, err := List(ctx, c.Client, "web")
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %v %v", list, err)
	}
	if err := Remove(ctx, c.Client, Expired(list, 1, 2)...); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range c.Objects() {
		if o.GetKind() == "Secret" {
			left = append(left, o.GetName())
		}
	}
	if diff := cmp.Diff([]string{"fleet-web.v2"}, left); diff != "" {
		t.Errorf("after trimming to 1 (-want +got):\n%s", diff)
	}
}

// TestLoadRefusesTamperedObjects: stored objects that do not match the
// recorded digest are never used.
func TestLoadRefusesTamperedObjects(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	objs := configMaps(1, "good")
	r := Revision{App: "web", Number: 1, Digest: digest.Render(configMaps(1, "other"), nil)}
	if err := Store(ctx, c.Client, &r, objs); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(ctx, c.Client, "web", 1); err == nil || !strings.Contains(err.Error(), "do not match its digest") {
		t.Errorf("tampered: %v", err)
	}
	s := c.Live(kubetest.Object("v1", "Secret", inventory.Namespace, SecretName("web", 1)))
	s.Object["data"] = map[string]any{ObjectsKey: "bm90IGd6aXA="} // "not gzip"
	c.Put(s)
	if _, _, err := Load(ctx, c.Client, "web", 1); err == nil || !strings.Contains(err.Error(), "not gzip") {
		t.Errorf("garbage: %v", err)
	}
}

func TestDeleteAll(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	for n := 1; n <= 3; n++ {
		objs := configMaps(1, fmt.Sprint(n))
		if err := Store(ctx, c.Client, &Revision{App: "web", Number: n, Digest: digest.Render(objs, nil)}, objs); err != nil {
			t.Fatal(err)
		}
	}
	if err := DeleteAll(ctx, c.Client, "web"); err != nil {
		t.Fatal(err)
	}
	if list, err := List(ctx, c.Client, "web"); err != nil || len(list) != 0 {
		t.Errorf("left: %v %v", list, err)
	}
}

// A run that died while storing a large revision leaves its later parts
// without the first Secret: they are found as orphans, their number is
// not reused, and DeleteAll removes them.
func TestOrphanedParts(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	defer func(size, most int) { ChunkSize, MaxChunks = size, most }(ChunkSize, MaxChunks)
	ChunkSize, MaxChunks = 1024, 4
	rng := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	for range 3000 {
		b.WriteByte(byte('a' + rng.IntN(26)))
	}
	objs := configMaps(1, b.String()) // 2 Secrets
	ok := Revision{App: "web", Number: 1, Digest: digest.Render(objs, nil)}
	if err := Store(ctx, c.Client, &ok, configMaps(1, "small")); err != nil {
		t.Fatal(err)
	}
	c.Inject(kubetest.Fault{Verb: "patch", Resource: "secrets", Name: "fleet-web.v2", Err: errors.New("the process died")})
	dead := Revision{App: "web", Number: 2, Digest: digest.Render(objs, nil)}
	if err := Store(ctx, c.Client, &dead, objs); err == nil {
		t.Fatal("the fault did not stop the store")
	}
	list, orphans, err := ListAll(ctx, c.Client, "web")
	if err != nil || len(list) != 1 || len(orphans) != 1 || orphans[0].Number != 2 || orphans[0].Chunks != 2 {
		t.Fatalf("list %+v, orphans %+v, %v", list, orphans, err)
	}
	if n := Next(slices.Concat(list, orphans), 1); n != 3 {
		t.Errorf("next revision %d reuses the orphan's number", n)
	}
	if err := DeleteAll(ctx, c.Client, "web"); err != nil {
		t.Fatal(err)
	}
	for _, o := range c.Objects() {
		if o.GetKind() == "Secret" {
			t.Errorf("%s left after DeleteAll", o.GetName())
		}
	}
}

func withSecret(password string) []*unstructured.Unstructured {
	s := kubetest.Object("v1", "Secret", "web", "db")
	s.Object["stringData"] = map[string]any{"password": password}
	return append(configMaps(1, "x"), s)
}

// nextRun is another run's client of the cluster: the digest key is read
// again.
func nextRun(c *kubetest.Cluster) *kube.Client {
	return &kube.Client{Mapper: c.Client.Mapper, Dynamic: c.Client.Dynamic, Metadata: c.Client.Metadata, Core: c.Client.Core, Namespace: c.Client.Namespace}
}

func removeKey(c *kubetest.Cluster) {
	c.Remove(kubetest.Object("v1", "Secret", digest.Namespace, digest.KeySecret))
}

// TestLoadAfterTheKeyIsReplaced: a revision records which key its digest
// was made with and a digest of its objects that needs no key, so it
// still loads once the key was deleted (and another made by the next
// apply, or none yet); objects edited by hand are still refused.
func TestLoadAfterTheKeyIsReplaced(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	key, err := digest.Ensure(ctx, c.Client, "kubectl-fleet")
	if err != nil {
		t.Fatal(err)
	}
	objs := withSecret("hunter2")
	r := Revision{App: "web", Number: 1, Time: time.Now().UTC(), Digest: digest.Render(objs, key)}
	if err := Store(ctx, c.Client, &r, objs); err != nil {
		t.Fatal(err)
	}
	if r.KeyID != key.ID() || r.ObjectsDigest != digest.Unkeyed(objs) {
		t.Fatalf("recorded key %q (want %q), objects digest %q", r.KeyID, key.ID(), r.ObjectsDigest)
	}
	if list, err := List(ctx, c.Client, "web"); err != nil || len(list) != 1 || list[0].KeyID != key.ID() || list[0].ObjectsDigest != r.ObjectsDigest {
		t.Fatalf("listed: %+v, %v", list, err)
	}
	removeKey(c)
	if _, _, err := Load(ctx, nextRun(c), "web", 1); err != nil {
		t.Errorf("with no key: %v", err)
	}
	next := nextRun(c)
	if k2, err := digest.Ensure(ctx, next, "kubectl-fleet"); err != nil || string(k2) == string(key) {
		t.Fatalf("another key: %v", err)
	}
	_, back, err := Load(ctx, next, "web", 1)
	if err != nil {
		t.Fatalf("with another key: %v", err)
	}
	if diff := cmp.Diff(objs, back); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	// Edited by hand: refused, under whatever key.
	tampered, _, err := encode(withSecret("letmein"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Live(kubetest.Object("v1", "Secret", inventory.Namespace, SecretName("web", 1)))
	s.Object["data"] = map[string]any{ObjectsKey: base64.StdEncoding.EncodeToString(tampered)}
	c.Put(s)
	if _, _, err := Load(ctx, nextRun(c), "web", 1); err == nil || !strings.Contains(err.Error(), "do not match its digest") {
		t.Errorf("edited by hand: %v", err)
	}
}

// legacy makes revision n as versions before the objects digest recorded
// it: no key ID, no digest of the objects.
func legacy(t *testing.T, c *kubetest.Cluster, n int) {
	t.Helper()
	s := c.Live(kubetest.Object("v1", "Secret", inventory.Namespace, SecretName("web", n)))
	ann := s.GetAnnotations()
	delete(ann, ObjectsDigestAnnotation)
	var info map[string]any
	if err := json.Unmarshal([]byte(ann[InfoAnnotation]), &info); err != nil {
		t.Fatal(err)
	}
	delete(info, "keyID")
	b, _ := json.Marshal(info)
	ann[InfoAnnotation] = string(b)
	s.SetAnnotations(ann)
	c.Put(s)
}

// TestLoadLegacyRevisionAfterTheKeyIsReplaced: a revision recorded before
// revisions kept a digest of their objects, holding a Secret, cannot be
// checked once its key is gone: refused, saying so, not "do not match".
// With its key, or recorded without one, or without Secret values, it
// loads as it did.
func TestLoadLegacyRevisionAfterTheKeyIsReplaced(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	key, err := digest.Ensure(ctx, c.Client, "kubectl-fleet")
	if err != nil {
		t.Fatal(err)
	}
	// Recorded before the key was made (the fake makes every object on
	// 2026-01-01) and so, after the key is replaced, before that one.
	before := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	store := func(n int, objs []*unstructured.Unstructured, d string) {
		t.Helper()
		if err := Store(ctx, c.Client, &Revision{App: "web", Number: n, Time: before, Digest: d}, objs); err != nil {
			t.Fatal(err)
		}
		legacy(t, c, n)
	}
	store(1, withSecret("hunter2"), digest.Render(withSecret("hunter2"), key))
	store(2, withSecret("hunter2"), digest.WithoutValues(withSecret("hunter2"))) // by a user without the key
	store(3, configMaps(2, "x"), digest.Render(configMaps(2, "x"), key))
	for n := 1; n <= 3; n++ {
		if _, _, err := Load(ctx, nextRun(c), "web", n); err != nil {
			t.Errorf("revision %d with its key: %v", n, err)
		}
	}
	removeKey(c)
	if _, _, err := Load(ctx, nextRun(c), "web", 1); err == nil || !strings.Contains(err.Error(), "the digest key kubectl-fleet/fleet-digest-key it was recorded with cannot be read") {
		t.Errorf("without a key: %v", err)
	}
	next := nextRun(c)
	if _, err := digest.Ensure(ctx, next, "kubectl-fleet"); err != nil {
		t.Fatal(err)
	}
	_, _, err = Load(ctx, next, "web", 1)
	if err == nil || !strings.Contains(err.Error(), "revision 1 of app web: the digest key kubectl-fleet/fleet-digest-key was replaced since this revision was recorded") || strings.Contains(err.Error(), "do not match") {
		t.Errorf("with another key: %v", err)
	}
	for n := 2; n <= 3; n++ {
		if _, _, err := Load(ctx, next, "web", n); err != nil {
			t.Errorf("revision %d with another key: %v", n, err)
		}
	}
	// Recorded after the key was made: a mismatch is an edit.
	objs := withSecret("hunter2")
	key2, _ := digest.KeyOf(ctx, next)
	if err := Store(ctx, next, &Revision{App: "web", Number: 4, Time: time.Now().UTC(), Digest: digest.Render(withSecret("letmein"), key2)}, objs); err != nil {
		t.Fatal(err)
	}
	legacy(t, c, 4)
	if _, _, err := Load(ctx, next, "web", 4); err == nil || !strings.Contains(err.Error(), "do not match its digest") {
		t.Errorf("edited: %v", err)
	}
}
