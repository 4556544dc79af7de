package status

import (
	"fmt"
	"io"
	"slices"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Report is one read of a fleet (Fleet.Read) as "kubectl fleet status"
// prints it.
type Report struct {
	// Set is what was read: the fleet, its selected clusters, the apps
	// rendered (none when the clusters' records were read).
	Set *rendered.Set
	// Clusters are what the read found of each cluster (ClustersOf).
	Clusters []Cluster
	// Results are the apps read, by cluster; Pauses the clusters' pauses.
	Results map[string][]App
	Pauses  map[string][]pause.Pause
	// Held says why the promotion rule would hold groups back (the
	// rollout's word); asked only when some app is deployed.
	Held func() []Hold
}

// NewReport is the report of what Fleet.Read returned for set.
func NewReport(set *rendered.Set, outcomes []runner.Outcome, results map[string][]App, pauses map[string][]pause.Pause) Report {
	return Report{Set: set, Clusters: ClustersOf(set.Fleet, outcomes, results), Results: results, Pauses: pauses}
}

// Hold is a group the promotion rule would not start now, a line of
// status -o json ("type": "promotion").
type Hold struct {
	Type  string `json:"type"`
	Group string `json:"group"`
	// Message says why: "production not started: staging-eu runs web
	// r8, not verified (failed: check smoke: exit status 1)".
	Message string `json:"message"`
}

// Text is the hold as status prints it under the matrix.
func (h Hold) Text() string { return "Promotion: " + h.Message }

// Print writes the report on p: with JSON a line per app (Lines), with
// verbose every object (WriteDetails), else the matrix (WriteMatrix; why
// clusters were not read goes to errOut); then the notes under it.
func (r Report) Print(p *output.Printer, errOut io.Writer, verbose bool) error {
	switch {
	case p.JSON:
		for _, l := range Lines(r.Clusters) {
			p.Event(l)
		}
	case verbose:
		WriteDetails(p.Cluster, r.Clusters)
		p.Close()
	default:
		if err := WriteMatrix(p.Out, errOut, r.apps(), r.Clusters); err != nil {
			return err
		}
	}
	r.notes(p)
	p.Close()
	return nil
}

// apps are the apps rendered, in order: the matrix's first columns.
func (r Report) apps() []string {
	var apps []string
	for _, res := range r.Set.Results {
		if !slices.Contains(apps, res.App) {
			apps = append(apps, res.App)
		}
	}
	return apps
}

// notes says, under the status, the clusters' pauses, the version skew
// within groups and, once some app is deployed, why the promotion rule
// would hold groups back: lines, or JSON events.
func (r Report) notes(p *output.Printer) {
	pause.Print(p, r.Set.Clusters, r.Pauses)
	for _, s := range Skews(r.Clusters) {
		say(p, s, s.Text())
	}
	if r.Held == nil || !Deployed(r.Results) {
		return
	}
	for _, h := range r.Held() {
		say(p, h, h.Text())
	}
}

// say writes a note: its JSON event when p prints JSON, else its line.
func say(p *output.Printer, event any, line string) {
	if p.JSON {
		p.Event(event)
	} else {
		fmt.Fprintln(p.Out, line)
	}
}
