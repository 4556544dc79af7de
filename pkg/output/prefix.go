package output

import (
	"bytes"
	"io"
	"sync"
)

// SyncWriter serialises writes to one underlying writer, so that lines from
// several clusters never interleave.
type SyncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewSyncWriter wraps w.
func NewSyncWriter(w io.Writer) *SyncWriter { return &SyncWriter{w: w} }

// Write writes p whole, under the lock.
func (s *SyncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// PrefixWriter buffers what is written to it and writes it out a whole line
// at a time, each line preceded by a prefix. Close writes a last partial
// line. It is safe for concurrent use.
type PrefixWriter struct {
	mu     sync.Mutex
	out    io.Writer
	prefix []byte
	buf    []byte
}

// NewPrefixWriter writes prefixed lines to out, which should be a SyncWriter
// when several PrefixWriters share it.
func NewPrefixWriter(out io.Writer, prefix string) *PrefixWriter {
	return &PrefixWriter{out: out, prefix: []byte(prefix)}
}

// Write buffers p and writes out every complete line.
func (w *PrefixWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	last := bytes.LastIndexByte(w.buf, '\n')
	if last < 0 {
		return len(p), nil
	}
	if err := w.emit(w.buf[:last+1]); err != nil {
		return 0, err
	}
	w.buf = append(w.buf[:0], w.buf[last+1:]...)
	return len(p), nil
}

// emit writes complete lines, each prefixed, in one write.
func (w *PrefixWriter) emit(lines []byte) error {
	var out bytes.Buffer
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		out.Write(w.prefix)
		out.Write(lines[:i+1])
		lines = lines[i+1:]
	}
	_, err := w.out.Write(out.Bytes())
	return err
}

// Close writes out a last line that has no newline.
func (w *PrefixWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return nil
	}
	err := w.emit(append(w.buf, '\n'))
	w.buf = w.buf[:0]
	return err
}
