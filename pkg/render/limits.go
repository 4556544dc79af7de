package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// Limits bound what rendering one source may cost, so that a bad input — a
// file that never ends, a YAML alias bomb, a jsonnet program that recurses
// forever or prints gigabytes — fails with an error naming it instead of
// exhausting memory or hanging. A zero field takes its default.
//
// MaxBytes bounds each of these on its own:
//   - a manifest file, standard input, and every file kustomize reads;
//   - what the YAML aliases of one document expand to (YAML decoders
//     refuse a "billion laughs" by its alias count, but not one large
//     string aliased a thousand times);
//   - everything one source renders: the manifest files of a folder
//     together, a kustomize build's output, a jsonnet evaluation's output,
//     and the text that variable substitution adds to one target.
//
// MaxStack bounds jsonnet's call depth (go-jsonnet's VM.MaxStack): endless
// recursion fails with "max stack frames exceeded".
//
// Timeout bounds one jsonnet evaluation or kustomize build, and the render
// also stops when its context is cancelled. Neither go-jsonnet nor
// kustomize can be interrupted, so a render that times out returns its
// error at once and leaves the evaluation running unobserved until the
// process exits, as kubectl fleet does right after a failed render.
//
// Not bounded: the memory go-jsonnet uses while it evaluates. A program
// whose output passes MaxBytes is refused once evaluated, but go-jsonnet
// builds that output in memory first (about 20 bytes per byte of output).
type Limits struct {
	MaxBytes int64
	MaxStack int
	Timeout  time.Duration
}

// The default Limits.
const (
	DefaultMaxBytes = 64 << 20
	DefaultMaxStack = 500
	DefaultTimeout  = 5 * time.Minute
)

// orDefaults returns l with every zero field set to its default.
func (l Limits) orDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxStack <= 0 {
		l.MaxStack = DefaultMaxStack
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// limitError is an input or output past one of the Limits.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// overLimit is the error for something larger than max bytes.
func overLimit(what string, max int64) error {
	return &limitError{fmt.Sprintf("%s exceeds the %s limit", what, byteSize(max))}
}

// aliasError is the error for an alias that expands a document past max.
func aliasError(alias *yaml.Node, max int64) error {
	return &limitError{fmt.Sprintf("line %d: alias *%s expands the document past the %s limit", alias.Line, alias.Value, byteSize(max))}
}

// byteSize prints a limit the way it is documented: "64 MiB".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readFile reads a file of at most max bytes. A larger regular file is
// refused before it is read; one whose size is not known in advance (a
// pipe, a device) once max bytes have been read.
func readFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && info.Size() > max {
		return nil, overLimit(displayPath(path), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, overLimit(displayPath(path), max)
	}
	return data, nil
}

// readAll reads r to its end, or fails once it has read more than max
// bytes; what names r in the error.
func readAll(r io.Reader, max int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, overLimit(what, max)
	}
	return data, nil
}

// checkAliases refuses a YAML document whose aliases would expand it past
// max bytes, naming the alias that crosses the limit. YAML decoders limit
// how many aliases a document may use, which stops the classic "billion
// laughs", but not a large string aliased a few thousand times, which
// expands to gigabytes when the document is converted to JSON. Documents
// without both an anchor and an alias are not parsed; parse errors are
// left to the decoder that reads the document next.
func checkAliases(doc []byte, max int64) error {
	if bytes.IndexByte(doc, '&') < 0 || bytes.IndexByte(doc, '*') < 0 {
		return nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil
	}
	s := aliasSizer{max: max, sizes: map[*yaml.Node]int64{}}
	if s.size(&root) > max && s.culprit != nil {
		return aliasError(s.culprit, max)
	}
	return nil
}

// aliasSizer estimates the size of a YAML node with its aliases expanded,
// as JSON text: each scalar's length plus a little for punctuation. Sizes
// saturate just past max, and each node is measured once however often it
// is aliased.
type aliasSizer struct {
	max   int64
	sizes map[*yaml.Node]int64
	// culprit is the first alias whose expansion pushed a total past max.
	culprit *yaml.Node
}

func (s *aliasSizer) size(n *yaml.Node) int64 {
	if n == nil {
		return 0
	}
	if v, ok := s.sizes[n]; ok {
		return v // measured, or being measured: a recursive alias, left to the decoder
	}
	s.sizes[n] = 0
	var total int64
	switch n.Kind {
	case yaml.ScalarNode:
		total = int64(len(n.Value)) + 3
	case yaml.AliasNode:
		total = s.size(n.Alias)
		if total > s.max && s.culprit == nil {
			s.culprit = n
		}
	default:
		total = 2
		for _, c := range n.Content {
			total += s.size(c)
			if c.Kind == yaml.AliasNode && total > s.max && s.culprit == nil {
				s.culprit = c
			}
			if total > s.max {
				total = s.max + 1
				break
			}
		}
	}
	s.sizes[n] = min(total, s.max+1)
	return s.sizes[n]
}

// files reads a render's input files: each of at most max bytes, and
// decrypted by sops when it is SOPS-encrypted (nil reads it as it is).
// Copies share decrypted, which says that one was: what the render
// made of those files holds a decrypted value, in whatever form.
type files struct {
	max       int64
	sops      *sopsfile.Decrypter
	decrypted *atomic.Bool
}

// read reads path (readFile) and decrypts it if it is encrypted. Only an
// encrypted file pays for its display path (a getcwd): Helm values files
// are read for every cluster.
func (f files) read(path string) ([]byte, error) {
	data, err := readFile(path, f.max)
	if err != nil || !sopsfile.Encrypted(sopsfile.FormatOf(path), data) {
		return data, err
	}
	return f.open(displayPath(path), sopsfile.FormatOf(path), data)
}

// open is data, read from name, decrypted if it is encrypted, noting
// that it was.
func (f files) open(name string, format sopsfile.Format, data []byte) ([]byte, error) {
	out, decrypted, err := f.sops.Open(name, format, data)
	if decrypted {
		f.decrypted.Store(true)
	}
	return out, err
}

// limitedFS is the disk as kustomize sees it, with every file read through
// files.read and checked by checkAliases. The first limit a read hits is
// kept, since kustomize buries the errors of its reads in its own
// messages; so is the first decryption error.
type limitedFS struct {
	filesys.FileSystem
	files
	err error
}

// ReadFile implements filesys.FileSystem.
func (fs *limitedFS) ReadFile(path string) ([]byte, error) {
	data, err := fs.read(path)
	if err == nil {
		err = checkAliasesAll(data, fs.max)
		if err != nil {
			err = fmt.Errorf("%s: %w", displayPath(path), err)
		}
	}
	var limit *limitError
	if fs.err == nil && (errors.As(err, &limit) || sopsfile.Failed(err)) {
		fs.err = err
	}
	return data, err
}

// checkAliasesAll runs checkAliases on each document of a YAML stream.
func checkAliasesAll(data []byte, max int64) error {
	if bytes.IndexByte(data, '&') < 0 || bytes.IndexByte(data, '*') < 0 {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return nil // the end, or not YAML: kustomize says which
		}
		s := aliasSizer{max: max, sizes: map[*yaml.Node]int64{}}
		if s.size(&doc) > max && s.culprit != nil {
			return fmt.Errorf("document %d: %w", i, aliasError(s.culprit, max))
		}
	}
}

// bounded runs fn on a goroutine of its own and returns its result, or an
// error once ctx is done or limit has passed, whichever comes first. A
// panic in fn is returned as an error. fn cannot be interrupted: when the
// wait ends first, fn runs on unobserved (see Limits).
func bounded[T any](ctx context.Context, limit time.Duration, fn func() (T, error)) (T, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf("did not finish within %s (the time limit)", limit))
	defer cancel()
	type result struct {
		val T
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("recovered from panic: %v", p)
			}
			done <- r
		}()
		r.val, r.err = fn()
	}()
	select {
	case r := <-done:
		return r.val, r.err
	case <-ctx.Done():
		var zero T
		if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
			return zero, err
		}
		return zero, fmt.Errorf("stopped: %w", ctx.Err())
	}
}
