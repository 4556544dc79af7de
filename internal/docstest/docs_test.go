package docstest

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
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
// "$ kubectl fleet …" command is checked. Marked <!-- check: offline -->,
// the plugin, built from this tree, prints exactly the output the block
// shows; marked <!-- check: e2e TestName -->, TestName is a test of
// test/e2e that checks the doc's blocks (it calls newDocChecks, and fails
// when a block that names it was not run).
func TestExamples(t *testing.T) {
	var offline []Example
	e2e := e2eDocTests(t)
	for _, p := range pages(t) {
		for _, ex := range p.Examples() {
			if !strings.HasPrefix(ex.Marker, "check:") {
				t.Errorf("%s:%d: an example of a command and its output without a check: put <!-- check: offline --> (the unit tests run it) or <!-- check: e2e TestName --> (an e2e test runs it on the test bed) on the line before it", ex.Page, ex.Line)
				continue
			}
			m, err := ParseMarker(ex.Marker)
			if err != nil {
				t.Errorf("%s:%d: marker %q: %v", ex.Page, ex.Line-1, ex.Marker, err)
				continue
			}
			if _, err := Steps(ex); err != nil {
				t.Errorf("%s: %v", ex.Page, err)
				continue
			}
			switch checks, ok := e2e[m.E2E]; {
			case m.Offline:
				offline = append(offline, ex)
			case !ok:
				t.Errorf("%s:%d: check: e2e %s: test/e2e has no func %s(t *testing.T)", ex.Page, ex.Line-1, m.E2E, m.E2E)
			case !checks:
				t.Errorf("%s:%d: check: e2e %s: %s does not check the documentation's blocks (it never calls newDocChecks)", ex.Page, ex.Line-1, m.E2E, m.E2E)
			}
		}
	}
	if len(offline) < 5 {
		t.Fatalf("only %d offline examples found", len(offline))
	}
	plugin := buildPlugin(t)
	for _, ex := range offline {
		t.Run(fmt.Sprintf("%s:%d", ex.Page, ex.Line), func(t *testing.T) {
			t.Parallel()
			checkExample(t, plugin, ex)
		})
	}
}

// e2eDocTests returns the tests of test/e2e, each with whether it calls
// newDocChecks (and so checks the blocks that name it).
func e2eDocTests(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "test", "e2e", "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test/e2e files: %v", err)
	}
	tests := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			calls := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "newDocChecks" {
						calls = true
					}
				}
				return !calls
			})
			tests[fn.Name.Name] = calls
		}
	}
	return tests
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

func checkExample(t *testing.T, plugin string, ex Example) {
	m, err := ParseMarker(ex.Marker)
	if err != nil {
		t.Fatalf("%s:%d: marker %q: %v", ex.Page, ex.Line-1, ex.Marker, err)
	}
	ss, err := Steps(ex)
	if err != nil {
		t.Fatalf("%s: %v", ex.Page, err)
	}
	home := t.TempDir()
	for i, s := range ss {
		cmd := exec.Command(plugin, s.Args...)
		cmd.Dir = filepath.Join(root, filepath.FromSlash(m.Dir))
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
		got := Lines(strings.ReplaceAll(out.String(), home, "/home/you"))
		if !Match(s.Want, got) {
			t.Errorf("%s:%d: $ kubectl fleet %s\nthe page shows:\n%s\nthe plugin prints:\n%s", ex.Page, s.Line, strings.Join(s.Args, " "), strings.Join(s.Want, "\n"), strings.Join(got, "\n"))
		}
		wantCode := 0
		if i == len(ss)-1 {
			wantCode = m.Exit
		}
		if code != wantCode {
			t.Errorf("%s:%d: $ kubectl fleet %s: exit code %d, the page says %d (exit=N in the marker; it is the last command's)", ex.Page, s.Line, strings.Join(s.Args, " "), code, wantCode)
		}
	}
}

func TestParseMarker(t *testing.T) {
	for text, want := range map[string]Marker{
		"check: offline":                   {Offline: true, Dir: "."},
		"check: offline dir=docs exit=1":   {Offline: true, Dir: "docs", Exit: 1},
		"check: e2e TestDocsExampleFleet":  {E2E: "TestDocsExampleFleet", Dir: "."},
		"check: e2e TestDocsUnlock exit=1": {E2E: "TestDocsUnlock", Dir: ".", Exit: 1},
	} {
		if got, err := ParseMarker(text); err != nil || got != want {
			t.Errorf("ParseMarker(%q) = %+v, %v; want %+v", text, got, err, want)
		}
	}
	for _, text := range []string{
		"check:", "check: e2e", "check: e2e exit=1", "check: offline e2e TestX",
		"check: e2e TestX dir=docs", "check: offline exit=x", "check: online", "example: needs clusters",
	} {
		if m, err := ParseMarker(text); err == nil {
			t.Errorf("ParseMarker(%q) = %+v, want an error", text, m)
		}
	}
}
