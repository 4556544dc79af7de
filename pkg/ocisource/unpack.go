package ocisource

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Limits bound what an artifact may hold: a source is kilobytes to a few
// megabytes; anything past them is refused, not read on.
type Limits struct {
	// Compressed bounds each layer as pulled, Content what all of them
	// unpack to (the tar streams), Files how many entries they hold.
	Compressed, Content int64
	Files               int
}

// DefaultLimits are 64 MiB pulled, 256 MiB unpacked, 20,000 entries.
var DefaultLimits = Limits{Compressed: 64 << 20, Content: 256 << 20, Files: 20000}

// entry is one file or folder of a layer, checked.
type entry struct {
	name string // cleaned, slash-separated, relative
	dir  bool
	mode os.FileMode
	data []byte
}

// bounded reads at most n bytes, and says when there were more.
type bounded struct {
	r    io.Reader
	n    int64
	over bool
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.n <= 0 {
		var one [1]byte
		if k, _ := b.r.Read(one[:]); k > 0 {
			b.over = true
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	k, err := b.r.Read(p)
	b.n -= int64(k)
	return k, err
}

// check reads every layer's entries (tar+gzip) and refuses, before
// anything is written, what could write outside the folder it is
// unpacked into or could not be a source: absolute names, "..", links
// (symbolic or hard), devices, FIFOs and sockets, more than the limits
// allow (a gzip bomb). It returns the entries, in order.
func check(layers [][]byte, lim Limits) ([]entry, error) {
	var out []entry
	budget := &bounded{n: lim.Content}
	logical := lim.Content // what the entries hold, charged as read
	tooBig := fmt.Errorf("it unpacks to more than %d MiB", lim.Content>>20)
	names := map[string]string{} // by folded name: the name first seen
	for i, layer := range layers {
		gz, err := gzip.NewReader(bytes.NewReader(layer))
		if err != nil {
			return nil, fmt.Errorf("layer %d is not tar+gzip: %w", i+1, err)
		}
		budget.r = gz
		tr := tar.NewReader(budget)
		for {
			h, err := tr.Next()
			switch {
			case errors.Is(err, io.EOF) && budget.over:
				return nil, tooBig
			case errors.Is(err, io.EOF):
			case err != nil && budget.over:
				return nil, tooBig
			case err != nil:
				return nil, fmt.Errorf("layer %d: %w", i+1, err)
			}
			if err != nil {
				break
			}
			if len(out) >= lim.Files {
				return nil, fmt.Errorf("it holds more than %d entries", lim.Files)
			}
			e, err := checkHeader(h)
			if err != nil {
				return nil, err
			}
			if err := distinct(names, e); err != nil {
				return nil, err
			}
			if !e.dir {
				if h.Size > budget.n || h.Size > logical {
					return nil, tooBig
				}
				if e.data, err = io.ReadAll(io.LimitReader(tr, logical+1)); err != nil {
					if budget.over {
						return nil, tooBig
					}
					return nil, fmt.Errorf("%s: %w", e.name, err)
				}
				if logical -= int64(len(e.data)); logical < 0 {
					return nil, tooBig
				}
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// checkHeader is the entry h names, or why it is refused.
func checkHeader(h *tar.Header) (entry, error) {
	name := strings.ReplaceAll(h.Name, "\\", "/")
	switch {
	case name == "" || strings.HasPrefix(name, "/") || filepath.IsAbs(h.Name) || filepath.VolumeName(h.Name) != "" || (len(name) > 1 && name[1] == ':'):
		return entry{}, fmt.Errorf("it holds %q, an absolute path: refused", h.Name)
	case slices.Contains(strings.Split(name, "/"), ".."):
		return entry{}, fmt.Errorf("it holds %q, which leaves its folder (..): refused", h.Name)
	}
	if h.Typeflag == tar.TypeGNUSparse || slices.ContainsFunc(slices.Collect(maps.Keys(h.PAXRecords)), func(k string) bool { return strings.HasPrefix(k, "GNU.sparse.") }) {
		return entry{}, fmt.Errorf("it holds %q, a sparse file: refused", h.Name)
	}
	if bad := windowsUnsafe(name); bad != "" {
		return entry{}, fmt.Errorf("it holds %q, %s, which Windows cannot write: refused", h.Name, bad)
	}
	e := entry{name: path.Clean(name), mode: 0o644}
	if h.FileInfo().Mode()&0o111 != 0 {
		e.mode = 0o755
	}
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeRegA:
	case tar.TypeDir:
		e.dir = true
	case tar.TypeSymlink, tar.TypeLink:
		return entry{}, fmt.Errorf("it holds %q, a link to %q: links are not unpacked, refused", h.Name, h.Linkname)
	case tar.TypeXGlobalHeader, tar.TypeXHeader:
		return entry{dir: true, name: "."}, nil // metadata, read by the tar reader
	default:
		return entry{}, fmt.Errorf("it holds %q, neither a file nor a folder (type %q): refused", h.Name, string(h.Typeflag))
	}
	return e, nil
}

// write writes entries under dir, which must be empty: folders first
// where a file needs one.
func write(dir string, entries []entry) error {
	for _, e := range entries {
		p := filepath.Join(dir, filepath.FromSlash(e.name))
		if e.dir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, e.data, e.mode); err != nil {
			return err
		}
	}
	return nil
}

// distinct refuses an entry whose name another had already, or differs
// from one only in case (they are one file on macOS and Windows); a
// folder named again is fine.
func distinct(names map[string]string, e entry) error {
	if e.name == "." {
		return nil
	}
	key := strings.ToLower(e.name)
	if e.dir {
		key += "/"
	}
	switch first, ok := names[key]; {
	case ok && first == e.name && e.dir:
		return nil
	case ok && first == e.name:
		return fmt.Errorf("it holds %q twice: refused", e.name)
	case ok:
		return fmt.Errorf("it holds %q and %q, one file where case does not count: refused", first, e.name)
	}
	names[key] = e.name
	return nil
}

// windowsUnsafe says what in a slash-separated name Windows cannot
// write ("" for nothing): a reserved device name (CON, NUL, COM1…, with
// any extension), a character it refuses, or an element that ends in a
// dot or a space.
func windowsUnsafe(name string) string {
	for _, el := range strings.Split(name, "/") {
		if el == "" || el == "." {
			continue
		}
		base, _, _ := strings.Cut(strings.ToUpper(el), ".")
		switch {
		case slices.Contains([]string{"CON", "PRN", "AUX", "NUL"}, base),
			len(base) == 4 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) && base[3] >= '0' && base[3] <= '9':
			return "a reserved device name (" + el + ")"
		case strings.ContainsAny(el, `<>:"|?*`) || strings.ContainsFunc(el, func(r rune) bool { return r < 0x20 }):
			return "a character not allowed in a file name"
		case el != ".." && (strings.HasSuffix(el, ".") || strings.HasSuffix(el, " ")):
			return "an element ending in a dot or a space"
		}
	}
	return ""
}
