package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
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
  kubectl fleet vet --no-kubeconfig`,
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
			if err := o.SourceOptions.validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.SourceOptions.addFlags(cmd, g)
	cmd.Flags().BoolVar(&o.NoKubeconfig, "no-kubeconfig", false, "skip the check that each cluster's context exists (CI without credentials)")
	cmd.Flags().BoolVar(&o.Server, "server", false, "also validate every object on its cluster with a server-side dry-run apply (reads attributesFrom for real)")
	return cmd
}

// Run vets and reports.
func (o *VetOptions) Run(ctx context.Context) error {
	f, err := o.loadFleet()
	if err != nil {
		var list fleet.ErrorList
		if errors.As(err, &list) {
			for _, e := range list {
				fmt.Fprintln(o.Out, e)
			}
			fmt.Fprintf(o.Out, "vet: %s in %s\n", output.Plural(len(list), "problem"), fleet.Locate(o.FleetFile))
			return &ExitError{Code: ExitFailed}
		}
		return err
	}
	clusters, err := f.Select(o.Selection)
	if err != nil {
		return err
	}
	problems := 0
	if !o.NoKubeconfig {
		if err := checkContexts(ctx, o.GlobalOptions, f, clusters); err != nil {
			// Missing contexts, or kubeconfigFrom sources that failed,
			// one a line.
			var list fleet.ErrorList
			lines := strings.Split(err.Error(), "\n")
			if errors.As(err, &list) {
				lines = lines[:0]
				for _, e := range list {
					lines = append(lines, e.Error())
				}
			}
			for _, l := range lines {
				fmt.Fprintln(o.Out, l)
			}
			problems += len(lines)
		}
	}
	apps, err := o.SourceOptions.Resolve(f, clusters, o.namespace())
	if err != nil {
		return err
	}
	attrs := placeholders(f, clusters)
	if o.Server && problems == 0 {
		if attrs, err = rendered.LiveAttributes(ctx, connector{o.GlobalOptions}, f, clusters, apps); err != nil {
			return err
		}
	}
	pl := rendered.Plan{Fleet: f, Clusters: clusters, Apps: apps, Live: attrs}
	engine := o.engine()
	results := engine.Render(ctx, pl.Targets(false))
	// The apps' tests are rendered and checked too (not sent to a server).
	tests := engine.Render(ctx, pl.Targets(true))
	objects := byCluster(clusters, results)
	p := o.prefixer(clusters)
	for _, c := range clusters {
		names, messages := vetRender(c.Name, results, tests, objects[c.Name])
		if o.Server && len(messages) == 0 && problems == 0 {
			messages = append(messages, o.serverCheck(ctx, f, c, results)...)
		}
		prefix := p.Prefix(c.Name)
		if len(messages) == 0 {
			fmt.Fprintf(o.Out, "%sok: %d objects from %s\n", prefix, len(objects[c.Name]), appList(names))
			continue
		}
		for _, m := range messages {
			for _, line := range strings.Split(m, "\n") {
				fmt.Fprintf(o.Out, "%s%s\n", prefix, line)
			}
		}
		problems += len(messages)
	}
	printWarnings(o.Out, results)
	if problems > 0 {
		fmt.Fprintf(o.Out, "vet: %s\n", output.Plural(problems, "problem"))
		return &ExitError{Code: ExitFailed}
	}
	fmt.Fprintf(o.Out, "vet: %s ok\n", output.Plural(len(clusters), "cluster"))
	return nil
}

// vetMessage is a render error as vet says it, under its cluster's prefix:
// "app web: …".
func vetMessage(r render.Result) string {
	var te *render.TargetError
	if errors.As(r.Err, &te) {
		return "app " + te.App + ": " + te.Err.Error()
	}
	return r.Err.Error()
}

// printWarnings says each app's render warnings once, however many
// clusters they came from.
func printWarnings(w io.Writer, results []render.Result) {
	seen := map[string]bool{}
	for _, r := range results {
		for _, warning := range r.Warnings {
			line := "warning: app " + r.App + ": " + warning
			if !seen[line] {
				seen[line] = true
				fmt.Fprintln(w, line)
			}
		}
	}
}

func appList(names []string) string {
	switch len(names) {
	case 0:
		return "no app (none targets this cluster)"
	case 1:
		return "app " + names[0]
	}
	return "apps " + strings.Join(names, ", ")
}

// serverCheck validates a cluster's objects with a server-side dry-run
// apply and returns what the server rejects.
func (o *VetOptions) serverCheck(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster, results []render.Result) []string {
	client, err := o.connect(ctx, f, c)
	if err != nil {
		return []string{err.Error()}
	}
	var messages []string
	for _, r := range results {
		if r.Cluster.Name != c.Name {
			continue
		}
		diffs, err := diff.Run(ctx, client, r.Objects, diff.Options{App: r.App, FieldManager: apply.FieldManager, Force: true, Concurrency: 16, Ignore: f.IgnoreRules(r.App)})
		if err != nil {
			messages = append(messages, fmt.Sprintf("app %s: %v", r.App, err))
			continue
		}
		for _, d := range diffs {
			if d.Err != nil {
				messages = append(messages, fmt.Sprintf("app %s: %s: the server rejects it: %v", r.App, d.Ref, d.Err))
			}
		}
	}
	return messages
}

// vetRender returns the apps rendered for a cluster and what is wrong
// with their render and their tests' (render errors, invalid objects).
func vetRender(cluster string, results, tests []render.Result, objects []*unstructured.Unstructured) (names, messages []string) {
	for _, r := range results {
		if r.Cluster.Name != cluster {
			continue
		}
		names = append(names, r.App)
		if r.Err != nil {
			messages = append(messages, vetMessage(r))
		}
	}
	for _, e := range render.Validate(objects) {
		messages = append(messages, e.Error())
	}
	for _, t := range tests {
		if t.Cluster.Name != cluster {
			continue
		}
		if t.Err != nil {
			messages = append(messages, "tests of "+vetMessage(t))
			continue
		}
		for _, e := range render.Validate(t.Objects) {
			messages = append(messages, fmt.Sprintf("tests of app %s: %v", t.App, e))
		}
	}
	return names, messages
}

// placeholders stand in for the attributes read from clusters, which vet
// does not contact: "<from ConfigMap kube-system/info>".
func placeholders(f *fleet.Fleet, clusters []*fleet.Cluster) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, c := range clusters {
		for _, a := range f.AttributesFrom(c) {
			if out[c.Name] == nil {
				out[c.Name] = map[string]any{}
			}
			ref := a.Name
			if a.Namespace != "" {
				ref = a.Namespace + "/" + a.Name
			}
			for name := range a.Attributes {
				out[c.Name][name] = fmt.Sprintf("<from %s %s>", a.Kind, ref)
			}
		}
	}
	return out
}

// byCluster gathers each cluster's objects over its apps.
func byCluster(clusters []*fleet.Cluster, results []render.Result) map[string][]*unstructured.Unstructured {
	out := make(map[string][]*unstructured.Unstructured, len(clusters))
	for _, r := range results {
		out[r.Cluster.Name] = append(out[r.Cluster.Name], r.Objects...)
	}
	return out
}
