package output

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestPrefixWriterWholeLines(t *testing.T) {
	var buf bytes.Buffer
	out := NewSyncWriter(&buf)
	p := NewPrefixer([]string{"a", "long-name"}, false)
	var wg sync.WaitGroup
	for _, name := range []string{"a", "long-name"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := NewPrefixWriter(out, p.Prefix(name))
			for i := 0; i < 200; i++ {
				// Write each line in three pieces to tempt interleaving.
				fmt.Fprintf(w, "line %d ", i)
				fmt.Fprint(w, "of ")
				fmt.Fprintf(w, "%s\n", name)
			}
			fmt.Fprint(w, "no newline")
			_ = w.Close()
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 402 {
		t.Fatalf("%d lines, want 402", len(lines))
	}
	for _, l := range lines {
		ok := (strings.HasPrefix(l, "[a]         ") && (strings.HasSuffix(l, "of a") || strings.HasSuffix(l, "no newline"))) ||
			(strings.HasPrefix(l, "[long-name] ") && (strings.HasSuffix(l, "of long-name") || strings.HasSuffix(l, "no newline")))
		if !ok {
			t.Fatalf("mixed or misaligned line %q", l)
		}
	}
}

func TestColorIsStable(t *testing.T) {
	if ColorOf("prod-eu") != ColorOf("prod-eu") {
		t.Fatal("colour changes between calls")
	}
	seen := map[int]bool{}
	for i := 0; i < 50; i++ {
		seen[ColorOf(fmt.Sprintf("cluster-%d", i))] = true
	}
	if len(seen) < 6 {
		t.Errorf("50 clusters share %d colours", len(seen))
	}
	p := NewPrefixer([]string{"x"}, true)
	if got := p.Prefix("x"); !strings.Contains(got, fmt.Sprintf("\x1b[%dm[x]", ColorOf("x"))) {
		t.Errorf("coloured prefix %q", got)
	}
}

func TestUseColor(t *testing.T) {
	var buf bytes.Buffer
	if UseColor(&buf, false) {
		t.Error("colour on a buffer")
	}
	t.Setenv("NO_COLOR", "1")
	if UseColor(&buf, false) {
		t.Error("colour despite NO_COLOR")
	}
}
