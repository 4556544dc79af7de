package render

import (
	"reflect"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// sharedRaws are a source's objects as read, before any cluster's
// variables: a Deployment whose image is a variable and whose strategy is
// not, a ConfigMap with one value of each, and a ConfigMap without any,
// whose args-like values kustomize left numbers.
func sharedRaws() []rawObject {
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{
			"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": int64(1)}},
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "web:${tag}", "args": []any{int64(8080), "--v"}, "resources": map[string]any{"limits": map[string]any{"cpu": "1"}}},
			}}},
		}}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "conf"}, "data": map[string]any{"region": "${region}", "static": "x"}}
	plain := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "plain"}, "data": map[string]any{"k": "v"}}
	return []rawObject{
		{obj: &unstructured.Unstructured{Object: dep}, vars: true},
		{obj: &unstructured.Unstructured{Object: cm}, vars: true},
		{obj: &unstructured.Unstructured{Object: plain}},
	}
}

func same(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestRendersShareWhatVariablesDoNotChange(t *testing.T) {
	raws := sharedRaws()
	before := make([]map[string]any, len(raws))
	for i, r := range raws {
		before[i] = runtime.DeepCopyJSON(r.obj.Object)
	}
	render := func(tag, region string) []*unstructured.Unstructured {
		objs, err := substituteAll(raws, true, VariablesOf(&Cluster{Name: region, Attributes: map[string]any{"tag": tag, "region": region}}), DefaultMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	// Many clusters at once, as a fleet renders (the race detector
	// watches the shared maps).
	var wg sync.WaitGroup
	renders := make([][]*unstructured.Unstructured, 8)
	for i := range renders {
		wg.Go(func() { renders[i] = render("v"+string(rune('1'+i)), "r"+string(rune('a'+i))) })
	}
	wg.Wait()
	a, b := renders[0], renders[1]

	for i, r := range raws {
		if !reflect.DeepEqual(r.obj.Object, before[i]) {
			t.Errorf("raw %d changed by the renders:\n%v\nwas\n%v", i, r.obj.Object, before[i])
		}
	}
	image, _, _ := unstructured.NestedSlice(a[0].Object, "spec", "template", "spec", "containers")
	c := image[0].(map[string]any)
	if c["image"] != "web:v1" || !reflect.DeepEqual(c["args"], []any{"8080", "--v"}) {
		t.Errorf("cluster a's container %v: want image web:v1 and args as text", c)
	}
	if a[1].Object["data"].(map[string]any)["region"] != "ra" || b[1].Object["data"].(map[string]any)["region"] != "rb" {
		t.Errorf("ConfigMaps' data %v and %v: want each cluster's region", a[1].Object["data"], b[1].Object["data"])
	}
	for _, tt := range []struct {
		what   string
		ka, kb any
		shared bool
	}{
		{"the Deployment's strategy, which holds no variable", a[0].Object["spec"].(map[string]any)["strategy"], b[0].Object["spec"].(map[string]any)["strategy"], true},
		{"the plain ConfigMap's data", a[2].Object["data"], b[2].Object["data"], true},
		{"the Deployment's spec, which holds a variable", a[0].Object["spec"], b[0].Object["spec"], false},
		{"the ConfigMap's data, which holds a variable", a[1].Object["data"], b[1].Object["data"], false},
		{"a top level", a[2].Object, b[2].Object, false},
		{"metadata, which readers label on their copy", a[2].Object["metadata"], b[2].Object["metadata"], false},
		{"labels without a variable (readers label a copy: object.CopyMeta)", a[0].Object["metadata"].(map[string]any)["labels"], b[0].Object["metadata"].(map[string]any)["labels"], true},
	} {
		if got := same(tt.ka, tt.kb); got != tt.shared {
			t.Errorf("%s: shared %v, want %v", tt.what, got, tt.shared)
		}
	}
	if m, _, _ := unstructured.NestedMap(a[0].Object, "metadata"); same(m, raws[0].obj.Object["metadata"]) {
		t.Error("a render's metadata is the raw's")
	}
}
