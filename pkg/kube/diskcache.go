package kube

import (
	"crypto/sha256"
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

// errStale stops the walk at a file client-go would fetch again.
var errStale = errors.New("stale")

// digest is the SHA-256 of every discovery file of the cache, by path and
// content, in lexical order; ok is false without a servergroups.json, or
// with a file older than the TTL (client-go fetches those again, and the
// files change), or an unreadable one.
func (c diskCache) digest() (sum [sha256.Size]byte, ok bool) {
	if c.dir == "" {
		return sum, false
	}
	h, now, groups := sha256.New(), time.Now(), false
	err := filepath.WalkDir(c.dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() != "servergroups.json" && e.Name() != "serverresources.json" {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if now.After(info.ModTime().Add(c.ttl)) {
			return errStale
		}
		rel, err := filepath.Rel(c.dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		groups = groups || rel == "servergroups.json"
		fmt.Fprintf(h, "%s\x00%d\x00", rel, info.Size())
		return hashFile(h, path, info.Size())
	})
	if err != nil || !groups {
		return sum, false
	}
	copy(sum[:], h.Sum(nil))
	return sum, true
}

// hashFile writes the size bytes of the file at path to h, through a
// buffer reused (a fleet's clusters cache about 150 KB each); a file of
// another size now is an error.
func hashFile(h io.Writer, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	n, err := io.CopyBuffer(h, struct{ io.Reader }{f}, *buf) // not f.WriteTo, which takes a buffer of its own
	if err == nil && n != size {
		err = errors.New("changed while read")
	}
	return err
}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

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
