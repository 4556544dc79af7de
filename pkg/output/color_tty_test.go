package output_test

import (
	"runtime"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// On a terminal colour is on, unless --no-color or NO_COLOR.
func TestUseColorOnATerminal(t *testing.T) {
	control, terminal, err := testenv.OpenPTY()
	if err != nil {
		// OpenPTY is implemented on Linux: there, failing to open one is a
		// failure, not a reason to test nothing.
		if runtime.GOOS == "linux" {
			t.Fatal(err)
		}
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer control.Close()
	defer terminal.Close()
	t.Setenv("NO_COLOR", "")
	if !output.UseColor(terminal, false) {
		t.Error("no colour on a terminal")
	}
	if output.UseColor(terminal, true) {
		t.Error("colour on a terminal despite --no-color")
	}
	t.Setenv("NO_COLOR", "1")
	if output.UseColor(terminal, false) {
		t.Error("colour on a terminal despite NO_COLOR")
	}
}
