package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/utils/ptr"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
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

// Run writes the fleet file.
func (o *InitOptions) Run(cmd *cobra.Command) error {
	file := fleet.Locate(o.FleetFile)
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	if _, err := os.Stat(file); err == nil && !o.Force {
		return fmt.Errorf("%s exists: kubectl fleet init does not overwrite it without --force", file)
	}
	raw, err := o.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	contexts, err := scaffold.Contexts(raw.Contexts, o.Contexts)
	if err != nil {
		return err
	}
	contexts, left := scaffold.OneEach(&raw, contexts)
	for _, l := range left {
		fmt.Fprintf(o.ErrOut, "note: context %s: left out, one entry per API server (sameClusterAs: in the fleet file says otherwise)\n", l)
	}
	groups, clusters, err := scaffold.Place(contexts, o.Groups)
	if err != nil {
		return err
	}
	dir := filepath.Dir(file)
	name := o.Name
	if name == "" {
		name = scaffold.DNSLabel(filepath.Base(dir))
	}
	var made []string // the example app's files, removed if a check fails
	if o.App != "" {
		if made, err = scaffold.WriteApp(dir, o.App); err != nil {
			scaffold.Unmake(made)
			return err
		}
	}
	content := scaffold.Fleet{Name: name, Schema: o.Schema, Kubeconfig: scaffold.KubeconfigField(ptr.Deref(o.ConfigFlags.KubeConfig, ""), dir), Groups: groups, Clusters: clusters, App: o.App}.YAML()
	if err := o.checkAndWrite(cmd, file, content); err != nil {
		scaffold.Unmake(made)
		return err
	}
	scaffold.Said(o.Out, file, groups, clusters, made)
	return nil
}

// checkAndWrite vets content as the fleet file (its contexts, its apps'
// render) from a temporary file beside it, then puts it in place: a
// fleet file that fails is never written.
func (o *InitOptions) checkAndWrite(cmd *cobra.Command, file string, content []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".fleet-init-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	var out bytes.Buffer
	// The kubeconfig of --kubeconfig, written in the file.
	g := GlobalOptions{IOStreams: o.IOStreams, FleetFile: tmp.Name(), NoColor: true, ConfigFlags: kube.NewConfigFlags(), LogLevel: o.LogLevel}
	g.Out = &out
	defer g.sources.Cleanup()
	f, err := g.loadFleet()
	var all []*fleet.Cluster
	if err == nil {
		all, err = f.Select(fleet.Selection{})
	}
	if err == nil && len(f.Apps) == 0 {
		err = checkContexts(cmd.Context(), &g, f, all) // no app to render
	} else if err == nil {
		err = (&VetOptions{GlobalOptions: &g}).Run(cmd.Context())
	}
	if err != nil {
		fmt.Fprint(o.ErrOut, strings.ReplaceAll(out.String(), tmp.Name(), file))
		if ee := (*exit.Error)(nil); errors.As(err, &ee) && ee.Err == nil {
			return fmt.Errorf("the fleet file init made fails vet (above): nothing written")
		}
		return fmt.Errorf("the fleet file init made fails vet, nothing written: %s", strings.ReplaceAll(err.Error(), tmp.Name(), file))
	}
	return os.Rename(tmp.Name(), file)
}
