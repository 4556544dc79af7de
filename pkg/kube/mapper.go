package kube

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
)

// sharedMapper is a cluster's REST mapper, as client-go's
// DeferredDiscoveryRESTMapper makes it (built from the cluster's
// discovery on first use, discovered again on a miss when the discovery
// came from the disk cache, and on Reset), except that clusters serving
// the same API surface share one: the mapper built from a discovery is
// kept by the digest of that discovery, with the mappings it gave. A
// fleet of 1,000 clusters of one Kubernetes version and CRDs builds and
// holds one mapper, not 1,000 (15% of a 300-cluster no-op's live heap).
// Safe for concurrent use.
type sharedMapper struct {
	dc discovery.CachedDiscoveryInterface
	// cache is the cluster's discovery as cached on disk, read raw: a
	// cluster whose cached files are byte for byte another's gets that
	// cluster's surface without decoding them (the zero cache: none).
	cache diskCache

	mu       sync.Mutex
	delegate *surface
	// raw says the surface came from the raw cache, not from dc: a miss
	// discovers again, as one on cached discovery does.
	raw bool
}

// A mapper without the context methods loses Reset in the wrapper
// client-go puts around it (restmapper.NewShortcutExpander).
var _ meta.ResettableRESTMapperWithContext = (*sharedMapper)(nil)

// surface is the mapper of one API surface (a discovery digest), shared
// by every cluster that serves it, with the mappings it gave.
type surface struct {
	meta.RESTMapper
	// mappings are read for every object of every cluster: a map of
	// the key's own type, not a sync.Map, whose hash of an interface
	// holding the key took a third of a 1,000-cluster no-op's mapping.
	mu       sync.RWMutex
	mappings map[mappingKey]*meta.RESTMapping
}

type mappingKey struct {
	gk       schema.GroupKind
	versions string
}

// surfaces are the API surfaces the process's clusters serve, by
// discovery digest. An entry lives as long as a cluster's mapper holds
// it.
var surfaces weakCache[[sha256.Size]byte, surface]

// surfaceOf returns the shared mapper of groups, making it if no cluster
// holds one. The digest covers the groups in their order, which sets the
// mapper's preferences: servers list them in a stable order.
func surfaceOf(groups []*restmapper.APIGroupResources) (*surface, error) {
	b, err := json.Marshal(groups)
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256(b)
	if s := surfaces.get(key); s != nil {
		return s, nil
	}
	return surfaces.put(key, &surface{RESTMapper: restmapper.NewDiscoveryRESTMapper(groups)}), nil
}

// RESTMapping is the surface's mapping of gk, kept once given: every
// object of a kind, on every cluster of the surface, gets the same one.
// The caller must not change it.
func (s *surface) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := mappingKey{gk: gk}
	if len(versions) == 1 {
		key.versions = versions[0] // the common case, without a join
	} else {
		key.versions = strings.Join(versions, ",")
	}
	s.mu.RLock()
	m, ok := s.mappings[key]
	s.mu.RUnlock()
	if ok {
		return m, nil
	}
	m, err := s.RESTMapper.RESTMapping(gk, versions...)
	if err == nil {
		s.mu.Lock()
		if s.mappings == nil {
			s.mappings = map[mappingKey]*meta.RESTMapping{}
		}
		s.mappings[key] = m
		s.mu.Unlock()
	}
	return m, err
}

// newMapper is the REST mapper of the cluster dc discovers, as kubectl's
// (with its short names: "deploy"), shared by surface; cache is where dc
// caches it on disk.
func newMapper(dc discovery.CachedDiscoveryInterface, cache diskCache) meta.RESTMapper {
	return restmapper.NewShortcutExpander(&sharedMapper{dc: dc, cache: cache}, dc, func(string) {})
}

// newSharedMapper is the mapper of the cluster dc discovers.
func newSharedMapper(dc discovery.CachedDiscoveryInterface) *sharedMapper {
	return &sharedMapper{dc: dc}
}

func (d *sharedMapper) get() (*surface, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.delegate != nil {
		return d.delegate, nil
	}
	files, read := d.cache.digest()
	if read {
		if s := rawSurfaces.get(files); s != nil {
			d.delegate, d.raw = s, true
			return s, nil
		}
	}
	groups, err := restmapper.GetAPIGroupResources(d.dc)
	if err != nil {
		return nil, err
	}
	if d.delegate, err = surfaceOf(groups); err != nil {
		return nil, err
	}
	// Kept by the files' digest only when they are what was decoded (the
	// discovery did not fetch and rewrite them meanwhile).
	if after, ok := d.cache.digest(); read && ok && after == files {
		rawSurfaces.put(files, d.delegate)
	}
	return d.delegate, nil
}

// Reset forgets the discovery: the next mapping discovers again (after
// new CRDs are established), from the server.
func (d *sharedMapper) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dc.Invalidate()
	d.delegate, d.raw = nil, false
	d.cache = diskCache{} // the files are dc's to refresh now
}

// cached says whether the mapper's discovery came from a cache, and may
// lack what the server added since.
func (d *sharedMapper) cached() bool {
	d.mu.Lock()
	raw := d.raw
	d.mu.Unlock()
	return raw || !d.dc.Fresh()
}

// mapped asks the surface, and on a miss discovers again once when the
// discovery came from the disk cache, as DeferredDiscoveryRESTMapper
// does: a kind the cache predates is found.
func mapped[T any](d *sharedMapper, ask func(*surface) (T, error)) (T, error) {
	s, err := d.get()
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := ask(s)
	if err != nil && d.cached() {
		d.Reset()
		if s, err = d.get(); err != nil {
			return v, err
		}
		v, err = ask(s)
	}
	return v, err
}

func (d *sharedMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return mapped(d, func(s *surface) (schema.GroupVersionKind, error) { return s.KindFor(r) })
}

func (d *sharedMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return mapped(d, func(s *surface) ([]schema.GroupVersionKind, error) { return s.KindsFor(r) })
}

func (d *sharedMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return mapped(d, func(s *surface) (schema.GroupVersionResource, error) { return s.ResourceFor(r) })
}

func (d *sharedMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return mapped(d, func(s *surface) ([]schema.GroupVersionResource, error) { return s.ResourcesFor(r) })
}

func (d *sharedMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return mapped(d, func(s *surface) (*meta.RESTMapping, error) { return s.RESTMapping(gk, versions...) })
}

func (d *sharedMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return mapped(d, func(s *surface) ([]*meta.RESTMapping, error) { return s.RESTMappings(gk, versions...) })
}

func (d *sharedMapper) ResourceSingularizer(resource string) (string, error) {
	return mapped(d, func(s *surface) (string, error) { return s.ResourceSingularizer(resource) })
}

// The context methods: discovery here takes no context.

func (d *sharedMapper) KindForWithContext(_ context.Context, r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return d.KindFor(r)
}

func (d *sharedMapper) KindsForWithContext(_ context.Context, r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return d.KindsFor(r)
}

func (d *sharedMapper) ResourceForWithContext(_ context.Context, r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return d.ResourceFor(r)
}

func (d *sharedMapper) ResourcesForWithContext(_ context.Context, r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return d.ResourcesFor(r)
}

func (d *sharedMapper) RESTMappingWithContext(_ context.Context, gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return d.RESTMapping(gk, versions...)
}

func (d *sharedMapper) RESTMappingsWithContext(_ context.Context, gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return d.RESTMappings(gk, versions...)
}

func (d *sharedMapper) ResourceSingularizerWithContext(_ context.Context, resource string) (string, error) {
	return d.ResourceSingularizer(resource)
}

func (d *sharedMapper) ResetWithContext(context.Context) { d.Reset() }
