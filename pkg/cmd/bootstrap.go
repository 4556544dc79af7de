package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
)

// BootstrapOptions are the options of "kubectl fleet bootstrap".
type BootstrapOptions struct {
	*GlobalOptions
	SelectOptions
	SourceOptions
	// OutputDir, when set, gets a file per cluster; else the one
	// selected cluster's objects go to standard output.
	OutputDir string
	// PublicKey, when set, is the signing key's public half (cosign.pub)
	// for every selected delivery that signs: no private key is read.
	PublicKey string
}

// NewCmdBootstrap returns the bootstrap command.
func NewCmdBootstrap(g *GlobalOptions) *cobra.Command {
	o := &BootstrapOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "bootstrap",
		Short: "Write the Flux objects that make delivered clusters follow their tags",
		Long: `A cluster with a delivery (delivery: {oci: oci://…} on its group or itself)
is never written to: apply publishes each app's render for it to the
registry and moves its tag, <repository>/<app>:<cluster>, and the cluster's
own Flux pulls it. bootstrap writes, per selected delivered cluster and app,
what makes that cluster's Flux follow its tag: an OCIRepository on the tag
and a Kustomization that applies it (prune, wait, the delivery's interval
and timeout), named <fleet>-<app> in the delivery's namespace
(flux-system), and, when the delivery signs, the Secret <fleet>-cosign
with the public key that the OCIRepository's verify checks every artifact
with. The public key comes from --public-key, else the delivery's
signing.publicKey, else the private key: bootstrap needs no private key
when one of the first two names cosign.pub.

Nothing is applied: kubectl fleet never holds write credentials for a
delivered cluster. Apply the output once with the cluster's own admin
credentials, or put it into the cluster's provisioning (Terraform, Cluster
API, an image): one cluster's objects go to standard output, several go to
--output-dir, a file <cluster>.yaml each. The cluster needs Flux's
source-controller and kustomize-controller installed.

Exit codes:
  0    written
  1    an error (no delivered cluster selected, a signing key that cannot be read)`,
		Example: `  kubectl fleet bootstrap -c edge-1 | kubectl apply --context edge-1-admin -f -
  kubectl fleet bootstrap -c edge-1 --public-key cosign.pub
  kubectl fleet bootstrap -g production --output-dir provisioning/flux`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.Run(cmd.Context()) },
	}
	o.SelectOptions.addFlags(cmd, g)
	o.SourceOptions.addFlags(cmd, g)
	cmd.Flags().StringVar(&o.OutputDir, "output-dir", "", "write <cluster>.yaml per cluster into this folder (required for more than one cluster)")
	cmd.Flags().StringVar(&o.PublicKey, "public-key", "", "the signing key's public half (cosign.pub) for Flux's verify: no private key is read (default: the delivery's signing.publicKey, else derived from its key)")
	return cmd
}

// Run writes the objects (publish.Bootstrapping).
func (o *BootstrapOptions) Run(_ context.Context) error {
	f, clusters, err := o.selected(o.Selection)
	if err != nil {
		return err
	}
	if clusters, err = publish.Delivered(f, clusters, o.OutputDir != ""); err != nil {
		return err
	}
	apps, err := o.SourceOptions.Resolve(f, clusters, o.namespace())
	if err != nil {
		return err
	}
	b := publish.Bootstrapping{Fleet: f, Clusters: clusters, Apps: func(c *fleet.Cluster) []string { return rendered.AppsOf(apps, c) }, PublicKey: o.PublicKey, OutputDir: o.OutputDir}
	return b.Write(o.Out, o.ErrOut)
}
