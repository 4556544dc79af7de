package cmd

import (
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output/progress"
)

// manyClusters is how many clusters get a line each on stderr
// (progress.Many); with more, output is compact.
func (g *GlobalOptions) manyClusters() int { return progress.Many(g.ErrOut) }

// newProgress starts the live display of clusters on stderr; json output
// gets none.
func (g *GlobalOptions) newProgress(clusters []*fleet.Cluster, json bool) *progress.Display {
	if json {
		return nil
	}
	names, byName := fleet.Index(clusters)
	return progress.New(g.ErrOut, g.prefixer(clusters), names, func(c string) string { return byName[c].Group })
}
