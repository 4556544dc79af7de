package kube

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
	"weak"
)

// diskCache is a cluster's discovery as client-go's disk cache keeps it
// (kubectl's ~/.kube/cache/discovery/<host>: servergroups.json and a
// <group>/<version>/serverresources.json per group version), and the age
// past which client-go fetches a file again. Decoding those files is most
// of what a cluster's discovery costs once cached (13% of a 100-cluster
// no-op's CPU); a fleet of one Kubernetes version and CRDs caches the same
// bytes for every cluster, and decodes them once (rawSurfaces).
type diskCache struct {
	dir string
	ttl time.Duration
}

// errStale refuses a file client-go would fetch again.
var errStale = errors.New("stale")

// digest is the SHA-256 of the discovery files of the cache that
// client-go reads, by path and content: servergroups.json, then the
// serverresources.json of each group version it lists, in its order. ok
// is false when one is missing, unreadable or older than the TTL
// (client-go fetches those again, and the files change). The files are
// opened by the names servergroups.json gives, not found by walking the
// cache's folders: a cache holds some fifty, and reading them was most
// of the digest's cost.
func (c diskCache) digest() (sum [sha256.Size]byte, ok bool) {
	if c.dir == "" {
		return sum, false
	}
	h, now := sha256.New(), time.Now()
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	groups, err := c.hashFile(h, "servergroups.json", now, buf, true)
	if err != nil {
		return sum, false
	}
	var list struct {
		Groups []struct {
			Versions []struct {
				GroupVersion string `json:"groupVersion"`
			} `json:"versions"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(groups, &list); err != nil {
		return sum, false
	}
	for _, g := range list.Groups {
		for _, v := range g.Versions {
			if !fs.ValidPath(v.GroupVersion) {
				return sum, false
			}
			if _, err := c.hashFile(h, v.GroupVersion+"/serverresources.json", now, buf, false); err != nil {
				return sum, false
			}
		}
	}
	copy(sum[:], h.Sum(nil))
	return sum, true
}

// hashFile writes the name and content of the cache's file rel (a slash
// path) to h, through buf; with keep, it returns the content (in buf,
// grown to hold it: a cluster with many CRDs lists them in a
// servergroups.json of a hundred KB), else nil. A file older than the
// TTL is errStale; one of another size than when opened, an error.
func (c diskCache) hashFile(h io.Writer, rel string, now time.Time, buf *[]byte, keep bool) ([]byte, error) {
	f, err := os.Open(filepath.Join(c.dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if now.After(info.ModTime().Add(c.ttl)) {
		return nil, errStale
	}
	fmt.Fprintf(h, "%s\x00%d\x00", rel, info.Size())
	if keep && info.Size() >= int64(cap(*buf)) {
		if info.Size() >= maxGroupsFile {
			return nil, errors.New("too large")
		}
		*buf = make([]byte, info.Size()+1)
	}
	if info.Size() < int64(cap(*buf)) {
		b := (*buf)[:info.Size()]
		if _, err := io.ReadFull(f, b); err != nil {
			return nil, err
		}
		if n, _ := f.Read((*buf)[info.Size():cap(*buf)]); n != 0 {
			return nil, errors.New("changed while read")
		}
		_, _ = h.Write(b)
		return b, nil
	}
	n, err := io.CopyBuffer(h, struct{ io.Reader }{f}, *buf) // not f.WriteTo, which takes a buffer of its own
	if err == nil && n != info.Size() {
		err = errors.New("changed while read")
	}
	return nil, err
}

// maxGroupsFile bounds the servergroups.json digest reads whole (a
// thousand groups are some 200 KB).
const maxGroupsFile = 16 << 20

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// weakCache keeps values by key for as long as something else holds
// them. Safe for concurrent use.
type weakCache[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]weak.Pointer[V]
}

// get is the value kept for k, or nil.
func (c *weakCache[K, V]) get(k K) *V {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k].Value()
}

// put keeps v for k (until nothing else holds it), unless a value is kept
// for k already, and returns the value kept.
func (c *weakCache[K, V]) put(k K, v *V) *V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[k].Value(); old != nil {
		return old
	}
	if c.m == nil {
		c.m = map[K]weak.Pointer[V]{}
	}
	c.m[k] = weak.Make(v)
	runtime.AddCleanup(v, func(k K) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.m[k].Value() == nil {
			delete(c.m, k)
		}
	}, k)
	return v
}

// rawSurfaces are the API surfaces by the digest of the cached files they
// were decoded from.
var rawSurfaces weakCache[[sha256.Size]byte, surface]
