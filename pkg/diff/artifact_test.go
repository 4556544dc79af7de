package diff

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
)

func TestPublished(t *testing.T) {
	cm := func(name, v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns"}, "data": map[string]any{"v": v}}}
	}
	published := []*unstructured.Unstructured{cm("same", "1"), cm("changed", "1"), cm("gone", "1")}
	render := []*unstructured.Unstructured{cm("same", "1"), cm("changed", "2"), cm("new", "1")}
	for _, tt := range []struct {
		name      string
		published []*unstructured.Unstructured
		skip      bool
		want      string
	}{
		{"against the tag's artifact", published, true, "configmap/changed change, configmap/new create, configmap/gone prune"},
		{"every object", published, false, "configmap/same unchanged, configmap/changed change, configmap/new create, configmap/gone prune"},
		{"no tag yet", nil, true, "configmap/same create, configmap/changed create, configmap/new create"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			diffs, err := Published(render, tt.published, Options{App: "web", Cluster: "edge-1", Context: 3, SkipUnchanged: tt.skip})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range diffs {
				got = append(got, d.Ref+" "+d.Action.Planned())
				if d.Action == change.Configured && !strings.Contains(d.Text, "-  v: \"1\"\n+  v: \"2\"") {
					t.Errorf("the change's text:\n%s", d.Text)
				}
				if d.Action != change.Unchanged && !strings.Contains(d.Text, "edge-1/web/ConfigMap/ns/") {
					t.Errorf("%s: the header names no cluster and app:\n%s", d.Ref, d.Text)
				}
			}
			if s := strings.Join(got, ", "); s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}
