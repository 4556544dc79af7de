package encode

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// assertSameYAML checks that AppendYAML writes obj exactly as
// sigs.k8s.io/yaml.Marshal does, errors included.
func assertSameYAML(t *testing.T, what string, obj map[string]any) {
	t.Helper()
	want, wantErr := yaml.Marshal(obj)
	got, gotErr := AppendYAML([]byte("prefix\n"), obj)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("%s: error %v, want %v", what, gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	if !bytes.HasPrefix(got, []byte("prefix\n")) {
		t.Fatalf("%s: AppendYAML did not append: %q", what, got)
	}
	if got := got[len("prefix\n"):]; !bytes.Equal(got, want) {
		t.Errorf("%s: AppendYAML differs from yaml.Marshal\n got: %q\nwant: %q", what, got, want)
	}
}

// trickyScalars are strings that YAML reads as something else, needs to
// quote, escape, fold or write as a block.
var trickyScalars = []string{
	"", " ", "  ", "a", "web", "ghcr.io/acme/web:1.0", "100m", "64Mi", "1Gi", "0.5",
	"true", "false", "True", "FALSE", "yes", "no", "Yes", "NO", "on", "off", "On", "OFF", "y", "n", "Y", "N",
	"null", "Null", "NULL", "~", "nil", "none",
	"0", "1", "-1", "+1", "007", "0x1F", "0o17", "0b101", "-0b101", "0b2", "1_000", "1__0", "1e3", "1E3", "1e+3", "-1.5e-3",
	".5", "5.", ".", "..", "...", "---", "--- a", "...a", "-", "--", "- a", "-a", "-.inf", ".inf", ".NaN", ".nan", "+.Inf", "NaN", "Infinity", "inf",
	"9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616", "1e400", "-0",
	"1:20", "1:20:30.5", "-1:61", "12:30", "190:20:30", "1_0:2_0",
	"2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10", "2001-12-14T21:59:43Z", "2001-1-2", "1999-99-99", "20011-12-14",
	"<<", "=", "!", "!!str", "&anchor", "*alias", "|", ">", "|-", "'", "\"", "%", "@", "`", "#", "# comment", "a # b", "a#b", "a: b", "a:b", "a:", ":a", ": a", "?", "? a", "?a",
	"{", "}", "[", "]", ",", "a,b", "[a]", "{a: b}", "a, b", "&", "*", "a&b", "a*b", "a!b", "a|b", "a>b", "a'b", "a\"b", "a%b", "a@b", "a`b",
	"a\\b", "\\", "C:\\path", "\t", "a\tb", "\ta", "a\t", " a", "a ", " a ", "a  b", "a \n b",
	"\n", "\n\n", "a\n", "a\nb", "a\nb\n", "a\n\n", "\na", " \na", "a \nb", "a\n b", "a\r\nb", "a\rb", "\r", "a\u0085b", "a\u2028b", "a\u2029b",
	"\x00", "a\x01b", "\x1b[0m", "\x07\x08\x0b\x0c",
	"é", "日本語", "ünïcödé key", "emoji 🚀", "\u00a0", "a\u00a0b", "\ufeff", "\ufeffabc", "a\ufeffb", "\U0001F600", "\u200b", "\ue000", "\ufffd", "\ud7ff",
	"#!/bin/sh\necho hello\n", "line one\nline two\n\n", "  indented\nfirst\n", "trailing space \nnext", "\ttab first\nx",
	strings.Repeat("word ", 40), strings.Repeat("word ", 40) + "end", strings.Repeat("x", 200), strings.Repeat("a b", 60),
	"this is a rather long sentence that goes past eighty columns so that the emitter folds it at a space: yes",
	"\"quoted\" long string that must be double quoted because it starts with a quote and runs past eighty columns, really",
	"'single' long string that must be quoted because it starts with an apostrophe and runs past the eighty columns",
	"tab\tin a long string that runs past the eighty columns of the emitter, which then folds it somewhere  here",
	"double  spaces  in  a  long  string  that  runs  past  the  eighty  columns  of  the  emitter  folding  it",
	strings.Repeat("é ", 50), strings.Repeat("日本 ", 40),
	"--port=8080", "--log-level=info", "http://example.com/a?b=c&d=e#f", "key=value", "$(VAR)", "${VAR}", "{{ .Values }}",
	"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
}

func TestAppendYAMLScalars(t *testing.T) {
	for _, s := range trickyScalars {
		for _, depth := range []int{0, 1, 5} {
			assertSameYAML(t, fmt.Sprintf("value %q at depth %d", s, depth), nest(depth, map[string]any{"k": s}))
			assertSameYAML(t, fmt.Sprintf("key %q at depth %d", s, depth), nest(depth, map[string]any{s: "v"}))
			assertSameYAML(t, fmt.Sprintf("list item %q at depth %d", s, depth), nest(depth, map[string]any{"l": []any{s, []any{s}, map[string]any{s: s}}}))
		}
		assertSameYAML(t, fmt.Sprintf("long key %q", s), map[string]any{strings.Repeat("k", 130) + s: s})
	}
}

// nest puts v depth mappings deep, alternating with lists.
func nest(depth int, v map[string]any) map[string]any {
	for i := 0; i < depth; i++ {
		if i%2 == 0 {
			v = map[string]any{"nested": v}
		} else {
			v = map[string]any{"list": []any{v, "x"}}
		}
	}
	return v
}

func TestAppendYAMLValues(t *testing.T) {
	values := []any{
		nil, true, false,
		int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), 42, int32(-7), uint64(math.MaxUint64), uint32(7),
		0.0, math.Copysign(0, -1), 1.0, -1.5, 0.1, 1e-7, 1e-6, 123456789.0, 1e20, 1e21, 1.5e300, 5e-324, math.MaxFloat64,
		float64(1 << 53), float64(1<<53) + 2, 9.223372036854776e18, 1.8446744073709552e19, 3.4028235e38,
		float32(0.1), float32(1e-7), float32(16777216), float32(3.4028235e38),
		math.NaN(), math.Inf(1), math.Inf(-1), // JSON refuses them
		map[string]any{}, []any{}, []any{[]any{}}, []any{map[string]any{}}, map[string]any{"a": map[string]any{}},
		[]any{[]any{"a", "b"}, []any{[]any{"c"}}}, []any{map[string]any{"a": 1, "b": []any{2, 3}}},
		map[string]any{"a": []any{map[string]any{"b": []any{map[string]any{}}}}},
		[]string{"typed", "slice"}, map[string]string{"typed": "map"}, struct{ A int }{1}, // not on the fast path
		"invalid \xff utf-8", "\x7f", "a\u0080b", "\u009f", "\ufffe", "\uffff", // JSON writes them; go-yaml refuses some
	}
	for _, v := range values {
		for _, depth := range []int{0, 3} {
			assertSameYAML(t, fmt.Sprintf("%T %v", v, v), nest(depth, map[string]any{"v": v, "list": []any{v}}))
		}
	}
	assertSameYAML(t, "key with invalid UTF-8", map[string]any{"a\xff": 1, "a\xfe": 2})
	assertSameYAML(t, "empty object", map[string]any{})
	assertSameYAML(t, "nil object", nil)
}

func TestAppendYAMLKeyOrder(t *testing.T) {
	keys := []string{"a", "b", "A", "B", "a1", "a2", "a10", "a01", "a001", "a0", "a00", "1", "2", "10", "01", "_", "-", ".", "$", "~", "z", "Z", "é", "日", "a-b", "a.b", "a_b", "ab", "a b", "a/b",
		"x9y", "x10y", "x09y", "image", "imagePullPolicy", "apiVersion", "kind", "metadata", "spec", "status", "v1", "v2", "v10", "٣", "a٣", "a3", "Ⅻ", "ß"}
	m := map[string]any{}
	for i, k := range keys {
		m[k] = i
	}
	for range 10 { // go-yaml sorts in the map's random order
		assertSameYAML(t, "key order", m)
	}
}

// TestAppendYAMLKeyCycle: go-yaml's key order has cycles (v1beta1 < v2 <
// v10 < v1beta1), so its output depends on the map's random order.
// AppendYAML writes one of go-yaml's outputs, always the same.
func TestAppendYAMLKeyCycle(t *testing.T) {
	m := map[string]any{"v1": 1, "v1beta1": 2, "v2": 3, "v10": 4}
	seen := map[string]bool{}
	for range 200 {
		y, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		seen[string(y)] = true
	}
	first, err := AppendYAML(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if !seen[string(first)] {
		t.Errorf("AppendYAML wrote %q, not one of go-yaml's %v", first, seen)
	}
	for range 20 {
		if got, _ := AppendYAML(nil, m); !bytes.Equal(got, first) {
			t.Fatalf("AppendYAML wrote %q, then %q", first, got)
		}
	}
}

func TestAppendYAMLFallsBack(t *testing.T) {
	// A type the fast path does not write goes through yaml.Marshal,
	// whose JSON step knows it.
	got, err := AppendYAML(nil, map[string]any{"s": struct {
		A string `json:"a"`
	}{"x"}})
	if err != nil || string(got) != "s:\n  a: x\n" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := AppendYAML(nil, map[string]any{"f": math.NaN()}); err == nil {
		t.Error("NaN: no error")
	}
}

// TestAppendYAMLRandom compares AppendYAML with yaml.Marshal on random
// objects made of the tricky scalars and random text.
func TestAppendYAMLRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		obj, _ := randomValue(r, 0).(map[string]any)
		if obj == nil {
			obj = map[string]any{"root": randomValue(r, 1)}
		}
		assertSameYAML(t, fmt.Sprintf("random object %d", i), obj)
		if t.Failed() {
			return
		}
	}
}

func randomValue(r *rand.Rand, depth int) any {
	k := r.IntN(12)
	if depth == 0 {
		k = 0
	}
	if depth > 6 {
		k = 4 + r.IntN(8)
	}
	switch k {
	case 0, 1, 2:
		m := map[string]any{}
		for i := r.IntN(6); i >= 0; i-- {
			k := randomString(r)
			if _, dup := m[k]; !dup && !orderedKeys(append(slices.Collect(maps.Keys(m)), k)) {
				continue
			}
			m[k] = randomValue(r, depth+1)
		}
		if r.IntN(10) == 0 {
			return map[string]any{}
		}
		return m
	case 3:
		var l []any
		for i := r.IntN(4); i >= 0; i-- {
			l = append(l, randomValue(r, depth+1))
		}
		if r.IntN(10) == 0 {
			return []any{}
		}
		return l
	case 4:
		return r.Int64N(1<<40) - 1<<39
	case 5:
		return []any{r.Float64() * math.Pow(10, float64(r.IntN(50)-25)), float64(r.IntN(1000)), nil, r.IntN(2) == 0}[r.IntN(4)]
	default:
		return randomString(r)
	}
}

// orderedKeys tells whether go-yaml's order of keys is a total order on
// them. Where it is not (v1beta1 < v2 < v10 < v1beta1, or numbers past
// int64 that overflow), go-yaml's output depends on the map's random
// order, and cannot be compared.
func orderedKeys(keys []string) bool {
	for _, a := range keys {
		for _, b := range keys {
			if a != b && keyLess(a, b) == keyLess(b, a) {
				return false
			}
			for _, c := range keys {
				if keyLess(a, b) && keyLess(b, c) && !keyLess(a, c) {
					return false
				}
			}
		}
	}
	return true
}

func randomString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return trickyScalars[r.IntN(len(trickyScalars))]
	}
	const alphabet = "abcxyzABC0123456789 -_.:#,?'\"\\/!&*|>%@`{}[]=~+\t\nétü日🚀\u0085\u2028\u00a0"
	runes := []rune(alphabet)
	n := r.IntN(120)
	var b strings.Builder
	for i := 0; i < n; i++ {
		if r.IntN(4) == 0 {
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}

// TestAppendYAMLRepositoryFiles writes every YAML and JSON document of the
// repository (examples, testdata, golden files) both ways.
func TestAppendYAMLRepositoryFiles(t *testing.T) {
	root := filepath.Join("..", "..")
	docs := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// The alias-* files of testdata/bad expand to gigabytes, on purpose.
		if strings.Contains(d.Name(), "alias-") {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".cache") {
			return filepath.SkipDir
		}
		if d.IsDir() || !manifestFile.MatchString(p) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, obj := range documents(data) {
			assertSameYAML(t, fmt.Sprintf("%s document %d", p, i+1), obj)
			docs++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if docs < 50 {
		t.Errorf("only %d documents found: is the repository there?", docs)
	}
}

var manifestFile = regexp.MustCompile(`\.(ya?ml|json)$`)

// documents parses the mappings of a YAML or JSON stream the way render
// reads manifests (integers as int64); documents that do not parse are
// left out.
func documents(data []byte) []map[string]any {
	var out []map[string]any
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if err != nil {
			return out
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			continue
		}
		var v any
		if utiljson.Unmarshal(j, &v) != nil {
			continue
		}
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
}

func FuzzAppendYAML(f *testing.F) {
	for _, s := range trickyScalars {
		f.Add(s, s, 1.5, int64(1))
	}
	f.Fuzz(func(t *testing.T, key, value string, fl float64, i int64) {
		obj := map[string]any{
			key:   value,
			"f":   fl,
			"i":   i,
			"l":   []any{value, map[string]any{key: value, "x": []any{value}}},
			"n":   map[string]any{"deeper": map[string]any{value: key}},
			value: []any{[]any{key}},
		}
		if !orderedKeys(slices.Collect(maps.Keys(obj))) || !orderedKeys([]string{key, value, "x"}) {
			t.Skip("go-yaml's output for these keys depends on the map's order")
		}
		assertSameYAML(t, fmt.Sprintf("key %q value %q float %v", key, value, fl), obj)
	})
}
