package object

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func deployment(replicas int64, image string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "annotations": map[string]any{"a/b": "1"}},
		"spec": map[string]any{
			"replicas": replicas,
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": image},
				map[string]any{"name": "proxy", "image": "envoy"},
			}}},
		},
	}}
}

func TestParsePointer(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "/spec/replicas", want: []string{"spec", "replicas"}},
		{in: "/metadata/annotations/a~1b", want: []string{"metadata", "annotations", "a/b"}},
		{in: "/metadata/labels/x~0y", want: []string{"metadata", "labels", "x~y"}},
		{in: "/spec/containers/0/image", want: []string{"spec", "containers", "0", "image"}},
		{in: "", err: true},
		{in: "spec/replicas", err: true},
		{in: "/spec/a~2", err: true},
		{in: "/spec/a~", err: true},
		{in: "/kind", err: true},
		{in: "/metadata", err: true},
		{in: "/metadata/name", err: true},
		{in: "/metadata/namespace", err: true},
	} {
		got, err := ParsePointer(tt.in)
		if (err != nil) != tt.err || (!tt.err && !cmp.Equal(got, tt.want)) {
			t.Errorf("ParsePointer(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestIgnoreRuleMatches(t *testing.T) {
	d := deployment(3, "web:1")
	for _, tt := range []struct {
		rule IgnoreRule
		want bool
	}{
		{IgnoreRule{Kind: "Deployment"}, true},
		{IgnoreRule{Group: "apps", Kind: "Deployment", Name: "web", Namespace: "shop"}, true},
		{IgnoreRule{Kind: "*", Namespace: "shop"}, true},
		{IgnoreRule{Group: "*", Kind: "Deployment"}, true},
		{IgnoreRule{Group: "extensions", Kind: "Deployment"}, false},
		{IgnoreRule{Kind: "StatefulSet"}, false},
		{IgnoreRule{Kind: "Deployment", Name: "api"}, false},
		{IgnoreRule{Kind: "Deployment", Namespace: "other"}, false},
	} {
		if got := tt.rule.Matches(d); got != tt.want {
			t.Errorf("%+v matches: %v, want %v", tt.rule, got, tt.want)
		}
	}
}

func TestWithoutIgnored(t *testing.T) {
	rules := []IgnoreRule{
		{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas", "/metadata/annotations/a~1b", "/spec/template/spec/containers/1", "/spec/missing/deep"}},
		{Kind: "ConfigMap", JSONPointers: []string{"/data"}},
	}
	d := deployment(3, "web:1")
	got := WithoutIgnored(d, rules)
	want := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "annotations": map[string]any{}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "web", "image": "web:1"},
		}}}},
	}
	if diff := cmp.Diff(want, got.Object); diff != "" {
		t.Errorf("WithoutIgnored (-want +got):\n%s", diff)
	}
	if d.Object["spec"].(map[string]any)["replicas"] != int64(3) {
		t.Error("WithoutIgnored changed its argument")
	}
	if WithoutIgnored(d, rules[1:]) != d {
		t.Error("an object no rule covers is copied")
	}
}

func TestKeepLive(t *testing.T) {
	rules := []IgnoreRule{{Kind: "Deployment", JSONPointers: []string{"/spec/replicas", "/spec/template/spec/containers/0/image", "/metadata/labels/team"}}}
	rendered, live := deployment(2, "web:2"), deployment(7, "web:1")
	rendered.SetLabels(map[string]string{"team": "a"}) // live has no labels: not applied
	KeepLive(rendered, live, rules)
	if r, _, _ := unstructured.NestedInt64(rendered.Object, "spec", "replicas"); r != 7 {
		t.Errorf("replicas %d, want the live 7", r)
	}
	if c, _, _ := unstructured.NestedSlice(rendered.Object, "spec", "template", "spec", "containers"); c[0].(map[string]any)["image"] != "web:1" {
		t.Errorf("image %v, want the live web:1", c[0])
	}
	if _, ok := rendered.GetLabels()["team"]; ok {
		t.Error("a field the live object lacks is still applied")
	}
	// A new object gets the rendered values.
	fresh := deployment(2, "web:2")
	KeepLive(fresh, nil, rules)
	if r, _, _ := unstructured.NestedInt64(fresh.Object, "spec", "replicas"); r != 2 {
		t.Errorf("new object: replicas %d, want 2", r)
	}
	// The live value is a copy.
	live.Object["spec"].(map[string]any)["replicas"] = int64(9)
	if r, _, _ := unstructured.NestedInt64(rendered.Object, "spec", "replicas"); r != 7 {
		t.Error("KeepLive shares values with the live object")
	}
}

// An apply works on CopyMeta's copy of the render, which shares the
// render's fields: neither its metadata changes nor KeepLive reach the
// render (other clusters', later reads').
func TestCopyMetaLeavesTheRenderAlone(t *testing.T) {
	rules := []IgnoreRule{{Kind: "Deployment", JSONPointers: []string{"/spec/replicas", "/spec/template/spec/containers/0/image"}}}
	rendered := deployment(2, "web:2")
	rendered.SetLabels(map[string]string{"app": "web"})
	want := rendered.DeepCopy()
	c := CopyMeta(rendered)
	c.SetNamespace("prod")
	c.SetLabels(map[string]string{"app": "web", "applyset.kubernetes.io/part-of": "x"})
	KeepLive(c, deployment(7, "web:1"), rules)
	if diff := cmp.Diff(want.Object, rendered.Object); diff != "" {
		t.Errorf("the render changed (-want +got):\n%s", diff)
	}
	if r, _, _ := unstructured.NestedInt64(c.Object, "spec", "replicas"); r != 7 || c.GetNamespace() != "prod" {
		t.Errorf("the copy: replicas %d, namespace %q; want 7, prod", r, c.GetNamespace())
	}
}
