package roster

import (
	"context"
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// Listing is what "kubectl fleet clusters" shows: the selected clusters
// of a fleet, and with Check what probing each one found.
type Listing struct {
	// Flags are the kubeconfig flags the clusters' contexts are read
	// with.
	Flags    *genericclioptions.ConfigFlags
	Fleet    *fleet.Fleet
	Clusters []*fleet.Cluster
	// Sources materializes the clusters' kubeconfigFrom: only Check reads
	// them (runs their commands); a listing names the source instead.
	Sources *kube.KubeconfigSources
	// Output is "", json or yaml (Write).
	Output string
	// Check probes every cluster, Parallel at once; Pin records the pins
	// of those that passed in the fleet file (only printed with DryRun).
	Check, Pin, DryRun bool
	Parallel           int
}

// Show prints the listing on out (Pin's notes on errOut). A missing
// context is an error: after the listing, or with Check before any
// request; so is a cluster that fails the check.
func (l Listing) Show(ctx context.Context, out, errOut io.Writer) error {
	if l.Check {
		if err := l.Sources.Resolve(ctx, l.Fleet, l.Clusters); err != nil {
			return err
		}
	}
	rows, kcs, read := List(l.Flags, l.Fleet, l.Clusters)
	if !l.Check {
		if err := Write(out, rows, l.Output, false); err != nil {
			return err
		}
		return kube.CheckContexts(l.Flags, kcs, l.Fleet, read)
	}
	// A missing context stops the check before any request.
	if err := kube.CheckContexts(l.Flags, kcs, l.Fleet, l.Clusters); err != nil {
		return err
	}
	pins, failed := Check(ctx, l.Flags, l.Fleet, l.Clusters, rows, l.Parallel)
	if err := Write(out, rows, l.Output, true); err != nil {
		return err
	}
	if l.Pin && len(pins) > 0 {
		if err := Pin(out, errOut, l.Fleet, pins, l.DryRun); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d clusters failed the check", failed, len(l.Clusters))
	}
	return nil
}
