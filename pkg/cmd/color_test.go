package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// openPTY opens a pseudo-terminal for a test; it fails the test where one
// should open (Linux, which OpenPTY implements) and skips elsewhere.
func openPTY(t *testing.T) (control, terminal *os.File) {
	t.Helper()
	control, terminal, err := testenv.OpenPTY()
	if err != nil {
		if runtime.GOOS == "linux" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() { _ = control.Close(); _ = terminal.Close() })
	return control, terminal
}

// TestDiffColorOnATerminal: a diff printed to a terminal is coloured,
// unless --no-color or NO_COLOR; to anything else it is plain.
func TestDiffColorOnATerminal(t *testing.T) {
	_, terminal := openPTY(t)
	d := diff.Object{Ref: "configmap/a", Action: change.Configured, Text: "--- live/a\n+++ merged/a\n@@ -1,2 +1,2 @@\n data:\n-  k: \"1\"\n+  k: \"2\"\n"}
	show := func(out io.Writer, noColor bool) string {
		var w bytes.Buffer
		o := &DiffOptions{GlobalOptions: &GlobalOptions{IOStreams: genericiooptions.IOStreams{Out: out}, NoColor: noColor}}
		diff.Print(&w, d, o.diffStyle(false))
		return w.String()
	}
	t.Setenv("NO_COLOR", "")
	if got := show(terminal, false); !strings.Contains(got, "\x1b[31m-  k: \"1\"\x1b[0m\n") || !strings.Contains(got, "\x1b[32m+  k: \"2\"\x1b[0m\n") || !strings.Contains(got, "\n data:\n") {
		t.Errorf("on a terminal:\n%q", got)
	}
	if got := show(terminal, true); got != d.Text {
		t.Errorf("on a terminal with --no-color:\n%q", got)
	}
	if got := show(&bytes.Buffer{}, false); got != d.Text {
		t.Errorf("on a buffer:\n%q", got)
	}
	t.Setenv("NO_COLOR", "1")
	if got := show(terminal, false); got != d.Text {
		t.Errorf("on a terminal with NO_COLOR:\n%q", got)
	}
}

// TestPrefixColorOnATerminal runs vet with its stdout on a terminal: each
// cluster's prefix has the cluster's own colour, unless --no-color or
// NO_COLOR.
func TestPrefixColorOnATerminal(t *testing.T) {
	vet := func(env string, args ...string) string {
		t.Helper()
		t.Setenv("NO_COLOR", env)
		control, terminal := openPTY(t)
		read := make(chan string)
		go func() {
			b, _ := io.ReadAll(control) // until the terminal side is closed (EIO)
			read <- string(b)
		}()
		var errOut bytes.Buffer
		code := Execute(context.Background(), genericiooptions.IOStreams{In: strings.NewReader(""), Out: terminal, ErrOut: &errOut}, append([]string{"vet", "-F", example, "--no-kubeconfig"}, args...))
		_ = terminal.Close()
		out := <-read
		if code != 0 || !strings.Contains(out, "ok: 5 objects from app web") || !strings.Contains(out, "vet: 3 clusters ok") {
			t.Fatalf("vet %v: exit %d\nterminal: %q\nstderr: %s", args, code, out, errOut.String())
		}
		return out
	}
	out := vet("")
	for _, c := range []string{"staging-eu", "prod-eu", "prod-us"} {
		if want := fmt.Sprintf("\x1b[%dm[%s]\x1b[0m ", output.ColorOf(c), c); !strings.Contains(out, want) {
			t.Errorf("no coloured prefix %q on the terminal:\n%q", want, out)
		}
	}
	if out := vet("", "--no-color"); strings.Contains(out, "\x1b[") || !strings.Contains(out, "[staging-eu] ok: ") {
		t.Errorf("colour despite --no-color:\n%q", out)
	}
	if out := vet("1"); strings.Contains(out, "\x1b[") || !strings.Contains(out, "[staging-eu] ok: ") {
		t.Errorf("colour despite NO_COLOR:\n%q", out)
	}
}
