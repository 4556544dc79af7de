package render

import (
	"slices"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// TestUnknownValues: a values key the chart does not have is a warning,
// with the key it is closest to; a map the chart leaves open, a
// subchart's values and global are not; a chart with a schema is left to
// Helm's own check.
func TestUnknownValues(t *testing.T) {
	sub := &chart.Chart{Metadata: &chart.Metadata{Name: "redis"}}
	ch := &chart.Chart{
		Metadata: &chart.Metadata{Name: "shop", Dependencies: []*chart.Dependency{{Name: "redis", Alias: "cache"}}},
		Values:   map[string]any{"replicaCount": 1, "image": map[string]any{"repository": "shop", "tag": "1"}, "podAnnotations": map[string]any{}},
	}
	ch.SetDependencies(sub)
	given := map[string]any{
		"replicaCont":    3,
		"image":          map[string]any{"tagg": "2", "repository": "mine"},
		"podAnnotations": map[string]any{"a": "b"},
		"global":         map[string]any{"x": 1},
		"redis":          map[string]any{"y": 1},
		"cache":          map[string]any{"z": 1},
		"zzz":            true,
	}
	want := []string{
		"values key image.tagg is not in chart shop's values.yaml, and the chart may ignore it: did you mean image.tag?",
		"values key replicaCont is not in chart shop's values.yaml, and the chart may ignore it: did you mean replicaCount?",
		"values key zzz is not in chart shop's values.yaml, and the chart may ignore it",
	}
	if got := unknownValues(ch, given); !slices.Equal(got, want) {
		t.Errorf("unknownValues =\n%q\nwant\n%q", got, want)
	}
	ch.Schema = []byte(`{"type":"object"}`)
	if got := unknownValues(ch, given); got != nil {
		t.Errorf("with a schema: %q", got)
	}
}
