package output

import (
	"bytes"
	"testing"
)

type line struct{ Cluster, Said string }

func (l line) Where() string { return l.Cluster }
func (l line) Text() string  { return l.Said }

// A Printer writes an event as a prefixed line, or as one JSON object
// on a line with -o json; notes are kept for the summary.
func TestPrinter(t *testing.T) {
	for _, tt := range []struct {
		json bool
		want string
	}{
		{false, "[a] one\n[b] two\n"},
		{true, `{"Cluster":"a","Said":"one"}` + "\n" + `{"Cluster":"b","Said":"two"}` + "\n"},
	} {
		var out bytes.Buffer
		p := NewPrinter(&out, tt.json, NewPrefixer([]string{"a", "b"}, false), 10)
		p.Emit(line{"a", "one"})
		p.Emit(line{"b", "two"})
		p.Note("held")
		p.Close()
		if out.String() != tt.want || len(p.Notes) != 1 {
			t.Errorf("json %v: %q, notes %q; want %q", tt.json, out.String(), p.Notes, tt.want)
		}
	}
}
