package cmd

import (
	"slices"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

func TestStartFirst(t *testing.T) {
	many := runner.Wave{Name: "production", Clusters: []string{"c1", "c2", "c3", "c4", "c5"}}
	limited := many
	limited.MaxParallel = 2
	for _, tt := range []struct {
		name     string
		w        runner.Wave
		parallel int
		want     []string
	}{
		{"fewer clusters than --parallel: all", many, 10, many.Clusters},
		{"more: the first --parallel, in the rollout's order", many, 3, []string{"c1", "c2", "c3"}},
		{"the group's maxParallel lowers it", limited, 10, []string{"c1", "c2"}},
		{"--parallel lower than maxParallel", limited, 1, []string{"c1"}},
		{"--parallel 0 is one at a time", many, 0, []string{"c1"}},
	} {
		if got := startFirst(tt.w, tt.parallel); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
