package pause

import (
	"fmt"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// Print says the pauses of clusters, in the clusters' order, on p: as
// status and history print them under their report, a JSON event each
// when p prints JSON, else a line each ("Paused: prod-eu paused 10m ago
// by alice: …").
func Print(p *output.Printer, clusters []*fleet.Cluster, pauses map[string][]Pause) {
	names, _ := fleet.Index(clusters)
	now := time.Now()
	for _, l := range Lines(names, pauses) {
		if p.JSON {
			p.Event(l)
		} else {
			fmt.Fprintln(p.Out, l.Text(now))
		}
	}
}
