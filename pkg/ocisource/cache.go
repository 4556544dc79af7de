package ocisource

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The cache keeps, beside the folder an artifact was unpacked into
// (<digest>), what it was unpacked from (<digest>.blobs: its manifest
// and its layers as pulled), so that a later run verifies the folder
// by the artifact's digest with no network: the manifest's bytes hash
// to the digest, each layer to the digest the manifest gives it, and
// the folder holds exactly what the layers do. A folder someone changed
// is unpacked again from the blobs; blobs someone changed are pulled
// again.

// blobsOf is where the blobs of the artifact unpacked into dir are kept.
func blobsOf(dir string) string { return dir + ".blobs" }

// keepBlobs writes the manifest and layers beside dir, through a folder
// renamed at the end.
func keepBlobs(dir string, manifest []byte, m *v1.Manifest, layers [][]byte) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".blobs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "manifest"), manifest, 0o644); err != nil {
		return err
	}
	for i, l := range m.Layers {
		if err := os.WriteFile(filepath.Join(tmp, l.Digest.Hex), layers[i], 0o644); err != nil {
			return err
		}
	}
	_ = os.RemoveAll(blobsOf(dir))
	return os.Rename(tmp, blobsOf(dir))
}

// cachedLayers are the layers of artifact d as the cache holds them,
// each checked against its digest, and the format they are; ok is false
// when the cache does not hold them whole and as they were.
func cachedLayers(dir string, d v1.Hash) (format string, layers [][]byte, ok bool) {
	raw, err := os.ReadFile(filepath.Join(blobsOf(dir), "manifest"))
	if err != nil || d.Algorithm != "sha256" || sha256Hex(raw) != d.Hex {
		return "", nil, false
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil || len(m.Layers) > maxLayers {
		return "", nil, false
	}
	if format = formatOf(m); format == "" {
		return "", nil, false
	}
	for _, l := range m.Layers {
		data, err := os.ReadFile(filepath.Join(blobsOf(dir), filepath.Base(l.Digest.Hex)))
		if err != nil || l.Digest.Algorithm != "sha256" || sha256Hex(data) != l.Digest.Hex {
			return "", nil, false
		}
		layers = append(layers, data)
	}
	return format, layers, true
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// treeOf is a hash of the files entries hold: each name and content, in
// name order (folders, which a file's path implies, and modes, which
// Windows keeps none of, aside).
func treeOf(entries []entry) string {
	sorted := slices.DeleteFunc(slices.Clone(entries), func(e entry) bool { return e.dir })
	slices.SortFunc(sorted, func(a, b entry) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	h := sha256.New()
	for _, e := range sorted {
		_ = binary.Write(h, binary.BigEndian, uint64(len(e.name)))
		h.Write([]byte(e.name))
		_ = binary.Write(h, binary.BigEndian, uint64(len(e.data)))
		h.Write(e.data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// folderTree is treeOf what dir holds now; "" when it cannot be read or
// holds what no artifact unpacks to (a link, a device).
func folderTree(dir string) string {
	var entries []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		e := entry{name: filepath.ToSlash(rel), dir: d.IsDir()}
		switch {
		case d.IsDir():
		case d.Type().IsRegular():
			if e.data, err = os.ReadFile(p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s is neither a file nor a folder", p)
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return ""
	}
	return treeOf(entries)
}
