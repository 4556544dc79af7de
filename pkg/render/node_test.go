package render

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/corpus"
)

// nodeDocs are resources whose scalars YAML and JSON read in ways of their
// own; ok says whether nodeObject reads them itself (else the printed YAML
// is parsed, as before).
var nodeDocs = []struct {
	name, doc string
	ok        bool
}{
	{"integers", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ints}\nspec: {a: 3, b: -7, c: 0x1F, d: 0o17, e: 0777, f: 1_000, g: 9223372036854775807, h: 18446744073709551615, i: +12}\n", true},
	{"floats", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: floats}\nspec: {a: 1.5, b: 1.0, c: 1e3, d: -0.0, e: 1e21, f: 9.3e18, g: .5, h: 6.02e-23, i: 123456789012345678901234567890.0}\n", true},
	{"bools and nulls", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bools}\nspec: {a: true, b: False, c: TRUE, d: yes, e: on, f: n, g: ~, h: null, j: Null}\n", true},
	// Printed "" in a flow mapping, and so a string.
	{"empty null in a flow mapping", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: empty}\nspec: {i: }\n", false},
	{"empty null in a block mapping", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: empty}\nspec:\n  i:\n", false},
	{"strings", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: strings\n  annotations: {note: \"caf\\u00e9 \\t tab\"}\ndata:\n  quoted: \"1\"\n  single: '2.0'\n  block: |\n    line one\n    line ${two}\n  folded: >\n    folded\n    text\n  empty: \"\"\n  colon: \"a: b\"\n  tagged: !!str 123\n", true},
	{"lists of maps", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: ${replicas}\n  template:\n    spec:\n      containers:\n        - {name: a, image: 'x:${tag}', ports: [{containerPort: 80}, {containerPort: 443, protocol: TCP}]}\n        - name: b\n          args: [--v=2, \"3\", 4, 5.5, null, [nested]]\n", true},
	{"explicit tags", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tags}\nspec: {a: !!float 1, b: !!int \"12\", c: !!bool true}\n", true},
	{"anchors", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: anchors}\nspec:\n  base: &b {x: 1, y: [a, b]}\n  copy: *b\n", true},
	{"timestamp", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: time}\nspec: {at: 2001-12-14t21:59:43.10-05:00, day: 2002-12-14}\n", false},
	{"integer key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: intkey}\nspec: {1: one}\n", false},
	{"binary", "apiVersion: v1\nkind: Secret\nmetadata: {name: bin}\ndata: {a: !!binary aGVsbG8=}\n", false},
	{"infinity", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inf}\nspec: {a: .inf}\n", false},
}

// TestNodeObjectAsItsYAML: an object read from kustomize's node is the
// object its printed YAML parses to (what `kustomize build | kubectl
// apply` applies), for every resource of nodeDocs and of the repository's
// kustomizations; what nodeObject declines, the YAML is parsed for.
func TestNodeObjectAsItsYAML(t *testing.T) {
	for _, tt := range nodeDocs {
		if read := checkNodeObjects(t, docDir(t, tt.doc)); read != 1 && tt.ok || read != 0 && !tt.ok {
			t.Errorf("%s: %d objects read from their node, want ok %v", tt.name, read, tt.ok)
		}
	}
	for _, dir := range []string{"../../examples/apps/web/overlays/production", "../../examples/apps/web/overlays/prod-us", "../../examples/apps/web/overlays/staging", "testdata/lookup", "testdata/lookup/prod-us"} {
		if read := checkNodeObjects(t, dir); read == 0 {
			t.Errorf("%s: no object read from its node", dir)
		}
	}
}

// TestNodeObjectCorpus is TestNodeObjectAsItsYAML on every YAML file of
// the corpus of real-world manifests (package corpus) that kustomize
// builds.
func TestNodeObjectCorpus(t *testing.T) {
	read := 0
	own := corpus.Walk(filepath.Join("..", ".."), func(p string, data []byte) {
		if !strings.HasSuffix(p, ".json") {
			read += checkNodeObjects(t, docDir(t, string(data)))
		}
	})
	t.Logf("%d objects read from their nodes", read)
	if own && read < 250 {
		t.Errorf("only %d objects read from their nodes in the corpus: is it there?", read)
	}
}

// FuzzNodeObject: whatever a resource is, what nodeObject reads of it is
// what its printed YAML parses to.
func FuzzNodeObject(f *testing.F) {
	for _, tt := range nodeDocs {
		f.Add(tt.doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		checkNodeObjects(t, docDir(t, doc))
	})
}

// docDir is a kustomization of the one resource file doc.
func docDir(t *testing.T, doc string) string {
	dir := t.TempDir()
	for name, text := range map[string]string{"kustomization.yaml": "resources: [doc.yaml]\n", "doc.yaml": doc} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkNodeObjects builds dir and checks that every object nodeObject
// reads is its YAML's, with its vars and about its size. It returns how
// many it read (kustomize's errors, a fuzzed input's, read none).
func checkNodeObjects(t *testing.T, dir string) (read int) {
	t.Helper()
	resMap, err := runKustomize(dir, files{max: DefaultMaxBytes})
	if err != nil {
		return 0
	}
	for _, res := range resMap.Resources() {
		obj, size, vars, ok := nodeObject(res.YNode())
		if !ok {
			continue
		}
		read++
		text, err := res.AsYAML()
		if err != nil {
			t.Errorf("%s: %s: read from its node, but its YAML is not printed: %v", dir, res.CurId(), err)
			continue
		}
		// What the object is checked for, either way.
		want, err := parseDocument(text)
		checked := checkObject(&unstructured.Unstructured{Object: obj})
		switch {
		case err != nil || checked != nil:
			if fmt.Sprint(err) != fmt.Sprint(checked) {
				t.Errorf("%s: %s: read from its node: %v; from its YAML: %v", dir, res.CurId(), checked, err)
			}
			continue
		case len(want) != 1:
			t.Errorf("%s: %s: read from its node, but its YAML parses to %d objects", dir, res.CurId(), len(want))
			continue
		}
		if diff := gocmp.Diff(want[0].obj.Object, obj); diff != "" {
			t.Errorf("%s: %s: read from its node (+), from its YAML (-):\n%s", dir, res.CurId(), diff)
		}
		if vars != want[0].vars && !bytes.Contains(text, []byte("#")) {
			t.Errorf("%s: %s: vars %v from its node, %v from its YAML", dir, res.CurId(), vars, want[0].vars)
		}
		if size <= 0 || size > 2*int64(len(text))+64 {
			t.Errorf("%s: %s: size %d for %d bytes of YAML", dir, res.CurId(), size, len(text))
		}
	}
	return read
}
