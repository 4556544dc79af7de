package revision

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube/kubetest"
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
