package output

import (
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// palette holds ANSI colours that read well on dark and light terminals.
var palette = []int{31, 32, 33, 34, 35, 36, 91, 92, 93, 94, 95, 96}

// ColorOf returns the ANSI colour of a cluster: a hash of its name, so that a
// cluster keeps its colour from run to run whatever else is selected.
func ColorOf(name string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return palette[h.Sum32()%uint32(len(palette))]
}

// UseColor decides whether to colour output written to w: never with
// --no-color or NO_COLOR set (https://no-color.org), and only on a terminal.
func UseColor(w io.Writer, noColor bool) bool {
	if noColor || os.Getenv("NO_COLOR") != "" {
		return false
	}
	_, ok := Terminal(w)
	return ok
}

// Terminal is the terminal w writes to, looking through writers that
// wrap another (Unwrap, as the mask of decrypted values does), and
// whether it is one.
func Terminal(w io.Writer) (fd int, ok bool) {
	for {
		if f, isFile := w.(*os.File); isFile {
			fd := int(f.Fd())
			return fd, term.IsTerminal(fd)
		}
		u, wraps := w.(interface{ Unwrap() io.Writer })
		if !wraps {
			return 0, false
		}
		w = u.Unwrap()
	}
}

// Prefixer builds aligned, optionally coloured line prefixes for a set of
// clusters: "[staging-eu] " padded to the longest name.
type Prefixer struct {
	width int
	color bool
}

// NewPrefixer sizes prefixes for names.
func NewPrefixer(names []string, color bool) *Prefixer {
	p := &Prefixer{color: color}
	for _, n := range names {
		p.width = max(p.width, len(n))
	}
	return p
}

// Prefix returns the prefix of a cluster's lines.
func (p *Prefixer) Prefix(name string) string {
	pad := strings.Repeat(" ", max(0, p.width-len(name)))
	if !p.color {
		return "[" + name + "] " + pad
	}
	return fmt.Sprintf("\x1b[%dm[%s]\x1b[0m %s", ColorOf(name), name, pad)
}
