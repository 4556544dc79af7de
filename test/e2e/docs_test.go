package e2e

import (
	"bytes"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/docstest"
	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

// docChecks runs the examples of the documentation (README.md and docs/)
// marked <!-- check: e2e TestName --> for the test TestName: each "$
// kubectl fleet …" line of a block through the real kubectl, as the test
// prepares it, and the output, normalised (docVarying, progressLine),
// must be what the block shows ("…" stands for any number of lines), and
// the last command exit with the marker's exit=N (the others with 0). A
// block that names the test and that it never ran fails it, so that a
// marker cannot promise a check that does not happen; internal/docstest
// fails when a marker names a test that does not call newDocChecks.
type docChecks struct {
	t       *testing.T
	blocks  []docstest.Example
	checked []bool
}

// newDocChecks finds the blocks that name the running test.
func newDocChecks(t *testing.T) *docChecks {
	t.Helper()
	pages, err := docstest.Pages(repo)
	if err != nil {
		t.Fatal(err)
	}
	d := &docChecks{t: t}
	for _, p := range pages {
		for _, ex := range p.Examples() {
			if m, err := docstest.ParseMarker(ex.Marker); err == nil && m.E2E == t.Name() {
				d.blocks = append(d.blocks, ex)
			}
		}
	}
	if len(d.blocks) == 0 {
		t.Fatalf("no block of the documentation is marked <!-- check: e2e %s -->", t.Name())
	}
	d.checked = make([]bool, len(d.blocks))
	t.Cleanup(func() {
		if t.Failed() {
			return // it stopped early: the blocks it did not reach are noise
		}
		for i, ex := range d.blocks {
			if !d.checked[i] {
				t.Errorf("%s:%d is marked check: e2e %s, but the test never runs it", ex.Page, ex.Line, t.Name())
			}
		}
	})
	return d
}

// check runs the block of page (a path from the repository's root, such
// as "docs/ci.md") whose first line is first. command prepares the real
// kubectl with the block's arguments ("fleet", …): its folder, its
// kubeconfig.
func (d *docChecks) check(page, first string, command func(args ...string) *exec.Cmd) {
	t := d.t
	t.Helper()
	i := -1
	for j, ex := range d.blocks {
		if ex.Page == page && len(ex.Body) > 0 && ex.Body[0] == first {
			i = j
		}
	}
	if i < 0 {
		t.Fatalf("%s has no block starting %q marked check: e2e %s", page, first, t.Name())
	}
	ex := d.blocks[i]
	d.checked[i] = true
	m, err := docstest.ParseMarker(ex.Marker)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := docstest.Steps(ex)
	if err != nil {
		t.Fatalf("%s: %v", page, err)
	}
	for k, s := range steps {
		start := time.Now()
		got, code := runDocStep(t, s, command)
		t.Logf("%s:%d: $ kubectl fleet %s: exit %d in %s", page, s.Line, strings.Join(s.Args, " "), code, time.Since(start).Round(time.Millisecond))
		want := make([]string, len(s.Want))
		for j, l := range s.Want {
			want[j] = normaliseDoc(l)
		}
		if !docstest.Match(want, got) {
			t.Errorf("%s:%d: $ kubectl fleet %s\nthe page shows (normalised):\n%s\nthe plugin prints (normalised):\n%s", page, s.Line, strings.Join(s.Args, " "), strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
		wantCode := 0
		if k == len(steps)-1 {
			wantCode = m.Exit
		}
		if code != wantCode {
			t.Errorf("%s:%d: $ kubectl fleet %s: exit code %d, the page says %d (exit=N in the marker; it is the last command's)", page, s.Line, strings.Join(s.Args, " "), code, wantCode)
		}
	}
}

// prompt is how a block shows a question answered on a terminal: the
// question, then what the user typed.
const prompt = "[y/N] "

// runDocStep runs one command of a block, its stdout and stderr in one
// stream as a terminal shows them, and returns the lines, normalised, and
// the exit code. A block that shows a question answered "y" gets a
// terminal as standard input, with "y" typed ahead; the answer is put
// back after the question as the terminal would echo it.
func runDocStep(t *testing.T, s docstest.Step, command func(args ...string) *exec.Cmd) ([]string, int) {
	t.Helper()
	cmd := command(append([]string{"fleet"}, s.Args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	answers := false
	for _, l := range s.Want {
		answers = answers || strings.HasSuffix(l, prompt+"y")
	}
	if answers {
		control, terminal, err := testenv.OpenPTY()
		if err != nil {
			t.Fatal("no pseudo-terminal to answer a question on:", err)
		}
		defer control.Close()
		defer terminal.Close()
		if _, err := control.Write([]byte("y\n")); err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = terminal
	}
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if answers {
		text = strings.Replace(text, prompt, prompt+"y\n", 1)
	}
	var lines []string
	for _, l := range docstest.Lines(text) {
		if !progressLine.MatchString(l) {
			lines = append(lines, normaliseDoc(l))
		}
	}
	return lines, code
}

// docVarying is what legitimately differs between a run and the page:
// each match becomes its placeholder, in the page's lines and in the
// output alike. Times, UIDs, ports, digests and commits are those of a
// run; durations are timings (and the soaks the test shortens).
var docVarying = []struct {
	re *regexp.Regexp
	to string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\dZ?`), "<time>"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uid>"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:<port>"},
	{regexp.MustCompile(`sha256:[0-9a-f]{12}`), "sha256:<digest>"},
	{regexp.MustCompile(`\b[0-9a-f]{12}\b`), "<commit>"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|m|h)(\d+(\.\d+)?(ms|s))*\b`), "<duration>"},
}

// progressLine is a line of the progress a long command prints on stderr
// when stderr is not a terminal ("[prod-eu] testing web (6/9 objects,
// 2s)", "[prod-eu] connecting (0s elapsed)" while the total is not
// known); on a terminal it is drawn and removed, and pages do not show it.
var progressLine = regexp.MustCompile(`^\[[^\]]+\] +.* \((\d+/\d+ objects, [^)]*|[0-9hms.]+ elapsed)\)$`)

// normaliseDoc replaces what varies in a line (docVarying).
func normaliseDoc(l string) string {
	for _, v := range docVarying {
		l = v.re.ReplaceAllString(l, v.to)
	}
	return l
}
