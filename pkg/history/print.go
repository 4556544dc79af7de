package history

import (
	"context"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Report is what Read read of the clusters, as "kubectl fleet history"
// prints it.
type Report struct {
	// Clusters are the selected clusters, in the fleet's order.
	Clusters []*fleet.Cluster
	Outcomes []runner.Outcome
	Entries  map[string][]Entry
	Pauses   map[string][]pause.Pause
}

// Print says on errOut each cluster that could not be read, then writes
// the revisions on p in format: "json" a JSON line each, then the
// pauses; "yaml" a list, without the pauses; else the table
// (WriteTable), then the pauses. It returns the command's exit: 130 when
// interrupted (ctx done), 1 when a cluster could not be read, else nil.
func (r Report) Print(ctx context.Context, p *output.Printer, errOut io.Writer, format string) error {
	var all []Entry
	failed := false
	for _, oc := range r.Outcomes {
		if oc.Err != nil {
			failed = true
			fmt.Fprintf(errOut, "error: %s: %v\n", oc.Cluster, oc.Err)
		}
		all = append(all, r.Entries[oc.Cluster]...)
	}
	if err := r.write(p, errOut, format, all); err != nil {
		return err
	}
	switch {
	case ctx.Err() != nil:
		return &exit.Error{Code: exit.Interrupted}
	case failed:
		return &exit.Error{Code: exit.Failed}
	}
	return nil
}

// write writes the revisions all on p in format, and the pauses but in
// YAML.
func (r Report) write(p *output.Printer, errOut io.Writer, format string, all []Entry) error {
	switch format {
	case "json":
		for _, e := range all {
			p.Event(e)
		}
	case "yaml":
		b, err := yaml.Marshal(all)
		if err != nil {
			return err
		}
		_, err = p.Out.Write(b)
		return err
	default:
		if err := WriteTable(p.Out, errOut, all); err != nil {
			return err
		}
	}
	pause.Print(p, r.Clusters, r.Pauses)
	return nil
}
