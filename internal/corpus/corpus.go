// Package corpus walks the repository's corpus of real-world manifests
// (testdata/corpus: Kubernetes' own e2e manifests and cluster add-ons,
// CRDs with large schemas, and the API's round-trip fixtures of every
// core kind, whose values are random unicode), or any folder named by
// $CORPUS, for tests that compare a fast path with the slow one on it:
//
//	CORPUS=$(go env GOMODCACHE) go test ./pkg/output -run Corpus -v
package corpus

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// manifest is a YAML or JSON file's name.
var manifest = regexp.MustCompile(`\.(ya?ml|json)$`)

// Walk calls fn with every manifest file of the corpus of at most 300 kB,
// but alias bombs, from the repository's root given relative to the
// calling test's package. It returns whether the corpus is the
// repository's own (not $CORPUS), whose size a test may then check.
func Walk(root string, fn func(path string, data []byte)) (own bool) {
	dir := os.Getenv("CORPUS")
	if dir == "" {
		dir = filepath.Join(root, "testdata", "corpus")
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !manifest.MatchString(p) || strings.Contains(p, "alias") || strings.Contains(p, "bomb") {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > 300_000 {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil {
			fn(p, data)
		}
		return nil
	})
	return os.Getenv("CORPUS") == ""
}
