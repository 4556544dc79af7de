package cmd

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCommandDocs: docs/commands is what the commands generate (make docs
// rewrites it): a flag or a help text changed without the pages fails
// here.
func TestCommandDocs(t *testing.T) {
	t.Setenv("HOME", "/home/you")
	t.Setenv("KUBECACHEDIR", "")
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBECTL_FLEET", "")
	dir := t.TempDir()
	if err := GenerateDocs(dir); err != nil {
		t.Fatal(err)
	}
	got, err := docFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := docFiles(filepath.Join("..", "..", "docs", "commands"))
	if err != nil {
		t.Fatalf("%v (make docs writes docs/commands)", err)
	}
	if len(got) < 15 {
		t.Errorf("only %d pages generated", len(got))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/commands is out of date: run make docs (-committed +generated):\n%s", diff)
	}
}
