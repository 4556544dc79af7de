package output_test

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// TestOrdered: whatever order the work finishes in, and however its
// writes interleave, each name's output comes whole and in the names'
// order; the first name's writes are not held.
func TestOrdered(t *testing.T) {
	var out strings.Builder
	o := output.NewOrdered(&out, []string{"a", "b", "c"})
	fmt.Fprint(o.Writer("c"), "c1\n")
	fmt.Fprint(o.Writer("b"), "b1\n")
	fmt.Fprint(o.Writer("a"), "a1\n")
	if out.String() != "a1\n" {
		t.Fatalf("the first name's write is held, or a later one is not: %q", out.String())
	}
	fmt.Fprint(o.Writer("c"), "c2\n")
	if err := o.Done("c"); err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(o.Writer("a"), "a2\n")
	fmt.Fprint(o.Writer("other"), "o\n")
	if err := o.Done("a"); err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(o.Writer("b"), "b2\n") // b is first now: written at once
	if want := "a1\na2\no\nb1\nb2\n"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
	if err := o.Done("b"); err != nil {
		t.Fatal(err)
	}
	if want := "a1\na2\no\nb1\nb2\nc1\nc2\n"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

// TestOrderedClose: names never done (an interrupted run) are written
// in order at Close, nothing lost.
func TestOrderedClose(t *testing.T) {
	var out strings.Builder
	o := output.NewOrdered(&out, []string{"a", "b", "c"})
	var wg sync.WaitGroup
	for _, n := range []string{"c", "b", "a"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				fmt.Fprintf(o.Writer(n), "%s%d\n", n, i)
			}
		}()
	}
	wg.Wait()
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, n := range []string{"a", "b", "c"} {
		for i := range 50 {
			fmt.Fprintf(&want, "%s%d\n", n, i)
		}
	}
	if out.String() != want.String() {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want.String())
	}
}

// BenchmarkOrderedWrite: a line of the last of 1,000 clusters, held
// behind the others, as diff writes it.
func BenchmarkOrderedWrite(b *testing.B) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("c%03d", i)
	}
	o := output.NewOrdered(io.Discard, names)
	w, line := o.Writer("c999"), []byte("[c999] +  k: v\n")
	for b.Loop() {
		_, _ = w.Write(line)
	}
}
