package stream

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// renderedMarker, in a cluster's folder, lists the files a render wrote
// there: the next render removes those, and nothing else.
const renderedMarker = ".kubectl-fleet-render"

// CheckDir refuses, before anything is rendered or written, a cluster
// folder of outputDir (--output-dir) that holds files no render wrote (a
// kustomize overlay of the same name, say): they would be mixed with the
// render's, or taken for stale ones. An empty outputDir is no folder:
// nothing to refuse.
func CheckDir(outputDir string, clusters []*fleet.Cluster) error {
	if outputDir == "" {
		return nil
	}
	var theirs []string
	for _, c := range clusters {
		dir := filepath.Join(outputDir, c.Name)
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) == 0 {
			continue // missing or empty: ours to fill
		}
		if _, err := os.Stat(filepath.Join(dir, renderedMarker)); err == nil {
			continue
		}
		names := make([]string, 0, 3)
		for _, e := range entries[:min(3, len(entries))] {
			names = append(names, e.Name())
		}
		theirs = append(theirs, fmt.Sprintf("%s (%s)", dir, strings.Join(names, ", ")))
	}
	if len(theirs) > 0 {
		return fmt.Errorf("--output-dir: %s: not written by kubectl fleet render (no %s), so not ours to replace; give an empty or new folder", strings.Join(theirs, "; "), renderedMarker)
	}
	return nil
}

// writeDir writes one cluster's folder: Dir/<cluster>/<file>.yaml, the
// files the last render listed in its marker removed first (and no
// other: a file someone added there stays).
func (p *Printer) writeDir(c *fleet.Cluster, chunks []chunk, n int) error {
	dir := filepath.Join(p.o.Dir, c.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil { // it holds Secrets, unmasked
		return err
	}
	if last, err := os.ReadFile(filepath.Join(dir, renderedMarker)); err == nil {
		for _, name := range strings.Split(string(last), "\n") {
			if name == "" || name != filepath.Base(name) || !strings.HasSuffix(name, ".yaml") {
				continue // only the files of this folder a render names
			}
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	var written []string
	defer func() {
		_ = os.WriteFile(filepath.Join(dir, renderedMarker), []byte(strings.Join(written, "\n")+"\n"), 0o644)
	}()
	seen := map[string]int{}
	for _, ch := range chunks {
		for _, f := range ch.files {
			name := f.name
			if k := seen[f.name]; k > 0 {
				name = fmt.Sprintf("%s_%d.yaml", strings.TrimSuffix(name, ".yaml"), k+1)
			}
			seen[f.name]++
			mode := os.FileMode(0o644)
			if f.private {
				mode = 0o600
			}
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, f.data, mode); err != nil {
				return err
			}
			// WriteFile keeps the mode of a file that was there.
			if err := os.Chmod(path, mode); err != nil {
				return err
			}
			written = append(written, name)
		}
	}
	fmt.Fprintf(p.o.Progress, "%s wrote %d objects to %s\n", p.o.Prefix.Prefix(c.Name), n, dir)
	return nil
}
