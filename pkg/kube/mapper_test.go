package kube

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// cachedFake is a cluster's discovery: fresh or read from a disk cache.
type cachedFake struct {
	*fakediscovery.FakeDiscovery
	mu          sync.Mutex
	fresh       bool
	invalidated int
	// after are the resources served once the cache is invalidated.
	after []*metav1.APIResourceList
}

// ServerGroupsAndResourcesWithContext lists the groups in a stable order,
// as API servers do (the fake's come from a map).
func (c *cachedFake) ServerGroupsAndResourcesWithContext(ctx context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	groups, resources, err := c.FakeDiscovery.ServerGroupsAndResourcesWithContext(ctx)
	slices.SortFunc(groups, func(a, b *metav1.APIGroup) int { return strings.Compare(a.Name, b.Name) })
	return groups, resources, err
}

func (c *cachedFake) Fresh() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fresh
}

func (c *cachedFake) Invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.invalidated++
	c.fresh = true
	if c.after != nil {
		c.Resources = c.after
	}
}

func discoveryOf(fresh bool, lists ...*metav1.APIResourceList) *cachedFake {
	return &cachedFake{FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: lists}}, fresh: fresh}
}

var (
	coreV1 = &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"get", "list", "patch"}},
		{Name: "namespaces", Kind: "Namespace", Verbs: []string{"get", "list", "patch"}},
	}}
	appsV1 = &metav1.APIResourceList{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: []string{"get", "list", "patch"}},
	}}
	widgetsV1 = &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: []string{"get", "list", "patch"}},
	}}
)

func TestClustersOfOneSurfaceShareTheirMapper(t *testing.T) {
	a := newSharedMapper(discoveryOf(true, coreV1, appsV1))
	b := newSharedMapper(discoveryOf(true, coreV1, appsV1))
	c := newSharedMapper(discoveryOf(true, coreV1, appsV1, widgetsV1))
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	ma, err := a.RESTMapping(deploy, "v1")
	if err != nil {
		t.Fatal(err)
	}
	mb, err := b.RESTMapping(deploy, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if ma != mb || a.delegate != b.delegate {
		t.Error("two clusters serving the same API surface built a mapper each")
	}
	if ma.Resource.Resource != "deployments" || ma.Scope.Name() != "namespace" {
		t.Errorf("mapping %+v, want namespaced deployments", ma)
	}
	if _, err := c.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"}); err != nil {
		t.Fatal(err)
	}
	if c.delegate == a.delegate {
		t.Error("a cluster serving another kind got the mapper of a cluster that does not serve it")
	}
	if _, err := a.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"}); err == nil {
		t.Error("a cluster without widgets mapped one")
	}
	if m, err := a.RESTMapping(schema.GroupKind{Kind: "Namespace"}); err != nil || m.Scope.Name() != "root" {
		t.Errorf("Namespace: %+v, %v; want a cluster-scoped mapping", m, err)
	}
}

func TestSharedMapperDiscoversAgain(t *testing.T) {
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	t.Run("a kind the disk cache predates", func(t *testing.T) {
		dc := discoveryOf(false, coreV1)
		dc.after = []*metav1.APIResourceList{coreV1, widgetsV1}
		m := newSharedMapper(dc)
		if _, err := m.RESTMapping(widget, "v1"); err != nil {
			t.Fatalf("a kind served since the cache was written: %v", err)
		}
		if dc.invalidated != 1 {
			t.Errorf("invalidated %d times, want 1", dc.invalidated)
		}
	})
	t.Run("a fresh discovery is not asked again", func(t *testing.T) {
		dc := discoveryOf(true, coreV1)
		m := newSharedMapper(dc)
		if _, err := m.RESTMapping(widget, "v1"); err == nil {
			t.Fatal("mapped a kind the cluster does not serve")
		}
		if dc.invalidated != 0 {
			t.Errorf("invalidated %d times, want 0", dc.invalidated)
		}
	})
	t.Run("Reset, after new CRDs", func(t *testing.T) {
		dc := discoveryOf(true, coreV1)
		m := newMapper(dc, diskCache{}) // as the client has it: behind kubectl's short names
		if _, err := m.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}); err != nil {
			t.Fatal(err)
		}
		dc.Resources = []*metav1.APIResourceList{coreV1, widgetsV1}
		meta.MaybeResetRESTMapper(m) // as apply does, once the CRDs are established
		if _, err := m.RESTMapping(widget); err != nil {
			t.Fatalf("after Reset: %v", err)
		}
	})
}

// TestSameCachedFilesAreDecodedOnce: a cluster whose discovery cache holds
// the bytes another cluster's mapper was decoded from gets that mapper
// without asking its own discovery; a cache older than kubectl's TTL, or
// other bytes, are decoded; and a miss on a mapper got that way discovers
// again, as one on cached discovery does.
func TestSameCachedFilesAreDecodedOnce(t *testing.T) {
	write := func(age time.Duration, groups string) string {
		dir := t.TempDir()
		for name, body := range map[string]string{"servergroups.json": groups, "apps/v1/serverresources.json": `{"groupVersion":"apps/v1"}`, "v1/serverresources.json": `{"groupVersion":"v1"}`} {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, time.Now().Add(-age), time.Now().Add(-age)); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	groups := `{"kind":"APIGroupList","groups":[{"name":"","versions":[{"groupVersion":"v1"}]},{"name":"apps","versions":[{"groupVersion":"apps/v1"}]}]}`
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	a := &sharedMapper{dc: discoveryOf(true, coreV1, appsV1), cache: diskCache{write(0, groups), discoveryTTL}}
	if _, err := a.RESTMapping(deploy, "v1"); err != nil {
		t.Fatal(err)
	}
	// b's own discovery serves nothing: had it been decoded, Deployment
	// would not map.
	bDiscovery := discoveryOf(true)
	b := &sharedMapper{dc: bDiscovery, cache: diskCache{write(time.Hour, groups), discoveryTTL}}
	if _, err := b.RESTMapping(deploy, "v1"); err != nil || b.delegate != a.delegate {
		t.Errorf("the same cached bytes: %v, shared %v", err, b.delegate == a.delegate)
	}
	other := write(0, groups)
	if err := os.WriteFile(filepath.Join(other, "apps", "v1", "serverresources.json"), []byte(`{"groupVersion":"apps/v1","resources":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := write(0, `{"kind":"APIGroupList","groups":[{"name":"apps","versions":[{"groupVersion":"apps/v1"},{"groupVersion":"apps/v2"}]}]}`)
	for name, dir := range map[string]string{"older than the TTL": write(7*time.Hour, groups), "other bytes": other, "a listed group version not cached": missing} {
		m := &sharedMapper{dc: discoveryOf(true), cache: diskCache{dir, discoveryTTL}}
		if _, err := m.RESTMapping(deploy, "v1"); err == nil {
			t.Errorf("%s: mapped from another cluster's discovery", name)
		}
	}
	// A servergroups.json larger than the digest's buffer (a cluster
	// with many CRDs) is read whole: the same bytes still share.
	big := groups[:len(groups)-1] + strings.Repeat(" ", 100<<10) + "}"
	c1 := &sharedMapper{dc: discoveryOf(true, coreV1, appsV1), cache: diskCache{write(0, big), discoveryTTL}}
	c2 := &sharedMapper{dc: discoveryOf(true), cache: diskCache{write(0, big), discoveryTTL}}
	if _, err := c1.RESTMapping(deploy, "v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.RESTMapping(deploy, "v1"); err != nil || c2.delegate != c1.delegate {
		t.Errorf("the same large cached bytes: %v, shared %v", err, c2.delegate == c1.delegate)
	}
	// A kind b's cache predates: b discovers again, from its server.
	bDiscovery.after = []*metav1.APIResourceList{coreV1, appsV1, widgetsV1}
	if _, err := b.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"}, "v1"); err != nil || bDiscovery.invalidated != 1 {
		t.Errorf("a kind served since the cache was written: %v, invalidated %d times", err, bDiscovery.invalidated)
	}
}
