package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSubstitute(t *testing.T) {
	vars := map[string]string{"name": "web", "replicas": "4", "empty": "", "A_1": "x"}
	tests := []struct {
		in, want, wantErr string
	}{
		{"plain text", "plain text", ""},
		{"${name}", "web", ""},
		{"image: ${name}:${replicas}", "image: web:4", ""},
		{"${A_1}${name}", "xweb", ""},
		{"${missing:=fallback}", "fallback", ""},
		{"${missing:=}", "", ""},
		{"${name:=fallback}", "web", ""},
		{"${empty:=fallback}", "", ""}, // defined, even if empty
		{"${missing:=a b:c}", "a b:c", ""},
		{"$${name}", "${name}", ""},
		{"a $${name} b ${name}", "a ${name} b web", ""},
		{"${name}$${name}", "web${name}", ""},
		{"$name and $ alone", "$name and $ alone", ""},
		{"cost: $5", "cost: $5", ""},
		{"${missing}", "", "undefined variable ${missing}"},
		{"x ${name", "", "unterminated variable reference"},
		{"${}", "", "invalid variable reference ${}"},
		{"${1abc}", "", "invalid variable reference ${1abc}"},
		{"${a-b}", "", "invalid variable reference ${a-b}"},
		{"${PORT:-8080}", "", "invalid variable reference ${PORT:-8080}"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Substitute(tt.in, vars)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q…", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	_, err := Substitute("${nope}", vars)
	var undef *UndefinedError
	if !errors.As(err, &undef) || undef.Name != "nope" {
		t.Errorf("want an UndefinedError for nope, got %v", err)
	}
}

func TestVariables(t *testing.T) {
	c := Cluster{Name: "prod-eu", Group: "production", Context: "ctx", Fleet: "acme", Attributes: map[string]any{
		"s": "text", "i": 4, "f": 1.5, "b": true, "n": nil, "m": map[string]any{"k": "v"}, "l": []any{1, "a"},
		"FLEET_CLUSTER_NAME": "spoofed",
	}}
	want := map[string]string{"s": "text", "i": "4", "f": "1.5", "b": "true", "n": "", "m": `{"k":"v"}`, "l": `[1,"a"]`,
		"FLEET_CLUSTER_NAME": "prod-eu", "FLEET_CLUSTER_GROUP": "production", "FLEET_CLUSTER_CONTEXT": "ctx", "FLEET_NAME": "acme"}
	got := VariablesOf(&c).Text
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d variables, want %d", len(got), len(want))
	}
}

func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{"${a}", "$${a}", "${a:=b}", "${", "$$$${a}}", "${a:=${b}}", "x}${y"} {
		f.Add(s)
	}
	vars := map[string]string{"a": "1", "b": "${a}"}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Substitute(in, vars)
		if err == nil && !strings.Contains(in, "${") && out != in {
			t.Errorf("text without ${ changed: %q → %q", in, out)
		}
	})
}

func TestExpandTypes(t *testing.T) {
	vs := VariablesOf(&Cluster{Name: "c", Attributes: map[string]any{
		"replicas": 4, "quoted": "4", "on": true, "ratio": 0.5, "obj": map[string]any{"k": 1}, "list": []any{"a"},
	}})
	in := map[string]any{
		"replicas": "${replicas}", "quoted": "${quoted}", "on": "${on}", "ratio": "${ratio}",
		"obj": "${obj}", "list": "${list}", "deflt": "${n:=3}", "defltText": "${n:=three}", "defltBool": "${n:=false}",
		"mixed": "r${replicas}", "escaped": "$${replicas}", "${FLEET_CLUSTER_NAME}-key": "v",
		"nested": []any{map[string]any{"x": "${replicas}"}},
	}
	got, err := vs.expand(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"replicas": int64(4), "quoted": "4", "on": true, "ratio": 0.5,
		"obj": map[string]any{"k": int64(1)}, "list": []any{"a"}, "deflt": int64(3), "defltText": "three", "defltBool": false,
		"mixed": "r4", "escaped": "${replicas}", "c-key": "v",
		"nested": []any{map[string]any{"x": int64(4)}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("expand (-want +got):\n%s", diff)
	}
	if in["replicas"] != "${replicas}" {
		t.Error("expand changed its input")
	}
}
