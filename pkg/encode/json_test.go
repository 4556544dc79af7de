package encode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// assertSameJSON checks that AppendJSON writes obj exactly as
// encoding/json.Marshal does, errors included.
func assertSameJSON(t *testing.T, what string, obj map[string]any) {
	t.Helper()
	want, wantErr := json.Marshal(obj)
	got, gotErr := AppendJSON([]byte("prefix"), obj)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("%s: error %v, want %v", what, gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
		t.Errorf("%s: AppendJSON differs from json.Marshal\n got: %q\nwant: %q", what, got, want)
	}
}

func TestAppendJSON(t *testing.T) {
	for _, s := range append(trickyScalars, "<script>&amp;</script>", "\u2028\u2029", "a\xffb", "\xed\xa0\x80", "\x7f", "\u0080") {
		assertSameJSON(t, fmt.Sprintf("%q", s), map[string]any{s: s, "l": []any{s, map[string]any{s: []any{}}}})
	}
	for _, v := range []any{nil, true, false, int64(-1), 42, int32(7), uint64(1 << 63), uint32(9), 0.0, -0.5, 1e-7, 1e21, 123456789.0, float32(0.1), float32(1e-7),
		[]any(nil), map[string]any(nil), []any{}, map[string]any{}, []string{"x"}, struct{ A int }{1}, math.NaN(), math.Inf(-1)} {
		assertSameJSON(t, fmt.Sprintf("%T %v", v, v), map[string]any{"v": v, "l": []any{v}})
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		obj, _ := randomValue(r, 0).(map[string]any)
		assertSameJSON(t, fmt.Sprintf("random object %d", i), obj)
	}
	var many = map[string]any{}
	for i := 0; i < 40; i++ {
		many[strings.Repeat("k", i%7)+fmt.Sprint(i)] = i
	}
	assertSameJSON(t, "many keys", many)
}
