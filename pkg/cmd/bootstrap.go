package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

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

// Run writes the objects.
func (o *BootstrapOptions) Run(_ context.Context) error {
	f, clusters, err := o.selected(o.Selection)
	if err != nil {
		return err
	}
	clusters = deliveredOf(f, clusters)
	switch {
	case len(clusters) == 0:
		return fmt.Errorf("no selected cluster has a delivery: bootstrap is for clusters that pull (delivery: {oci: …})")
	case len(clusters) > 1 && o.OutputDir == "":
		return fmt.Errorf("%d delivered clusters selected: give --output-dir for a file each, or select one (-c)", len(clusters))
	}
	apps, err := o.SourceOptions.Resolve(f, clusters, o.namespace())
	if err != nil {
		return err
	}
	for _, c := range clusters {
		pub, err := o.publicKey(f, f.DeliveryOf(c).Signing)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		objs, err := publish.BootstrapCluster(f, c, rendered.AppsOf(apps, c), pub)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		if err := o.write(c.Name, objs); err != nil {
			return err
		}
	}
	return nil
}

// write writes a cluster's objects as YAML documents.
func (o *BootstrapOptions) write(cluster string, objs []map[string]any) error {
	var out []byte
	for _, obj := range objs {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		out = append(append(out, "---\n"...), b...)
	}
	if o.OutputDir == "" {
		_, err := o.Out.Write(out)
		return err
	}
	if err := os.MkdirAll(o.OutputDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(o.OutputDir, cluster+".yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(o.ErrOut, "wrote %s\n", path)
	return nil
}

// deliveredOf are the clusters among clusters that have a delivery.
func deliveredOf(f *fleet.Fleet, clusters []*fleet.Cluster) []*fleet.Cluster {
	var out []*fleet.Cluster
	for _, c := range clusters {
		if f.DeliveryOf(c) != nil {
			out = append(out, c)
		}
	}
	return out
}

// publicKey is the public key Flux verifies a delivery's artifacts with
// (nil for a delivery that does not sign): --public-key's, else the
// delivery's signing.publicKey's, else its private key's.
func (o *BootstrapOptions) publicKey(f *fleet.Fleet, s *fleet.Signing) ([]byte, error) {
	switch {
	case s == nil:
		return nil, nil
	case o.PublicKey != "":
		return publish.ReadPublicKey(o.PublicKey)
	}
	return publish.KeysOf(f, s).Public()
}
