package docstest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Marker is what a "check:" marker asks for: <!-- check: offline -->
// (TestExamples runs the block with no cluster) or <!-- check: e2e
// TestName --> (the e2e test TestName runs it on the test bed), with
// dir=PATH (offline only) and exit=N.
type Marker struct {
	Offline bool
	// E2E is the name of the e2e test that checks the block.
	E2E string
	// Dir is the folder the commands run in, from the repository's root.
	Dir string
	// Exit is the last command's exit code; the others' is 0.
	Exit int
}

// ParseMarker parses a marker's text ("check: e2e TestDocs exit=1").
func ParseMarker(s string) (Marker, error) {
	m := Marker{Dir: "."}
	rest, ok := strings.CutPrefix(s, "check:")
	if !ok {
		return m, fmt.Errorf("%q is not a check: marker", s)
	}
	fields := strings.Fields(rest)
	for i := 0; i < len(fields); i++ {
		k, v, _ := strings.Cut(fields[i], "=")
		switch k {
		case "offline":
			m.Offline = true
		case "e2e":
			if i+1 == len(fields) || !strings.HasPrefix(fields[i+1], "Test") {
				return m, errors.New("e2e needs the name of the test that checks the block: check: e2e TestName")
			}
			i++
			m.E2E = fields[i]
		case "dir":
			m.Dir = v
		case "exit":
			n, err := strconv.Atoi(v)
			if err != nil {
				return m, fmt.Errorf("exit=%s: %v", v, err)
			}
			m.Exit = n
		default:
			return m, fmt.Errorf("unknown %q (want offline or e2e TestName, dir=PATH, exit=N)", fields[i])
		}
	}
	switch {
	case m.Offline == (m.E2E != ""):
		return m, errors.New("a check is either offline or e2e TestName")
	case m.E2E != "" && m.Dir != ".":
		return m, errors.New("dir=PATH is for offline checks: the e2e test chooses the folder")
	}
	return m, nil
}

// Step is one command of an example and the output it shows.
type Step struct {
	// Line is the command's line in the page (1-based).
	Line int
	// Args are the command's arguments after "kubectl fleet".
	Args []string
	// Want is the output the page shows after the command.
	Want []string
}

// Steps splits an example into its "$ kubectl fleet …" commands and the
// lines each shows.
func Steps(ex Example) ([]Step, error) {
	var out []Step
	for i, l := range ex.Body {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			args, err := SplitArgs(cmd)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", ex.Line+1+i, err)
			}
			if len(args) < 2 || args[0] != "kubectl" || args[1] != "fleet" {
				return nil, fmt.Errorf("line %d: only kubectl fleet commands are run: %s", ex.Line+1+i, cmd)
			}
			out = append(out, Step{Line: ex.Line + 1 + i, Args: args[2:]})
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("line %d: output before the first $ command", ex.Line+1+i)
		}
		out[len(out)-1].Want = append(out[len(out)-1].Want, l)
	}
	if len(out) == 0 {
		return nil, errors.New("no $ kubectl fleet command")
	}
	return out, nil
}

// SplitArgs splits a command line as a shell would for the simple cases
// the documentation has: spaces, single and double quotes, and a # comment.
func SplitArgs(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inArg := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inArg = r, true
		case r == ' ' || r == '\t':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		case r == '#' && !inArg:
			return args, nil
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}

// Lines splits output into lines without trailing blanks; no output is
// no line.
func Lines(s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines
}

// Match reports whether got is want, where a line "…" in want stands for
// any number of lines.
func Match(want, got []string) bool {
	for len(want) > 0 && strings.TrimRight(want[len(want)-1], " ") == "" {
		want = want[:len(want)-1]
	}
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "…" {
		for i := 0; i <= len(got); i++ {
			if Match(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && strings.TrimRight(want[0], " \t") == got[0] && Match(want[1:], got[1:])
}
