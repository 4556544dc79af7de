package runner

import (
	"slices"
	"testing"
)

func TestAtOnce(t *testing.T) {
	many := Wave{Name: "production", Clusters: []string{"c1", "c2", "c3", "c4", "c5"}}
	limited := many
	limited.MaxParallel = 2
	for _, tt := range []struct {
		name     string
		w        Wave
		parallel int
		want     []string
	}{
		{"fewer clusters than --parallel: all", many, 10, many.Clusters},
		{"more: the first --parallel, in the rollout's order", many, 3, []string{"c1", "c2", "c3"}},
		{"the group's maxParallel lowers it", limited, 10, []string{"c1", "c2"}},
		{"--parallel lower than maxParallel", limited, 1, []string{"c1"}},
		{"--parallel 0 bounds nothing, as the rollout reads it", many, 0, many.Clusters},
	} {
		if got := tt.w.Clusters[:tt.w.AtOnce(tt.parallel)]; !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
