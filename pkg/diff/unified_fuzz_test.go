package diff

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// hunkHeader is a hunk's first line, "@@ -aStart[,aCount] +bStart[,bCount] @@".
var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)

// splitLines is text as the lines a unified diff shows: no lines for "",
// and a last line without its newline like one with it.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// patch applies a unified diff to a's lines, checking on the way that the
// headers are right, every line is a header, context, removal or addition,
// each hunk's counts match its lines, hunks come in order, and context and
// removals are a's lines at the places the headers say.
func patch(diff string, a []string) ([]string, error) {
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	if len(lines) < 3 || lines[0] != "--- a" || lines[1] != "+++ b" {
		return nil, fmt.Errorf("no --- a / +++ b header")
	}
	var out []string
	next := 0 // a's next line not yet copied, counting from 0
	for i := 2; i < len(lines); {
		m := hunkHeader.FindStringSubmatch(lines[i])
		if m == nil {
			return nil, fmt.Errorf("line %d: %q is not a hunk header", i+1, lines[i])
		}
		aStart, aCount, bCount := atoi(m[1]), count(m[2]), count(m[4])
		if aCount > 0 {
			aStart-- // "-0,0" is empty, before line 1; "-3,2" starts at line 3
		}
		if aStart < next || aStart+aCount > len(a) {
			return nil, fmt.Errorf("line %d: hunk %s outside a's lines %d..%d", i+1, lines[i], next, len(a))
		}
		out = append(out, a[next:aStart]...)
		if bStart := atoi(m[3]); bCount > 0 && bStart != len(out)+1 || bCount == 0 && bStart != len(out) {
			return nil, fmt.Errorf("line %d: hunk %s, but b is at line %d here", i+1, lines[i], len(out)+1)
		}
		next = aStart
		var seenA, seenB int
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "@@"); i++ {
			l := lines[i]
			if l == "" {
				return nil, fmt.Errorf("line %d is empty", i+1)
			}
			switch op, text := l[0], l[1:]; op {
			case ' ', '-':
				if next >= len(a) || a[next] != text {
					return nil, fmt.Errorf("line %d: %q is not a's line %d", i+1, l, next+1)
				}
				next++
				seenA++
				if op == ' ' {
					out = append(out, text)
					seenB++
				}
			case '+':
				out = append(out, text)
				seenB++
			default:
				return nil, fmt.Errorf("line %d: %q starts with none of ' ', '+', '-', '@'", i+1, l)
			}
		}
		if seenA != aCount || seenB != bCount {
			return nil, fmt.Errorf("hunk %s has %d lines of a and %d of b", m[0], seenA, seenB)
		}
	}
	return append(out, a[next:]...), nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// count is a hunk's line count: 1 when the header leaves it out.
func count(s string) int {
	if s == "" {
		return 1
	}
	return atoi(s)
}

// FuzzUnified checks Unified on any two texts: equal texts give no diff;
// otherwise the diff is well formed (see patch), turns a into b when
// applied, and changes something.
func FuzzUnified(f *testing.F) {
	for _, s := range [][2]string{
		{"a\nb\n", "a\nb\n"},
		{"1\n2\n3\n4\n5\n6\n7\n", "1\n2\n3\nfour\n5\n6\n7\n"},
		{"", "x\ny\n"},
		{"x\ny\n", ""},
		{"x", "x\n"},
		{"\n", ""},
		{"\n\n", "\n"},
		{"a\nb\nc", "a\nc\nb"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\nten\n"},
		{"kind: ConfigMap\ndata:\n  a: \"1\"\n", "kind: ConfigMap\ndata:\n  a: \"2\"\n  b: \"3\"\n"},
	} {
		for _, context := range []int{0, 1, 3} {
			f.Add(s[0], s[1], context)
		}
	}
	f.Fuzz(func(t *testing.T, a, b string, context int) {
		context = max(0, context%8)
		if d := Unified("a", "b", a, a, context); d != "" {
			t.Fatalf("Unified(a, a) = %q, want nothing", d)
		}
		d := Unified("a", "b", a, b, context)
		if a == b {
			return
		}
		got, err := patch(d, splitLines(a))
		if err != nil {
			t.Fatalf("%v in:\n%s", err, d)
		}
		if want := splitLines(b); strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(want) {
			t.Fatalf("the diff turns a into %q, want %q:\n%s", got, want, d)
		}
		if !strings.Contains(d, "\n-") && !strings.Contains(d, "\n+") {
			t.Fatalf("a diff of different texts changes nothing:\n%s", d)
		}
	})
}
