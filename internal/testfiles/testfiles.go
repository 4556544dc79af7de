// Package testfiles writes the files a test reads: a fleet file and its
// apps' sources in a folder.
package testfiles

import (
	"os"
	"path/filepath"
	"testing"
)

// Write writes each file of files, by slash path under dir, making its
// folders; a test that cannot write fails.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
