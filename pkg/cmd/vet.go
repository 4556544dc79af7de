package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/notify"
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
	// NotifyTest sends each notify: sink a test event (with Server).
	NotifyTest bool
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
server-side dry-run apply (attributes from clusters are read for real),
and with --notify-test each sink of the fleet file's notify: gets a test
event (Slack and Teams a message, a webhook a CloudEvent of type
io.kubectl-fleet.test.v1; GitHub's token is tried with a read).

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
				if err := refuseSet(cmd, "only works with --server: without it nothing is sent anywhere", "notify-test"); err != nil {
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
	cmd.Flags().BoolVar(&o.NotifyTest, "notify-test", false, "with --server, send each sink of the fleet file's notify: a test event")
	return cmd
}

// Run vets and reports (vet.Run).
func (o *VetOptions) Run(ctx context.Context) error {
	r := &vet.Run{File: fleet.Locate(o.FleetFile), Selection: o.Selection, Source: o.Source, Namespace: o.namespace(), Contexts: !o.NoKubeconfig, Server: o.Server,
		Connector: connector{o.GlobalOptions}, Engine: o.engine(), Fetcher: o.fetcher(), Prefix: o.prefixer}
	err := r.Vet(ctx, vet.NewOut(o.Out, o.Output == "json"))
	if !o.NotifyTest {
		return err
	}
	return errors.Join(err, o.notifyTest(ctx, r.File))
}

// notifyTest sends each sink of the fleet file at path a test event, and
// says, for each, whether it was sent.
func (o *VetOptions) notifyTest(ctx context.Context, path string) error {
	f, err := fleet.Load(path)
	if err != nil {
		return nil // vet said it
	}
	targets, err := o.notifyTargets(f)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		fmt.Fprintln(o.Out, "notify: the fleet file has no sink to test")
		return nil
	}
	failed := 0
	for i, err := range notify.TestAll(ctx, targets, f.Metadata.Name) {
		if err != nil {
			failed++
			fmt.Fprintf(o.Out, "notify %s: test event not sent: %v\n", targets[i].Name, err)
			continue
		}
		fmt.Fprintf(o.Out, "notify %s: test event sent\n", targets[i].Name)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d notify sinks did not take the test event", failed, len(targets))
	}
	return nil
}
