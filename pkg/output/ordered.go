package output

import (
	"bytes"
	"io"
	"sync"
)

// Ordered writes what parallel work on several names prints in the
// names' order, so that a reader of many clusters' output finds them in
// the fleet's order on every run. The first name not yet done writes
// through at once; every later name's writes are held until each name
// before it is done, then written whole. A name not in the list writes
// through. It is safe for concurrent use.
type Ordered struct {
	mu    sync.Mutex
	out   io.Writer
	names []string
	index map[string]int // a name's place in names
	next  int            // the first name not yet done
	held  map[string]*bytes.Buffer
	done  map[string]bool
}

// NewOrdered writes names' output to out in that order.
func NewOrdered(out io.Writer, names []string) *Ordered {
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	return &Ordered{out: out, names: names, index: index, held: map[string]*bytes.Buffer{}, done: map[string]bool{}}
}

// Writer is name's stream.
func (o *Ordered) Writer(name string) io.Writer { return orderedWriter{o, name} }

type orderedWriter struct {
	o    *Ordered
	name string
}

func (w orderedWriter) Write(p []byte) (int, error) {
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	// The first name not done writes through, and so does one that is
	// done or not listed.
	if i, listed := o.index[w.name]; !listed || i <= o.next {
		return o.out.Write(p)
	}
	b, ok := o.held[w.name]
	if !ok {
		b = &bytes.Buffer{}
		o.held[w.name] = b
	}
	return b.Write(p)
}

// Done says name wrote all it has: the names after it that were held
// behind it are written, up to the first one still running.
func (o *Ordered) Done(name string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done[name] = true
	for o.next < len(o.names) {
		n := o.names[o.next]
		if b := o.held[n]; b != nil {
			delete(o.held, n)
			if _, err := o.out.Write(b.Bytes()); err != nil {
				return err
			}
		}
		if !o.done[n] {
			return nil
		}
		o.next++
	}
	return nil
}

// Close writes whatever is still held, in order: names never done
// (work cut short) lose nothing.
func (o *Ordered) Close() error {
	o.mu.Lock()
	names := o.names[o.next:]
	o.mu.Unlock()
	for _, n := range names {
		if err := o.Done(n); err != nil {
			return err
		}
	}
	return nil
}
