// Package diff computes line-based unified diffs in process, with
// github.com/sergi/go-diff in line mode.
package diff

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

type op int

const (
	equal op = iota
	insert
	remove
)

type line struct {
	op   op
	text string
}

// lines diffs a and b line by line.
func lines(a, b string) []line {
	dmp := diffmatchpatch.New()
	ca, cb, arr := dmp.DiffLinesToChars(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), arr)
	var out []line
	for _, d := range diffs {
		o := equal
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			o = insert
		case diffmatchpatch.DiffDelete:
			o = remove
		}
		text := strings.TrimSuffix(d.Text, "\n")
		for _, l := range strings.Split(text, "\n") {
			out = append(out, line{o, l})
		}
	}
	return out
}

// Unified returns a unified diff of a and b ("" when they are equal) with
// context lines around each change, under "--- aName" and "+++ bName".
func Unified(aName, bName, a, b string, context int) string {
	if a == b {
		return ""
	}
	ls := lines(a, b)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", aName, bName)
	// Walk the lines, grouping changes within 2*context of each other.
	aLine, bLine := 1, 1
	for i := 0; i < len(ls); {
		if ls[i].op == equal {
			aLine++
			bLine++
			i++
			continue
		}
		start := max(0, i-context)
		end := i
		for j := i; j < len(ls); j++ {
			if ls[j].op != equal {
				end = j
				continue
			}
			if j-end > 2*context {
				break
			}
		}
		end = min(len(ls)-1, end+context)
		aStart, bStart := aLine-(i-start), bLine-(i-start)
		var aCount, bCount int
		var body strings.Builder
		for _, l := range ls[start : end+1] {
			switch l.op {
			case equal:
				aCount++
				bCount++
				body.WriteString(" " + l.text + "\n")
			case remove:
				aCount++
				body.WriteString("-" + l.text + "\n")
			case insert:
				bCount++
				body.WriteString("+" + l.text + "\n")
			}
		}
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n%s", span(aStart, aCount), span(bStart, bCount), body.String())
		for _, l := range ls[i : end+1] {
			if l.op != insert {
				aLine++
			}
			if l.op != remove {
				bLine++
			}
		}
		i = end + 1
	}
	return sb.String()
}

func span(start, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start-1)
	}
	if count == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}
