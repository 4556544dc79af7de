package encode

import (
	"fmt"
	"path/filepath"
	"testing"

	yaml2 "go.yaml.in/yaml/v2"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/internal/corpus"
)

// TestCorpus compares AppendYAML and AppendJSON with yaml.Marshal and
// json.Marshal on every YAML and JSON document of the corpus of
// real-world manifests (package corpus). Documents whose keys go-yaml
// cannot order consistently are left out.
func TestCorpus(t *testing.T) {
	docs, files := 0, 0
	own := corpus.Walk(filepath.Join("..", ".."), func(p string, data []byte) {
		files++
		for i, obj := range documents(data) {
			if !orderedKeysDeep(obj) {
				continue
			}
			assertSameYAML(t, fmt.Sprintf("%s document %d", p, i+1), obj)
			assertSameJSON(t, fmt.Sprintf("%s document %d", p, i+1), obj)
			docs++
		}
	})
	t.Logf("%d files, %d documents", files, docs)
	if own && docs < 250 {
		t.Errorf("only %d documents in the corpus: is it there?", docs)
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

// TestYAMLv2 measures go.yaml.in/yaml/v2's Marshal, called directly,
// against what render must print (sigs.k8s.io/yaml's bytes) on the
// corpus: it logs how many documents differ (the package comment says
// why the port is kept anyway).
func TestYAMLv2(t *testing.T) {
	docs, differ := 0, 0
	corpus.Walk(filepath.Join("..", ".."), func(p string, data []byte) {
		for _, obj := range documents(data) {
			if !orderedKeysDeep(obj) {
				continue
			}
			docs++
			want, err := sigsyaml.Marshal(obj)
			if err != nil {
				continue
			}
			if got, err := yaml2.Marshal(obj); err != nil || string(got) != string(want) {
				differ++
			}
		}
	})
	t.Logf("yaml.v2 directly: %d of %d documents differ from sigs.k8s.io/yaml's", differ, docs)
}
