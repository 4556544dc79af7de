package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render/stream"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// RenderOptions are the options of "kubectl fleet render".
type RenderOptions struct {
	*GlobalOptions
	SelectOptions
	SourceOptions
	Output      string
	OutputDir   string
	ShowSecrets bool
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
--output-dir writes them as rendered.

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
	cmd.Flags().StringVarP(&o.Output, "output", "o", "yaml", "output format: yaml or json (one object per cluster and line)")
	cmd.Flags().StringVar(&o.OutputDir, "output-dir", "", "write one folder per cluster, one file per object, into this folder")
	cmd.Flags().BoolVar(&o.ShowSecrets, "show-secrets", false, "print Secret values instead of masking them")
	cmd.Flags().IntVar(&o.Revision, "revision", 0, "print revision N of --app as stored in each selected cluster, instead of rendering")
	return cmd
}

// Validate checks the flags.
func (o *RenderOptions) Validate() error {
	if o.Output != "yaml" && o.Output != "json" {
		return fmt.Errorf("--output %q: want yaml or json", o.Output)
	}
	if o.OutputDir != "" && o.Output != "yaml" {
		return fmt.Errorf("--output-dir writes YAML files; it does not go with -o %s", o.Output)
	}
	if o.Revision != 0 {
		if _, adhoc := o.adhoc(); adhoc || o.Revision < 0 || len(o.Apps) != 1 {
			return fmt.Errorf("--revision N prints a stored revision of one app: give it a positive N and exactly one --app, and no -k, -j or -f")
		}
	}
	return o.SourceOptions.validate()
}

// Run renders and prints, cluster by cluster as they are rendered (see
// stream), or prints the stored revision.
func (o *RenderOptions) Run(ctx context.Context) error {
	if o.Revision == 0 {
		return o.stream(ctx)
	}
	r, err := o.stored(ctx)
	if err != nil && r == nil {
		return err
	}
	p := o.printer(r.clusters)
	for i, c := range r.clusters {
		if perr := p.Print(c, r.results[i].Objects); perr != nil {
			return perr
		}
	}
	return err
}

// stream renders the selected clusters' apps on GOMAXPROCS workers, and
// prints each cluster as soon as it and every cluster before it are
// rendered, in fleet order (stream.Printer.Stream).
func (o *RenderOptions) stream(ctx context.Context) error {
	pl, err := o.plan(ctx, o.Selection, &o.SourceOptions, false)
	if err != nil {
		return err
	}
	if err := stream.CheckDir(o.OutputDir, pl.clusters); err != nil {
		return err
	}
	return o.printer(pl.clusters).Stream(ctx, pl.clusters, pl.targets(false), o.engine(), runtime.GOMAXPROCS(0))
}

// printer prints the clusters as the flags say.
func (o *RenderOptions) printer(clusters []*fleet.Cluster) *stream.Printer {
	so := stream.Options{Out: o.Out, JSON: o.Output == "json", ShowSecrets: o.ShowSecrets, Dir: o.OutputDir, Progress: o.ErrOut}
	if o.OutputDir != "" {
		so.Prefix = o.prefixer(clusters)
	}
	return stream.NewPrinter(so)
}

// stored reads revision o.Revision of the app from every selected
// cluster. The clusters that do not have it are said on standard error,
// and make the error returned with what the others had.
func (o *RenderOptions) stored(ctx context.Context) (*rendered, error) {
	f, clusters, err := o.selected(o.Selection)
	if err != nil {
		return nil, err
	}
	if err := checkContexts(ctx, o.GlobalOptions, f, clusters); err != nil {
		return nil, err
	}
	app := o.Apps[0]
	results := make([]render.Result, len(clusters))
	names, byName := index(clusters)
	outcomes := runner.Run(ctx, everyCluster(names), 10, func(ctx context.Context, name string) error {
		c := byName[name]
		client, err := o.connect(ctx, f, c)
		if err != nil {
			return err
		}
		_, objs, err := revision.Load(ctx, client, app, o.Revision)
		results[slices.Index(names, name)] = render.Result{Target: render.Target{Cluster: render.ClusterOf(f, c), App: app}, Objects: objs}
		return err
	})
	failed := 0
	r := &rendered{fleet: f}
	for i, oc := range outcomes {
		if oc.Err != nil {
			failed++
			fmt.Fprintf(o.ErrOut, "error: %s: %v\n", oc.Cluster, oc.Err)
			continue
		}
		r.clusters, r.results = append(r.clusters, clusters[i]), append(r.results, results[i])
	}
	if failed > 0 {
		return r, &ExitError{Code: ExitFailed}
	}
	return r, nil
}

// rendered is the fleet, the selected clusters and every rendered
// (cluster, app) pair, in cluster then app order.
type rendered struct {
	fleet    *fleet.Fleet
	clusters []*fleet.Cluster
	results  []render.Result
	// tests are the apps' rendered tests, when asked for.
	tests []render.Result
}

// testsOf returns the rendered tests of an app on a cluster, or nil.
func (r *rendered) testsOf(cluster, app string) []*unstructured.Unstructured {
	for _, t := range r.tests {
		if t.Cluster.Name == cluster && t.App == app {
			return t.Objects
		}
	}
	return nil
}

// only is r for the named clusters alone.
func (r *rendered) only(names map[string]bool) *rendered {
	sub := &rendered{fleet: r.fleet}
	for _, c := range r.clusters {
		if names[c.Name] {
			sub.clusters = append(sub.clusters, c)
		}
	}
	for _, res := range r.results {
		if names[res.Cluster.Name] {
			sub.results = append(sub.results, res)
		}
	}
	for _, t := range r.tests {
		if names[t.Cluster.Name] {
			sub.tests = append(sub.tests, t)
		}
	}
	return sub
}

// of returns the results of one cluster.
func (r *rendered) of(cluster string) []render.Result {
	var out []render.Result
	for _, res := range r.results {
		if res.Cluster.Name == cluster {
			out = append(out, res)
		}
	}
	return out
}

// engine is a render engine for this command: standard input for -f -,
// and the chart cache (charts pinned by fleet.lock, under their digest).
func (g *GlobalOptions) engine() *render.Engine {
	return &render.Engine{Stdin: g.In, ChartCache: g.chartCache()}
}

// chartCache is where charts are cached: $KUBECTL_FLEET_CHART_CACHE, else
// kubectl-fleet-charts in kubectl's --cache-dir when it is given, else
// kubectl-fleet/charts in the user's cache folder (~/.cache on Linux).
func (g *GlobalOptions) chartCache() string {
	if dir := os.Getenv("KUBECTL_FLEET_CHART_CACHE"); dir != "" {
		return dir
	}
	if cf := g.ConfigFlags; cf != nil && cf.CacheDir != nil && *cf.CacheDir != "" && *cf.CacheDir != *kube.NewConfigFlags().CacheDir {
		return filepath.Join(*cf.CacheDir, "kubectl-fleet-charts")
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "kubectl-fleet", "charts")
	}
	return ""
}

// render loads the fleet, selects clusters, resolves apps and renders them
// all. With contexts, every selected cluster's context must exist first
// (commands that talk to clusters). Any render error fails the whole
// command, every error reported, before anything touches a cluster.
func (g *GlobalOptions) render(ctx context.Context, sel fleet.Selection, src *SourceOptions, contexts bool) (*rendered, error) {
	pl, err := g.plan(ctx, sel, src, contexts)
	if err != nil {
		return nil, err
	}
	f, clusters := pl.fleet, pl.clusters
	if src.warm != nil {
		src.warm(ctx, f, clusters)
	}
	engine := g.engine()
	results := engine.Render(ctx, pl.targets(false))
	var tests []render.Result
	if src.withTests {
		tests = engine.Render(ctx, pl.targets(true))
	}
	var errs []error
	for _, r := range slices.Concat(results, tests) {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	if len(errs) > 0 {
		return nil, render.Failed(errs)
	}
	return &rendered{fleet: f, clusters: clusters, results: results, tests: tests}, nil
}

// renderPlan is what is rendered: the fleet, the selected clusters, the apps and
// the attributes read from clusters.
type renderPlan struct {
	fleet    *fleet.Fleet
	clusters []*fleet.Cluster
	apps     []app
	live     map[string]map[string]any
	// caps are the discovered capabilities of the clusters Helm charts
	// render for, when the command talks to clusters.
	caps map[string]*render.Capabilities
}

// targets lists the (cluster, app) pairs to render, or their tests.
func (p *renderPlan) targets(tests bool) []render.Target {
	out := targets(p.fleet, p.clusters, p.apps, p.live, tests)
	for i := range out {
		out[i].Cluster.Capabilities = p.caps[out[i].Cluster.Name]
	}
	return out
}

// plan loads the fleet, selects clusters, resolves apps and reads the
// clusters' attributesFrom. With contexts, every selected cluster's
// context must exist first (commands that talk to clusters).
func (g *GlobalOptions) plan(ctx context.Context, sel fleet.Selection, src *SourceOptions, contexts bool) (*renderPlan, error) {
	f, clusters, err := g.selected(sel)
	if err != nil {
		return nil, err
	}
	apps, err := src.apps(f, clusters, g.namespace())
	if err != nil {
		return nil, err
	}
	if contexts {
		if err := checkContexts(ctx, g, f, clusters); err != nil {
			return nil, err
		}
	}
	live, err := g.liveAttributes(ctx, f, clusters, apps)
	if err != nil {
		return nil, err
	}
	pl := &renderPlan{fleet: f, clusters: clusters, apps: apps, live: live}
	if contexts {
		if pl.caps, err = g.capabilities(ctx, f, clusters, apps); err != nil {
			return nil, err
		}
	}
	return pl, nil
}

// checkContexts materializes the clusters' kubeconfigFrom, then verifies,
// before any request, that every cluster's context exists in its
// kubeconfig.
func checkContexts(ctx context.Context, g *GlobalOptions, f *fleet.Fleet, clusters []*fleet.Cluster) error {
	if err := g.resolveKubeconfigs(ctx, f, clusters); err != nil {
		return err
	}
	return kube.CheckContexts(g.ConfigFlags, &kube.Kubeconfigs{}, f, clusters)
}

// liveAttributes reads the attributesFrom of every cluster that something
// is rendered for, in parallel. Only then are kubeconfigs read.
func (g *GlobalOptions) liveAttributes(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster, apps []app) (map[string]map[string]any, error) {
	var need []*fleet.Cluster
	for _, c := range clusters {
		if len(f.AttributesFrom(c)) > 0 && targeted(c, apps) {
			need = append(need, c)
		}
	}
	if len(need) == 0 {
		return nil, nil
	}
	if err := checkContexts(ctx, g, f, need); err != nil {
		return nil, err
	}
	live := make([]map[string]any, len(need))
	errs := make([]error, len(need))
	var wg sync.WaitGroup
	for i, c := range need {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client, err := g.connect(ctx, f, c)
			if err == nil {
				live[i], err = kube.ReadAttributes(ctx, client, f.AttributesFrom(c))
			}
			if err != nil {
				errs[i] = fmt.Errorf("cluster %s: %w", c.Name, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make(map[string]map[string]any, len(need))
	for i, c := range need {
		out[c.Name] = live[i]
	}
	return out, nil
}

// capabilities asks the discovery of every cluster a Helm chart renders
// for what it serves (its .Capabilities), at once. A cluster skipped as
// unreachable (--skip-unreachable) renders with its attributes, and is
// skipped by the rollout anyway.
func (g *GlobalOptions) capabilities(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster, apps []app) (map[string]*render.Capabilities, error) {
	var need []*fleet.Cluster
	for _, c := range clusters {
		if slices.ContainsFunc(apps, func(a app) bool { return a.source.Type == render.HelmChart && a.goesTo(c) }) {
			need = append(need, c)
		}
	}
	caps := make([]*render.Capabilities, len(need))
	errs := make([]error, len(need))
	var wg sync.WaitGroup
	for i, c := range need {
		wg.Go(func() {
			client, err := g.connect(ctx, f, c)
			var skip *runner.SkipError
			if errors.As(err, &skip) {
				return
			}
			if err == nil {
				var cp render.Capabilities
				cp.KubeVersion, cp.APIVersions, err = client.Capabilities()
				caps[i] = &cp
			}
			if err != nil {
				errs[i] = fmt.Errorf("cluster %s: %w", c.Name, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := map[string]*render.Capabilities{}
	for i, c := range need {
		if caps[i] != nil {
			out[c.Name] = caps[i]
		}
	}
	return out, nil
}

func targeted(c *fleet.Cluster, apps []app) bool {
	return slices.ContainsFunc(apps, func(a app) bool { return a.goesTo(c) })
}

// byCluster gathers each cluster's objects over its apps.
func byCluster(clusters []*fleet.Cluster, results []render.Result) map[string][]*unstructured.Unstructured {
	out := make(map[string][]*unstructured.Unstructured, len(clusters))
	for _, r := range results {
		out[r.Cluster.Name] = append(out[r.Cluster.Name], r.Objects...)
	}
	return out
}
