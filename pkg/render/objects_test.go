package render

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// fuzzMaxBytes is the MaxBytes the fuzz targets run with: small, so that
// inputs which expand past it are found quickly and cost little memory.
const fuzzMaxBytes = 1 << 20

var (
	// documentError is how every error of parseDocuments starts.
	documentError = regexp.MustCompile(`^document [1-9][0-9]*: `)
	// documentSource is the source of each object it returns.
	documentSource = regexp.MustCompile(`^document [1-9][0-9]*( item [0-9]+)*$`)
)

// FuzzParseDocuments checks the object-stream splitter on any input: an
// error names its document; every object has a kind, an apiVersion and a
// name, comes from a document, and reads back unchanged from its own JSON;
// and what the objects add up to stays near the limit however the input
// uses YAML aliases (JSON escapes a byte as at most 6, "\u0000").
func FuzzParseDocuments(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: b}\nstringData: {k: '${x}'}\n",
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: List, items: [{apiVersion: v1, kind: ConfigMap, metadata: {generateName: b-}}]}\n",
		`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}, "data": {"n": 1.5e300}}`,
		"---\n---\n# only a comment\n---\n{}\n",
		"a: &a [x, y]\nb: [*a, *a]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: &m {name: x}\ndata: {<<: *m}\n",
		"kind: 3\n", "metadata: []\n", "- a\n", "\t", "apiVersion: v1\nkind: X\nmetadata: {name: [a]}\n",
	} {
		f.Add([]byte(s))
	}
	for _, glob := range []string{"yaml/*.yaml", "duplicate/*.yaml", "secret/*.yaml"} {
		files, _ := filepath.Glob(filepath.Join(badDir, glob))
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := parseDocuments(data, fuzzMaxBytes)
		if err != nil {
			if !documentError.MatchString(err.Error()) {
				t.Fatalf("error does not name its document: %v", err)
			}
			return
		}
		var total int
		for _, r := range objs {
			if err := checkObject(r.obj); err != nil || r.obj.IsList() {
				t.Fatalf("object %v: %v (list: %v)", r.obj.Object, err, r.obj.IsList())
			}
			if !documentSource.MatchString(r.source) {
				t.Fatalf("source %q names no document", r.source)
			}
			j, err := r.obj.MarshalJSON()
			if err != nil {
				t.Fatalf("%v: %v", r.obj.Object, err)
			}
			total += len(j)
			again, err := parseDocuments(j, fuzzMaxBytes)
			if err != nil || len(again) != 1 {
				t.Fatalf("%s reads back as %d objects, %v", j, len(again), err)
			}
			if j2, _ := again[0].obj.MarshalJSON(); !bytes.Equal(j, j2) {
				t.Fatalf("%s reads back as %s", j, j2)
			}
		}
		if limit := 6 * (fuzzMaxBytes + len(data)); total > limit {
			t.Fatalf("%d bytes of input make %d bytes of objects, over %d", len(data), total, limit)
		}
	})
}
