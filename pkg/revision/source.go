package revision

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// SourceOf describes where a render came from when its source path is in
// a git work tree: the commit checked out, and whether the source or any
// of also (the fleet file) has changes not committed. Outside git, or
// without a git command, it is empty: the revision simply has no commit.
func SourceOf(ctx context.Context, path string, also ...string) Source {
	if path == "" || path == "-" {
		return Source{}
	}
	dir := path
	if !isDir(dir) {
		dir = filepath.Dir(dir)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	git := func(args ...string) (string, bool) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err == nil
	}
	commit, ok := git("rev-parse", "--verify", "-q", "HEAD")
	if !ok || commit == "" {
		return Source{}
	}
	top, _ := git("rev-parse", "--show-toplevel")
	paths := []string{path}
	for _, p := range also {
		// Only what the same work tree holds: git status refuses others.
		real, err := filepath.EvalSymlinks(p)
		if err != nil || top == "" {
			continue
		}
		if rel, err := filepath.Rel(top, real); err == nil && !strings.HasPrefix(rel, "..") {
			paths = append(paths, p)
		}
	}
	status, ok := git(append([]string{"status", "--porcelain", "--"}, paths...)...)
	return Source{Commit: commit, Dirty: !ok || status != ""}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
