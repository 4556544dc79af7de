package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/vet"
)

// VetOptions are the options of "kubectl fleet vet".
type VetOptions struct {
	*GlobalOptions
	SelectOptions
	SourceOptions
	// NoKubeconfig skips the check that each context exists.
	NoKubeconfig bool
	// Server also validates every object with a server-side dry run.
	Server bool
	// Output is -o: "" or json.
	Output string
}

// NewCmdVet returns the vet command.
func NewCmdVet(g *GlobalOptions) *cobra.Command {
	o := &VetOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "vet",
		Short: "Check the fleet file and render every selected cluster",
		Long: `Check the fleet file, check that every selected cluster's context exists in
its kubeconfig, render every selected cluster (all apps, or the given
source) and validate the rendered objects: names, namespaces, labels,
annotations, and objects rendered twice. Nothing is sent to any cluster,
unless --server: then each object is also validated by its cluster with a
server-side dry-run apply (attributes from clusters are read for real).

Every problem is reported, not only the first.

Exit codes:
  0  no problem found
  1  problems found, or an error`,
		Example: `  kubectl fleet vet
  kubectl fleet vet -k overlays --group staging
  # In CI, without credentials
  kubectl fleet vet --no-kubeconfig
  # Each problem as JSON, with its file, line and field or its cluster
  kubectl fleet vet -o json | jq -c 'select(.type=="problem")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Server && o.NoKubeconfig {
				return fmt.Errorf("--server needs the kubeconfig; it does not go with --no-kubeconfig")
			}
			if o.NoKubeconfig {
				if err := refuseSet(cmd, "does not go with --no-kubeconfig", "kubeconfig"); err != nil {
					return err
				}
			}
			if !o.Server {
				if err := refuseSet(cmd, "only works with --server: without it nothing is sent to any cluster", connectionFlags...); err != nil {
					return err
				}
			}
			if err := validateJSONOutput(o.Output); err != nil {
				return err
			}
			if err := o.SourceOptions.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.SourceOptions.addFlags(cmd, g)
	cmd.Flags().BoolVar(&o.NoKubeconfig, "no-kubeconfig", false, "skip the check that each cluster's context exists (CI without credentials)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json (JSON Lines: one object per problem, cluster found sound, warning, and a summary)")
	cmd.Flags().BoolVar(&o.Server, "server", false, "also validate every object on its cluster with a server-side dry-run apply (reads attributesFrom for real)")
	return cmd
}

// Run vets and reports.
func (o *VetOptions) Run(ctx context.Context) error {
	v := vet.NewOut(o.Out, o.Output == "json")
	f, err := o.loadFleet()
	if err != nil {
		var list fleet.ErrorList
		if !errors.As(err, &list) {
			return err
		}
		v.FleetProblems(list)
		v.Summary(0, fleet.Locate(o.FleetFile))
		return &exit.Error{Code: exit.Failed}
	}
	clusters, err := f.Select(o.Selection)
	if err != nil {
		return err
	}
	apps, err := o.apps(ctx, v, f, clusters)
	if err != nil {
		return err
	}
	attrs := vet.Placeholders(f, clusters)
	if o.Server && v.Problems == 0 {
		if attrs, err = rendered.LiveAttributes(ctx, connector{o.GlobalOptions}, f, clusters, apps); err != nil {
			return err
		}
	}
	pl := rendered.Request{Fleet: f, Clusters: clusters, Apps: apps, Live: attrs}
	engine := o.engine()
	// vet checks what it can without the keys (a pull request from a
	// fork): a file no key decrypts is checked as it is, and said. Not
	// with --server, which would send the encrypted text to be checked.
	engine.Secrets.KeysOptional = !o.Server
	engine.Lint = true // Helm templates strict too: a typo is a warning
	results := pl.Render(ctx, engine)
	// The apps' tests are rendered and checked too (not sent to a server).
	tests := engine.Render(ctx, pl.Targets(true))
	v.Prefix = o.prefixer(clusters)
	check := vet.Check{Fleet: f, Clusters: clusters, Results: results, Tests: tests, Decrypted: engine.Secrets.Values(), Undecrypted: engine.Secrets.Undecrypted()}
	if o.Server {
		check.Connect = func(ctx context.Context, c *fleet.Cluster) (*kube.Client, error) { return o.connect(ctx, f, c) }
	}
	v.Check(ctx, check)
	if v.Problems > 0 {
		return &exit.Error{Code: exit.Failed}
	}
	return nil
}

// apps are the apps vet renders for clusters, their oci:// sources
// fetched and said; a context missing (unless --no-kubeconfig) is a
// problem of v.
func (o *VetOptions) apps(ctx context.Context, v *vet.Out, f *fleet.Fleet, clusters []*fleet.Cluster) ([]rendered.App, error) {
	if !o.NoKubeconfig {
		if err := checkContexts(ctx, o.GlobalOptions, f, clusters); err != nil {
			// Missing contexts, or kubeconfigFrom sources that failed.
			var list fleet.ErrorList
			if errors.As(err, &list) {
				v.FleetProblems(list)
			} else {
				for _, l := range strings.Split(err.Error(), "\n") {
					v.Problem("", vet.Problem{Message: l})
				}
			}
		}
	}
	apps, err := o.SourceOptions.Resolve(f, clusters, o.namespace())
	if err != nil {
		return nil, err
	}
	if err := rendered.Fetch(ctx, apps, o.fetcher()); err != nil {
		return nil, err
	}
	for _, a := range apps {
		if got := a.Fetched; got != nil {
			v.Source(vet.Source{App: a.Name, Artifact: got.Ref, Format: got.Format, SignedBy: got.SignedBy})
		}
	}
	return apps, nil
}
