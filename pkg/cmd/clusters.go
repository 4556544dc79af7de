package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/roster"
)

// ClustersOptions are the options of "kubectl fleet clusters".
type ClustersOptions struct {
	*GlobalOptions
	SelectOptions
	Output   string
	Check    bool
	Pin      bool
	DryRun   bool
	Parallel int
}

// NewCmdClusters returns the clusters command.
func NewCmdClusters(g *GlobalOptions) *cobra.Command {
	o := &ClustersOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"ls"},
		Short:   "List the selected clusters with their group, context and server",
		Long: `List the selected clusters of the fleet file: group, kubeconfig context, the
API server the context points at, and labels. Nothing is sent to any cluster.

A context missing from its kubeconfig is listed as such and makes the
command exit 1. A kubeconfigFrom (a secret in an environment variable or
printed by a command) is only read by --check; the listing names it
instead of the server.

--check probes every selected cluster in parallel: reachable or not (and
why), server version, the cluster's identity (the kube-system namespace UID),
and whether the fleet file's server/uid pins match. Each request is bounded
by --request-timeout (10s when it is not set).

--check --pin records the server and uid of every selected cluster that
passed the check into the fleet file (comments and order kept; indentation
becomes two spaces) and prints the change as a diff; --dry-run only prints
it. A cluster that fails the check is not pinned: fix or remove its old pin
by hand.

Exit codes:
  0  every cluster listed (with --check: reachable and matching its pins)
  1  a context is missing, or (--check) a cluster is unreachable or mismatched`,
		Example: `  kubectl fleet clusters
  kubectl fleet ls --group production -o json
  kubectl fleet clusters -l region=eu
  kubectl fleet clusters --check`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := refuseSet(cmd, "does not apply to clusters, which lists clusters, not objects", "namespace"); err != nil {
				return err
			}
			if err := refuseSet(cmd, "does not apply to clusters, which caches no discovery", "cache-dir"); err != nil {
				return err
			}
			if !o.Check {
				if err := refuseSet(cmd, "only works with --check: without it no cluster is contacted", connectionFlags...); err != nil {
					return err
				}
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json (JSON Lines: one object per line; jq -s . makes one array) or yaml")
	cmd.Flags().BoolVar(&o.Check, "check", false, "probe each cluster: reachable, version, identity, pins")
	cmd.Flags().IntVar(&o.Parallel, "parallel", 10, "clusters probed at once by --check")
	cmd.Flags().BoolVar(&o.Pin, "pin", false, "with --check: record each cluster's server and uid in the fleet file")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "with --pin: print the change to the fleet file, do not write it")
	return cmd
}

// Validate checks the flags.
func (o *ClustersOptions) Validate() error {
	if o.Parallel < 1 {
		return fmt.Errorf("--parallel must be at least 1")
	}
	if o.Pin && !o.Check {
		return fmt.Errorf("--pin only works with --check")
	}
	if o.DryRun && !o.Pin {
		return fmt.Errorf("--dry-run only works with --pin")
	}
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q: want json or yaml", o.Output)
}

// Run lists the clusters (roster.Listing).
func (o *ClustersOptions) Run(ctx context.Context) error {
	f, clusters, err := o.selected(o.Selection)
	if err != nil {
		return err
	}
	l := roster.Listing{Flags: o.ConfigFlags, Fleet: f, Clusters: clusters, Sources: &o.sources, Output: o.Output, Check: o.Check, Pin: o.Pin, DryRun: o.DryRun, Parallel: o.Parallel}
	return l.Show(ctx, o.Out, o.ErrOut)
}
