package docstest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// root is the repository's root, from this package's folder.
var root = filepath.Join("..", "..")

func pages(t *testing.T) []Page {
	t.Helper()
	ps, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) < 10 {
		t.Fatalf("only %d pages found", len(ps))
	}
	return ps
}

// TestLinks: every relative link of README.md and docs/ names a file or
// folder that exists, and every #anchor a heading of the page it points
// to (GitHub's slugs).
func TestLinks(t *testing.T) {
	ps := pages(t)
	anchors := map[string]map[string]bool{}
	for _, p := range ps {
		anchors[p.Path] = p.Anchors()
	}
	n := 0
	for _, p := range ps {
		for _, l := range p.Links() {
			n++
			target, anchor, _ := strings.Cut(l.Target, "#")
			file := p.Path
			if target != "" {
				file = path.Clean(path.Join(path.Dir(p.Path), target))
				if strings.HasPrefix(file, "../") {
					t.Errorf("%s:%d: %s leaves the repository", p.Path, l.Line, l.Target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
					t.Errorf("%s:%d: %s: no such file or folder %s", p.Path, l.Line, l.Target, file)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			a, ok := anchors[file]
			if !ok {
				t.Errorf("%s:%d: %s: an anchor into %s, which is not a page of the documentation", p.Path, l.Line, l.Target, file)
				continue
			}
			if !a[anchor] {
				t.Errorf("%s:%d: %s: %s has no heading #%s", p.Path, l.Line, l.Target, file, anchor)
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d links found: is the link parser broken?", n)
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		" Promotion: a later group only gets what an earlier group verified": "promotion-a-later-group-only-gets-what-an-earlier-group-verified",
		" `clusters` (alias `ls`)":         "clusters-alias-ls",
		" `version`, `completion`":         "version-completion",
		" Revisions, history and rollback": "revisions-history-and-rollback",
		" [The fleet file](fleet-file.md)": "the-fleet-file",
		" kubeconfig_from & CI":            "kubeconfig_from--ci",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestExamples: every example of README.md and docs/ that shows a
// "$ kubectl fleet …" command is either marked <!-- check: offline -->,
// and then the plugin, built from this tree, prints exactly the output the
// block shows, or marked <!-- example: needs clusters --> (illustrative).
func TestExamples(t *testing.T) {
	var checked []Example
	for _, p := range pages(t) {
		for _, ex := range p.Examples() {
			switch {
			case strings.HasPrefix(ex.Marker, "check:"):
				checked = append(checked, ex)
			case ex.Marker == "example: needs clusters":
			default:
				t.Errorf("%s:%d: an example of a command and its output without a marker: put <!-- check: offline --> (the tests run it) or <!-- example: needs clusters --> on the line before it", ex.Page, ex.Line)
			}
		}
	}
	if len(checked) < 5 {
		t.Fatalf("only %d checked examples found", len(checked))
	}
	plugin := buildPlugin(t)
	for _, ex := range checked {
		t.Run(fmt.Sprintf("%s:%d", ex.Page, ex.Line), func(t *testing.T) {
			t.Parallel()
			checkExample(t, plugin, ex)
		})
	}
}

// buildPlugin builds cmd/kubectl-fleet into a temporary folder.
func buildPlugin(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "kubectl-fleet")
	gobin := "go"
	if g := os.Getenv("GO"); g != "" {
		gobin = g
	}
	build := exec.Command(gobin, "build", "-o", out, "./cmd/kubectl-fleet")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, b)
	}
	return out
}

// marker is what a "check:" marker asks for.
type marker struct {
	offline bool
	dir     string
	exit    int
}

func parseMarker(s string) (marker, error) {
	m := marker{dir: "."}
	for _, f := range strings.Fields(strings.TrimPrefix(s, "check:")) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "offline":
			m.offline = true
		case "dir":
			m.dir = v
		case "exit":
			n, err := strconv.Atoi(v)
			if err != nil {
				return m, fmt.Errorf("exit=%s: %v", v, err)
			}
			m.exit = n
		default:
			return m, fmt.Errorf("unknown %q (want offline, dir=PATH, exit=N)", f)
		}
	}
	if !m.offline {
		return m, errors.New("only offline examples are checked here: check: offline")
	}
	return m, nil
}

// step is one command of an example and the output it shows.
type step struct {
	line int
	args []string
	want []string
}

func steps(ex Example) ([]step, error) {
	var out []step
	for i, l := range ex.Body {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			args, err := splitArgs(cmd)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", ex.Line+1+i, err)
			}
			if len(args) < 2 || args[0] != "kubectl" || args[1] != "fleet" {
				return nil, fmt.Errorf("line %d: only kubectl fleet commands are run: %s", ex.Line+1+i, cmd)
			}
			out = append(out, step{line: ex.Line + 1 + i, args: args[2:]})
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("line %d: output before the first $ command", ex.Line+1+i)
		}
		out[len(out)-1].want = append(out[len(out)-1].want, l)
	}
	if len(out) == 0 {
		return nil, errors.New("no $ kubectl fleet command")
	}
	return out, nil
}

// splitArgs splits a command line as a shell would for the simple cases
// the documentation has: spaces, single and double quotes, and a # comment.
func splitArgs(s string) ([]string, error) {
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

func checkExample(t *testing.T, plugin string, ex Example) {
	m, err := parseMarker(ex.Marker)
	if err != nil {
		t.Fatalf("%s:%d: marker %q: %v", ex.Page, ex.Line-1, ex.Marker, err)
	}
	ss, err := steps(ex)
	if err != nil {
		t.Fatalf("%s: %v", ex.Page, err)
	}
	home := t.TempDir()
	for i, s := range ss {
		cmd := exec.Command(plugin, s.args...)
		cmd.Dir = filepath.Join(root, filepath.FromSlash(m.dir))
		// Nothing of the developer's environment: no kubeconfig, no
		// fleet file, no colour.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "NO_COLOR=1", "TMPDIR=" + t.TempDir()}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		got := normalise(out.String(), home)
		if !match(s.want, got) {
			t.Errorf("%s:%d: $ kubectl fleet %s\nthe page shows:\n%s\nthe plugin prints:\n%s", ex.Page, s.line, strings.Join(s.args, " "), strings.Join(s.want, "\n"), strings.Join(got, "\n"))
		}
		wantCode := 0
		if i == len(ss)-1 {
			wantCode = m.exit
		}
		if code != wantCode {
			t.Errorf("%s:%d: $ kubectl fleet %s: exit code %d, the page says %d (exit=N in the marker; it is the last command's)", ex.Page, s.line, strings.Join(s.args, " "), code, wantCode)
		}
	}
}

// normalise turns output into lines without trailing blanks, the
// temporary home folder written /home/you.
func normalise(s, home string) []string {
	s = strings.ReplaceAll(s, home, "/home/you")
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines
}

// match reports whether got is want, where a line "…" in want stands for
// any number of lines.
func match(want, got []string) bool {
	for len(want) > 0 && strings.TrimRight(want[len(want)-1], " ") == "" {
		want = want[:len(want)-1]
	}
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "…" {
		for i := 0; i <= len(got); i++ {
			if match(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && strings.TrimRight(want[0], " \t") == got[0] && match(want[1:], got[1:])
}
