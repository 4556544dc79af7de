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
// json.Marshal on every YAML and JSON document under $CORPUS (skipped
// without it), for instance the module cache:
//
//	CORPUS=$(go env GOMODCACHE) go test ./pkg/output -run Corpus -v
//
// Documents whose keys go-yaml cannot order consistently are left out.
func TestCorpus(t *testing.T) {
	root := os.Getenv("CORPUS")
	if root == "" {
		t.Skip("set CORPUS to a folder of manifests")
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
