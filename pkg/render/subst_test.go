package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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

// TestSubstitutionErrorsSayWhere checks that errors name the field, and
// never quote a Secret's text.
func TestSubstitutionErrorsSayWhere(t *testing.T) {
	obj := func(kind string, data map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "x", "labels": map[string]any{"app.kubernetes.io/name": "${NOPE}"}}, "data": data}
	}
	tests := []struct {
		kind string
		data map[string]any
		want string
	}{
		{"ConfigMap", map[string]any{}, "undefined variable ${NOPE} in metadata.labels[app.kubernetes.io/name] (define"},
		{"ConfigMap", map[string]any{"list": []any{"ok", map[string]any{"k": "a ${bad var} b"}}}, "invalid variable reference ${bad var} in data.list[1].k: use ${name}"},
		{"ConfigMap", map[string]any{"s": "tail ${open"}, `unterminated variable reference "${open" in data.s`},
		{"Secret", map[string]any{"s": "hunter2 ${bad var} b"}, "invalid variable reference at byte 8 in data.s (a Secret's value is not shown): use ${name}"},
		{"SealedSecret", map[string]any{"s": "hunter2${open"}, "unterminated variable reference at byte 7 in data.s (a Secret's value is not shown)"},
	}
	for _, tt := range tests {
		o := obj(tt.kind, tt.data)
		if len(tt.data) > 0 {
			o["metadata"].(map[string]any)["labels"] = nil
		}
		_, err := substituteAll([]rawObject{{obj: &unstructured.Unstructured{Object: o}, vars: true}}, true, VariablesOf(&Cluster{}), DefaultMaxBytes)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want …%s…", tt.kind, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error quotes the value: %v", tt.kind, err)
		}
	}
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

// An object with several fields that fail is said the same way every
// run: its first field, in order, that fails.
func TestSubstituteSaysTheSameFieldEveryRun(t *testing.T) {
	obj := map[string]any{"data": map[string]any{"zeta": "${MISSING_Z}", "alpha": "${MISSING_A}", "mid": "${MISSING_M}", "ok": "fine"}}
	var first string
	for i := range 30 {
		_, err := (Vars{Text: map[string]string{}, Typed: map[string]any{}}).expand(obj)
		if err == nil {
			t.Fatal("no error")
		}
		if i == 0 {
			first = err.Error()
			if !strings.Contains(first, "MISSING_A") {
				t.Errorf("not the first field in order: %v", err)
			}
		} else if err.Error() != first {
			t.Fatalf("run %d said %q, run 1 %q", i+1, err, first)
		}
	}
}
