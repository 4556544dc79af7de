package output

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorpus compares AppendYAML and AppendJSON with yaml.Marshal and
// json.Marshal on every YAML and JSON document of a corpus of real-world
// manifests: testdata/corpus (Kubernetes' own e2e manifests and cluster
// add-ons, CRDs with large schemas, and the API's round-trip fixtures of
// every core kind, whose values are random unicode), or any folder named
// by $CORPUS, for instance the module cache:
//
//	CORPUS=$(go env GOMODCACHE) go test ./pkg/output -run Corpus -v
//
// Documents whose keys go-yaml cannot order consistently are left out.
func TestCorpus(t *testing.T) {
	root := os.Getenv("CORPUS")
	if root == "" {
		root = filepath.Join("..", "..", "testdata", "corpus")
	}
	docs, files := 0, 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !manifestFile.MatchString(p) || strings.Contains(p, "alias") || strings.Contains(p, "bomb") {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > 300_000 {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		files++
		for i, obj := range documents(data) {
			if !orderedKeysDeep(obj) {
				continue
			}
			assertSameYAML(t, fmt.Sprintf("%s document %d", p, i+1), obj)
			assertSameJSON(t, fmt.Sprintf("%s document %d", p, i+1), obj)
			docs++
		}
		return nil
	})
	t.Logf("%d files, %d documents", files, docs)
	if os.Getenv("CORPUS") == "" && docs < 250 {
		t.Errorf("only %d documents in %s: is the corpus there?", docs, root)
	}
}

// orderedKeysDeep is orderedKeys on every mapping of v; mappings of more
// than 40 keys are not checked (too slow), and are compared.
func orderedKeysDeep(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		var keys []string
		for k, c := range v {
			keys = append(keys, k)
			if !orderedKeysDeep(c) {
				return false
			}
		}
		return len(keys) > 40 || orderedKeys(keys)
	case []any:
		for _, c := range v {
			if !orderedKeysDeep(c) {
				return false
			}
		}
	}
	return true
}
