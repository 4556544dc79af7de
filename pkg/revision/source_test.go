package revision

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSourceOf(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	dir := t.TempDir()
	app := filepath.Join(dir, "apps", "web")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(app, "cm.yaml"), "a: 1\n")
	fleetFile := filepath.Join(dir, "fleet.yaml")
	write(fleetFile, "x: 1\n")
	if got := SourceOf(ctx, app, fleetFile); got != (Source{}) {
		t.Errorf("outside git: %+v", got)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "v1")
	head := git("rev-parse", "HEAD")
	if got := SourceOf(ctx, app, fleetFile); got != (Source{Commit: head}) {
		t.Errorf("clean: %+v, want %s", got, head)
	}
	write(fleetFile, "x: 2\n")
	if got := SourceOf(ctx, filepath.Join(app, "cm.yaml"), fleetFile); got != (Source{Commit: head, Dirty: true}) {
		t.Errorf("fleet file changed: %+v", got)
	}
	// A fleet file outside the work tree does not count.
	if got := SourceOf(ctx, app, filepath.Join(t.TempDir(), "fleet.yaml")); got != (Source{Commit: head}) {
		t.Errorf("fleet file elsewhere: %+v", got)
	}
	if s := (Source{Commit: head, Dirty: true}).String(); s != head[:12]+"-dirty" {
		t.Errorf("String %q", s)
	}
}
