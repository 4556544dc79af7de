package mask

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func set(values ...any) *Set {
	var s Set
	for _, v := range values {
		s.Add(v)
	}
	return &s
}

// TestObject: a decrypted value is masked in any kind and any field:
// whole however short, inside a string from MinText on, as a number,
// in its base64; booleans and one-character values never.
func TestObject(t *testing.T) {
	s := set("hunter2-pw", "42x", int64(73519), 84710293847561.0, true, "a")
	obj := map[string]any{
		"kind": "ConfigMap",
		"data": map[string]any{
			"DB_PASSWORD": "hunter2-pw",
			"DSN":         "postgres://app:hunter2-pw@db:5432",
			"PIN":         "73519",
			"SHORT":       "42x",
			"NOT_SHORT":   "42xy",
			"B64":         base64.StdEncoding.EncodeToString([]byte("hunter2-pw")),
			"ENABLED":     "true",
			"ONE":         "a",
		},
		"metadata": map[string]any{"annotations": map[string]any{"token": "token 84710293847561 rejected"}},
		"spec":     map[string]any{"replicas": int64(73519), "list": []any{"x", "hunter2-pw"}, "on": true},
	}
	orig, _ := json.Marshal(obj)
	got, changed := s.Object(obj)
	if !changed {
		t.Fatal("nothing masked")
	}
	want := map[string]any{
		"kind": "ConfigMap",
		"data": map[string]any{
			"DB_PASSWORD": "***",
			"DSN":         "postgres://app:***@db:5432",
			"PIN":         "***",
			"SHORT":       "***",
			"NOT_SHORT":   "42xy",
			"B64":         "***",
			"ENABLED":     "true",
			"ONE":         "a",
		},
		"metadata": map[string]any{"annotations": map[string]any{"token": "token *** rejected"}},
		"spec":     map[string]any{"replicas": "***", "list": []any{"x", "***"}, "on": true},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if after, _ := json.Marshal(obj); !bytes.Equal(orig, after) {
		t.Errorf("the object given was changed:\n%s", after)
	}
	if _, changed := s.Object(map[string]any{"data": map[string]any{"a": "plain"}}); changed {
		t.Error("an object without a decrypted value was changed")
	}
}

// TestPair: a field masked on either side of a diff is masked on both,
// so that a rotated password's old value is not printed either.
func TestPair(t *testing.T) {
	s := set("new-password")
	live := map[string]any{"data": map[string]any{"PASSWORD": "old-password", "USER": "app"}}
	merged := map[string]any{"data": map[string]any{"PASSWORD": "new-password", "USER": "app", "EXTRA": "new-password"}}
	l, m := s.Pair(live, merged)
	wantL := map[string]any{"data": map[string]any{"PASSWORD": "*** (before)", "USER": "app"}}
	wantM := map[string]any{"data": map[string]any{"PASSWORD": "*** (after)", "USER": "app", "EXTRA": "***"}}
	if d := cmp.Diff(wantL, l); d != "" {
		t.Errorf("live (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantM, m); d != "" {
		t.Errorf("merged (-want +got):\n%s", d)
	}
	if _, m := s.Pair(nil, merged); m["data"].(map[string]any)["PASSWORD"] != "***" {
		t.Errorf("a created object: %v", m)
	}
	if l, _ := s.Pair(merged, nil); l["data"].(map[string]any)["PASSWORD"] != "***" {
		t.Errorf("a pruned object: %v", l)
	}
}

// TestStringAndWriter: free text masks values of MinText characters or
// more, in their plain, base64, JSON-quoted and line forms; a writer
// masks what passes it until Show turns it off.
func TestStringAndWriter(t *testing.T) {
	s := set("line one is long\nline two is long", "quote\"d-value", "73519", "42x")
	in := "a: line one is long; b: " + base64.StdEncoding.EncodeToString([]byte("73519")) + "; c: \"quote\\\"d-value\"; pin 73519; 42x stays"
	want := "a: ***; b: ***; c: \"***\"; pin ***; 42x stays"
	if got := s.String(in); got != want {
		t.Errorf("String = %q\nwant     %q", got, want)
	}
	// A short value between letters and digits is part of something
	// else: a digest, a UID.
	if in, got := "sha256:ab73519cd uid 73519-x", s.String("sha256:ab73519cd uid 73519-x"); got != "sha256:ab73519cd uid ***-x" {
		t.Errorf("String(%q) = %q", in, got)
	}
	var b bytes.Buffer
	w := s.Writer(&b)
	_, _ = w.Write([]byte("pin 73519\n"))
	Show(w)
	_, _ = w.Write([]byte("pin 73519\n"))
	if b.String() != "pin ***\npin 73519\n" {
		t.Errorf("written %q", b.String())
	}
	var none *Set
	if none.String("pin 73519") != "pin 73519" || !none.Empty() {
		t.Error("a nil set masks")
	}
}

// TestReplaceAlone: a short value is masked where it stands alone, at
// the text's ends and beside another, never inside a word.
func TestReplaceAlone(t *testing.T) {
	for in, want := range map[string]string{
		"0482":             "***",
		"0482 0482":        "*** ***",
		"0482,0482.":       "***,***.",
		"a0482 04822 0482": "a0482 04822 ***",
		"x-0482-y":         "x-***-y",
		"00482":            "00482",
		"":                 "",
	} {
		if got := replaceAlone(in, "0482"); got != want {
			t.Errorf("replaceAlone(%q) = %q, want %q", in, got, want)
		}
	}
	if got := replaceAlone("a-a-a-", "a-a-"); got != "***a-" && got != "a-***" {
		t.Errorf("overlapping: %q", got)
	}
}
