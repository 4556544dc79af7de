package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/utils/ptr"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/scaffold"
	"github.com/kubectl-fleet/kubectl-fleet/schema"
)

// InitOptions are the options of "kubectl fleet init".
type InitOptions struct {
	*GlobalOptions
	// Contexts are the contexts to take (names or globs); every one when
	// empty.
	Contexts []string
	// Groups are --group NAME=GLOB[,GLOB…], in rollout order.
	Groups []string
	// Name is the fleet's metadata.name.
	Name string
	// App is the example app's name; "" for none.
	App string
	// Schema is the yaml-language-server $schema line's target.
	Schema string
	// Force overwrites an existing fleet file.
	Force bool
}

// NewCmdInit returns the init command.
func NewCmdInit(g *GlobalOptions) *cobra.Command {
	o := &InitOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a fleet file from the kubeconfig's contexts",
		Long: `Write a fleet file (-F, default ./fleet.yaml) with one cluster per context of
the kubeconfig (--contexts narrows them), in the groups --group gives, in
rollout order. Without --group, the groups are guessed from the context
names: a context named like dev, test, qa, stage or staging goes to staging,
the others to production (a protected group: apply asks first, or --yes).
Each guess is marked in the file: check them.

An example app (--app, "" for none) is written under apps/ unless its
folder exists. The file starts with the yaml-language-server line that
points editors at the fleet file's JSON Schema (--schema).

The file is checked as vet checks it (its contexts, the example app's
render) before it is written; nothing is written when a check fails, or
when the fleet file exists (--force overwrites it).`,
		Example: `  # Every context, groups guessed from their names
  kubectl fleet init
  # Two groups, the contexts by glob
  kubectl fleet init --group staging=kind-stg --group production='prod-*'
  # Some contexts only, into a file of another name
  kubectl fleet init --contexts 'kind-*' -F kind.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd)
		},
	}
	cmd.Flags().StringSliceVar(&o.Contexts, "contexts", nil, "the contexts to take, names or globs (default every context of the kubeconfig)")
	cmd.Flags().StringArrayVar(&o.Groups, "group", nil, "a group and its contexts, NAME=GLOB[,GLOB...], repeated in rollout order (default: guessed from the context names)")
	cmd.Flags().StringVar(&o.Name, "name", "", "the fleet's name (default the fleet file's folder)")
	cmd.Flags().StringVar(&o.App, "app", "hello", `the example app's name; "" writes none`)
	cmd.Flags().StringVar(&o.Schema, "schema", schema.ID, "the JSON Schema editors are pointed at (a URL, or a path relative to the fleet file)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "overwrite an existing fleet file")
	return cmd
}

// Run writes the fleet file (scaffold.Init).
func (o *InitOptions) Run(cmd *cobra.Command) error {
	file, err := scaffold.Target(o.FleetFile, o.Force)
	if err != nil {
		return err
	}
	raw, err := o.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	in := scaffold.Init{File: file, Kubeconfig: &raw, KubeconfigFlag: ptr.Deref(o.ConfigFlags.KubeConfig, ""), Contexts: o.Contexts, Groups: o.Groups, Name: o.Name, App: o.App, Schema: o.Schema,
		Check: func(tmp string, out io.Writer) error { return o.vet(cmd.Context(), tmp, out) }}
	return in.Write(o.Out, o.ErrOut)
}

// vet checks the fleet file at tmp as vet would (its contexts, its apps'
// render), saying what it finds on out; a fleet file without apps has
// its contexts checked only.
func (o *InitOptions) vet(ctx context.Context, tmp string, out io.Writer) error {
	// The kubeconfig of --kubeconfig, written in the file.
	g := GlobalOptions{IOStreams: o.IOStreams, FleetFile: tmp, NoColor: true, ConfigFlags: kube.NewConfigFlags(), LogLevel: o.LogLevel}
	g.Out = out
	defer g.sources.Cleanup()
	f, all, err := g.selected(fleet.Selection{})
	switch {
	case err != nil:
		return err
	case len(f.Apps) == 0:
		return checkContexts(ctx, &g, f, all) // no app to render
	}
	return (&VetOptions{GlobalOptions: &g}).Run(ctx)
}
