package output

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Line is an event a Printer writes: as a line of text after its
// cluster's prefix, or as JSON (rollout.Event is one).
type Line interface {
	// Where is the cluster the event happened on ("": none).
	Where() string
	// Text is the event as a line, without the prefix.
	Text() string
}

// NewPrinter is a Printer on out: JSON lines when jsonOut, else lines
// prefixed by prefix; many is Many.
func NewPrinter(out io.Writer, jsonOut bool, prefix *Prefixer, many int) *Printer {
	return &Printer{Out: NewSyncWriter(out), JSON: jsonOut, Prefix: prefix, lines: map[string]*PrefixWriter{}, Many: many}
}

// Printer writes what commands that work on clusters print: whole lines
// prefixed with their cluster on a terminal-friendly stream, or one JSON
// object per event with -o json.
type Printer struct {
	Out    *SyncWriter
	JSON   bool
	Prefix *Prefixer
	mu     sync.Mutex
	lines  map[string]*PrefixWriter
	// Notes are printed under the summary's heading.
	Notes []string
	// Many is how many clusters the summary names one by one at most;
	// with more it groups identical outcomes.
	Many int
	// order, when set, holds each cluster's lines and events until the
	// clusters before it in the fleet are done (InOrder).
	order *Ordered
}

// InOrder makes the printer write each cluster's lines and events in
// the clusters' order, whatever order they are done in (done): output to
// be read (diff), not followed.
func (p *Printer) InOrder(clusters []string) {
	p.order = NewOrdered(p.Out, clusters)
}

// stream is where a cluster's output goes: its place in the order, or
// the shared stream.
func (p *Printer) stream(name string) io.Writer {
	if p.order != nil {
		return p.order.Writer(name)
	}
	return p.Out
}

// Done says a cluster printed all it has; with InOrder, the clusters
// held behind it follow.
func (p *Printer) Done(name string) {
	if p.order == nil {
		return
	}
	p.mu.Lock()
	w := p.lines[name]
	p.mu.Unlock()
	if w != nil {
		_ = w.Close()
	}
	_ = p.order.Done(name)
}

// Cluster returns the prefixed line writer of a cluster.
func (p *Printer) Cluster(name string) io.Writer {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.lines[name]
	if !ok {
		w = NewPrefixWriter(p.stream(name), p.Prefix.Prefix(name))
		p.lines[name] = w
	}
	return w
}

// Event writes one JSON object on a line of its own.
func (p *Printer) Event(v any) { p.EventOf("", v) }

// EventOf writes one JSON object of a cluster on a line of its own.
func (p *Printer) EventOf(cluster string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	_, _ = p.stream(cluster).Write(append(b, '\n'))
}

// Emit writes an event: its JSON line with -o json, else its text
// line after the cluster's prefix.
func (p *Printer) Emit(ev Line) {
	if p.JSON {
		p.Event(ev)
		return
	}
	fmt.Fprintln(p.Cluster(ev.Where()), ev.Text())
}

// Note adds a note, printed under the summary's heading.
func (p *Printer) Note(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Notes = append(p.Notes, line)
}

// Close flushes partial lines, and what inOrder still holds.
func (p *Printer) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.lines {
		_ = w.Close()
	}
	if p.order != nil {
		_ = p.order.Close()
	}
}
