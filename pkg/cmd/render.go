package cmd

import (
	"context"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render/stream"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
)

// RenderOptions are the options of "kubectl fleet render".
type RenderOptions struct {
	*GlobalOptions
	SelectOptions
	SourceOptions
	Output      string
	OutputDir   string
	ShowSecrets bool
	// Decrypt writes SOPS-encrypted files' values decrypted into
	// --output-dir, which leaves them encrypted otherwise.
	Decrypt bool
	// Revision prints a revision stored in each cluster instead of
	// rendering.
	Revision int
}

// NewCmdRender returns the render command.
func NewCmdRender(g *GlobalOptions) *cobra.Command {
	o := &RenderOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:     "render",
		Aliases: []string{"build"},
		Short:   "Print what each selected cluster would get",
		Long: `Render kustomize, jsonnet or plain manifests for every selected cluster with
its attributes. No kubeconfig is read and no cluster contacted, except to read
the attributes of clusters that declare attributesFrom.

The output is a multi-document YAML stream ("---" between documents); each
cluster's objects start with a "# Cluster: <name>" comment line. -o json prints one JSON object per
cluster, {"cluster", "group", "objects"}. --output-dir DIR writes
DIR/<cluster>/<kind>_<namespace>_<name>.yaml, one file per object, for a
GitOps engine (Flux, Argo CD) to consume; .yaml files left in a cluster's
folder by an earlier render are removed.

Secret values are masked on standard output unless --show-secrets;
--output-dir writes them as rendered, each Secret in a file only its owner
reads (0600).

SOPS-encrypted files are decrypted as they are read, with the keys the sops
CLI would find; a file no key here decrypts is rendered as it is, values
encrypted, and said on standard error. --output-dir leaves encrypted files
encrypted, for a decryptor in the cluster (Flux's kustomize-controller),
unless --decrypt.

Clusters render in parallel and each is printed as soon as it and the
clusters before it are rendered, in fleet order. A render error ends the
output before the cluster it happened in (a cluster is printed whole or not
at all; in YAML a last comment line says where the output stops); every
error is listed and the command exits 1.`,
		Example: `  # Every cluster, every app of the fleet file
  kubectl fleet render

  # The staging clusters, from a kustomize folder with per-group overlays
  kubectl fleet render -k overlays --group staging

  # One folder per cluster for GitOps
  kubectl fleet render -j web.jsonnet --output-dir out/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Revision != 0 {
				if err := refuseSet(cmd, "does not go with --revision, which prints the objects as they were stored", "namespace"); err != nil {
					return err
				}
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.SourceOptions.addFlags(cmd, g)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "yaml", "output format: yaml or json (JSON Lines: one object per cluster and line)")
	cmd.Flags().StringVar(&o.OutputDir, "output-dir", "", "write one folder per cluster, one file per object, into this folder")
	cmd.Flags().BoolVar(&o.ShowSecrets, "show-secrets", false, "print Secret values instead of masking them")
	cmd.Flags().BoolVar(&o.Decrypt, "decrypt", false, "write SOPS-encrypted files' values decrypted into --output-dir (the keys required)")
	cmd.Flags().IntVar(&o.Revision, "revision", 0, "print revision N of --app as stored in each selected cluster, instead of rendering")
	return cmd
}

// Validate checks the flags.
func (o *RenderOptions) Validate() error {
	if o.Output != "yaml" && o.Output != "json" {
		return fmt.Errorf("--output %q: want yaml or json", o.Output)
	}
	if o.Decrypt && o.OutputDir == "" {
		return fmt.Errorf("--decrypt is for --output-dir, which leaves SOPS-encrypted files encrypted without it; standard output has them decrypted, Secret values masked")
	}
	if o.OutputDir != "" && o.Output != "yaml" {
		return fmt.Errorf("--output-dir writes YAML files; it does not go with -o %s", o.Output)
	}
	if o.Revision != 0 {
		if _, adhoc := o.Adhoc(); adhoc || o.Revision < 0 || len(o.Apps) != 1 {
			return fmt.Errorf("--revision N prints a stored revision of one app: give it a positive N and exactly one --app, and no -k, -j or -f")
		}
	}
	return o.SourceOptions.Validate()
}

// Run renders and prints, cluster by cluster as they are rendered
// (stream.Printer.Render), or prints the stored revision.
func (o *RenderOptions) Run(ctx context.Context) error {
	if o.ShowSecrets {
		mask.Show(o.Out)
	}
	if o.Revision == 0 {
		c, err := o.renderConfig(o.Selection, &o.SourceOptions, false)
		if err != nil {
			return err
		}
		pl, err := rendered.NewRequest(ctx, c)
		if err != nil {
			return err
		}
		return o.printer(pl.Clusters).Render(ctx, pl.Clusters, pl.Targets(false), c.Engine, c.Engine.Secrets, runtime.GOMAXPROCS(0))
	}
	r, err := o.stored(ctx)
	if err != nil && r == nil {
		return err
	}
	if perr := o.printer(r.Clusters).PrintAll(r.Clusters, r.Results); perr != nil {
		return perr
	}
	return err
}

// printer prints the clusters as the flags say.
func (o *RenderOptions) printer(clusters []*fleet.Cluster) *stream.Printer {
	so := stream.Options{Out: o.Out, JSON: o.Output == "json", ShowSecrets: o.ShowSecrets, Mask: o.mask, Dir: o.OutputDir, Decrypt: o.Decrypt, Progress: o.ErrOut}
	if o.OutputDir != "" {
		so.Prefix = o.prefixer(clusters)
	}
	return stream.NewPrinter(so)
}

// stored reads revision o.Revision of the app from every selected
// cluster (rendered.Stored). The clusters that do not have it are said
// on standard error, and make the error returned with what the others
// had.
func (o *RenderOptions) stored(ctx context.Context) (*rendered.Set, error) {
	f, clusters, err := o.selected(o.Selection)
	if err != nil {
		return nil, err
	}
	r, errs, err := rendered.Stored(ctx, connector{o.GlobalOptions}, f, clusters, o.Apps[0], o.Revision, 10, o.mask)
	if err != nil {
		return nil, err
	}
	for _, err := range errs {
		fmt.Fprintf(o.ErrOut, "error: %v\n", err)
	}
	if len(errs) > 0 {
		return r, &exit.Error{Code: exit.Failed}
	}
	return r, nil
}
