package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/ocisource"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// GlobalOptions are the flags every command shares.
type GlobalOptions struct {
	genericiooptions.IOStreams
	// FleetFile is --fleet/-F.
	FleetFile string
	// NoColor is --no-color.
	NoColor bool
	// ConfigFlags are the kubectl connection flags the plugin offers.
	ConfigFlags *genericclioptions.ConfigFlags
	// LogLevel is --v, client-go's log level.
	LogLevel int
	// SkipUnreachable is --skip-unreachable, for the commands that offer
	// it.
	SkipUnreachable bool

	// kube holds one client per cluster for the command's run
	// (clusters).
	kube kube.Clients
	// sources holds the clusters' kubeconfigFrom, written to temporary
	// files; Execute removes them.
	sources kube.KubeconfigSources
	// mask holds the values the run decrypted; the streams mask them.
	mask *mask.Set
	// tracing exports releases' traces (OTEL_EXPORTER_OTLP_ENDPOINT).
	tracing tracing
}

// fetcher fetches oci:// sources into the cache (ocisource.CacheDir),
// with kubectl's --cache-dir when it is given: a new one for each render
// (a reconcile pass resolves the tags anew), each artifact once there.
func (g *GlobalOptions) fetcher() *ocisource.Fetcher {
	var dir string
	if cf := g.ConfigFlags; cf != nil && cf.CacheDir != nil && *cf.CacheDir != *kube.NewConfigFlags().CacheDir {
		dir = *cf.CacheDir
	}
	return &ocisource.Fetcher{CacheDir: ocisource.CacheDir(dir)}
}

// resolveKubeconfigs materializes the kubeconfigFrom of the clusters (each
// source once per command) so that their kubeconfig path can be read.
// Every path that reads a cluster's kubeconfig calls it first: commands
// that do not talk to clusters (render, vet --no-kubeconfig, a plain
// clusters listing) never run a kubeconfigFrom command.
func (g *GlobalOptions) resolveKubeconfigs(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster) error {
	return g.sources.Resolve(ctx, f, clusters)
}

func (g *GlobalOptions) addFlags(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVarP(&g.FleetFile, "fleet", "F", "", fmt.Sprintf("fleet file (default $%s, else ./%s)", fleet.EnvVar, fleet.DefaultFile))
	cmd.PersistentFlags().BoolVar(&g.NoColor, "no-color", false, "never colour output (NO_COLOR is honoured too)")
	g.ConfigFlags.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().IntVarP(&g.LogLevel, "v", "v", 0, "client-go log level, as kubectl's -v (-v=6 shows requests); bodies are never logged")
}

// addSkipUnreachableFlag offers --skip-unreachable on a command.
func (g *GlobalOptions) addSkipUnreachableFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&g.SkipUnreachable, "skip-unreachable", false, "report clusters that cannot be reached (refused, DNS, timeout on the first request) as skipped, not failed; they do not count against maxFailures, and the command exits 3")
}

// loadFleet reads the fleet file.
func (g *GlobalOptions) loadFleet() (*fleet.Fleet, error) {
	return fleet.Load(fleet.Locate(g.FleetFile))
}

// selected loads the fleet file and selects clusters.
func (g *GlobalOptions) selected(sel fleet.Selection) (*fleet.Fleet, []*fleet.Cluster, error) {
	f, err := g.loadFleet()
	if err != nil {
		return nil, nil, err
	}
	clusters, err := f.Select(sel)
	if err != nil {
		return nil, nil, err
	}
	return f, clusters, nil
}

// reached is selected, with the selected clusters' contexts checked
// (their kubeconfigs resolved, identity pins and one-server rule): the
// prelude of every command that goes to the clusters it selects.
func (g *GlobalOptions) reached(ctx context.Context, sel fleet.Selection) (*fleet.Fleet, []*fleet.Cluster, error) {
	f, clusters, err := g.selected(sel)
	if err != nil {
		return nil, nil, err
	}
	if err := checkContexts(ctx, g, f, clusters); err != nil {
		return nil, nil, err
	}
	return f, clusters, nil
}

// namespace is -n/--namespace, or "".
func (g *GlobalOptions) namespace() string {
	if g.ConfigFlags.Namespace == nil {
		return ""
	}
	return *g.ConfigFlags.Namespace
}

// prefixer sizes cluster prefixes for the clusters and decides on colour.
func (g *GlobalOptions) prefixer(clusters []*fleet.Cluster) *output.Prefixer {
	names, _ := fleet.Index(clusters)
	return output.NewPrefixer(names, output.UseColor(g.Out, g.NoColor))
}

// WriteOptions are the flags apply and delete share: -o json, --dry-run,
// --yes and --parallel.
type WriteOptions struct {
	Output   string
	DryRun   string
	Yes      bool
	Parallel int
}

func (w *WriteOptions) addFlags(cmd *cobra.Command, verb, yes, parallel string) {
	cmd.Flags().StringVarP(&w.Output, "output", "o", "", "output format: json (JSON Lines: one object per event and line; jq -s . makes one array)")
	cmd.Flags().StringVar(&w.DryRun, "dry-run", "none", fmt.Sprintf(`"server": everything but the %s; "none": %s`, verb, verb))
	cmd.Flags().BoolVarP(&w.Yes, "yes", "y", false, yes)
	cmd.Flags().IntVar(&w.Parallel, "parallel", 10, parallel)
}

func (w *WriteOptions) validate() error {
	if err := validateJSONOutput(w.Output); err != nil {
		return err
	}
	switch {
	case w.DryRun != "none" && w.DryRun != "server":
		return fmt.Errorf(`--dry-run %q: want "server" or "none"`, w.DryRun)
	case w.Parallel < 1:
		return fmt.Errorf("--parallel must be at least 1")
	}
	return nil
}

// dryRun reports --dry-run=server.
func (w *WriteOptions) dryRun() bool { return w.DryRun == "server" }

// confirmer is how a rollout of r asks before writing to a protected
// group (prompt.Asker.Protected); nothing with --yes or --dry-run.
func (w *WriteOptions) confirmer(ctx context.Context, g *GlobalOptions, r *rendered.Set, verb string) (func(string, []string) error, error) {
	if w.Yes || w.dryRun() {
		return nil, nil
	}
	return g.asker().Protected(ctx, r.Fleet, r.Clusters, verb)
}

// validateJSONOutput accepts -o json or no -o.
func validateJSONOutput(output string) error {
	if output != "" && output != "json" {
		return fmt.Errorf("--output %q: want json", output)
	}
	return nil
}

// SelectOptions are --group, --cluster and --selector.
type SelectOptions struct {
	fleet.Selection
}

func (s *SelectOptions) addFlags(cmd *cobra.Command, g *GlobalOptions) {
	cmd.Flags().StringSliceVarP(&s.Groups, "group", "g", nil, "select the clusters of a group (repeatable)")
	cmd.Flags().StringSliceVarP(&s.Clusters, "cluster", "c", nil, "select a cluster by name, globs allowed: 'prod-*' (repeatable)")
	cmd.Flags().StringVarP(&s.Selector, "selector", "l", "", "select clusters by label, e.g. 'region=eu,tier!=edge'")
	cmd.Flags().StringSliceVar(&s.Contexts, "kube-context", nil, "select the clusters that use this kubeconfig context (repeatable; for k9s plugins)")
	_ = cmd.RegisterFlagCompletionFunc("group", g.complete(func(f *fleet.Fleet) (names []string) {
		for _, gr := range f.Groups {
			names = append(names, gr.Name)
		}
		return names
	}))
	_ = cmd.RegisterFlagCompletionFunc("cluster", g.complete(func(f *fleet.Fleet) (names []string) {
		for _, c := range f.Clusters {
			names = append(names, c.Name)
		}
		return names
	}))
}

// complete completes names from the fleet file.
func (g *GlobalOptions) complete(names func(*fleet.Fleet) []string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		f, err := g.loadFleet()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names(f), cobra.ShellCompDirectiveNoFileComp
	}
}

// SourceOptions are the flags that say what to render (a rendered.Source:
// an ad hoc -k, -j, -f or --chart source, or the fleet file's apps).
type SourceOptions struct {
	rendered.Source
	// withTests is no flag: apply and reconcile set it for their render
	// (rendered.Config.Tests).
	withTests bool
}

func (s *SourceOptions) addFlags(cmd *cobra.Command, g *GlobalOptions) {
	cmd.Flags().StringVarP(&s.Kustomize, "kustomize", "k", "", "render a kustomize folder; per cluster DIR/<cluster>, else DIR/<group>, else DIR")
	cmd.Flags().StringVarP(&s.Jsonnet, "jsonnet", "j", "", "render a jsonnet file, given the cluster as TLA and ext var 'cluster'")
	cmd.Flags().StringVarP(&s.Manifests, "filename", "f", "", "plain YAML/JSON manifests: a file, a folder (recursive) or - for stdin")
	cmd.Flags().StringSliceVarP(&s.JPath, "jpath", "J", nil, "jsonnet library folder (repeatable; the last wins; vendor/ beside the file is searched too)")
	cmd.Flags().StringVar(&s.Chart, "chart", "", "render a Helm chart: a folder, a .tgz, oci://REF, or a chart name with --repo")
	cmd.Flags().StringVar(&s.ChartVersion, "chart-version", "", "the --chart's version (required from a repository or registry)")
	cmd.Flags().StringVar(&s.Repo, "repo", "", "the --chart's HTTP chart repository")
	cmd.Flags().StringArrayVar(&s.ValuesFiles, "values", nil, "a values file for --chart (repeatable, merged in order; ${var} substituted per cluster)")
	cmd.Flags().StringArrayVar(&s.Set, "set", nil, "a value for --chart, key=value as helm --set (repeatable, applied last)")
	cmd.Flags().BoolVar(&s.PlainHTTP, "plain-http", false, "reach the --chart's OCI registry over HTTP, as helm --plain-http")
	cmd.Flags().StringVar(&s.Name, "name", "", "app name of an ad hoc -k/-j/-f/--chart source (default: its base name)")
	cmd.Flags().StringSliceVar(&s.Apps, "app", nil, "only these apps of the fleet file (repeatable)")
	_ = cmd.MarkFlagDirname("kustomize")
	_ = cmd.MarkFlagFilename("jsonnet", "jsonnet", "libsonnet")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.RegisterFlagCompletionFunc("app", g.complete(func(f *fleet.Fleet) (names []string) {
		for _, a := range f.Apps {
			names = append(names, a.Name)
		}
		return names
	}))
}

// render renders what src says for the selected clusters, all or nothing
// (rendered.Render). With contexts, the command talks to clusters: every
// selected cluster's context must exist first.
func (g *GlobalOptions) render(ctx context.Context, sel fleet.Selection, src *SourceOptions, contexts bool) (*rendered.Set, error) {
	c, err := g.renderConfig(sel, src, contexts)
	if err != nil {
		return nil, err
	}
	return rendered.Render(ctx, c)
}

// renderConfig loads the fleet file and says what to render of it: the
// flags', with this command's clusters, -n and render engine.
func (g *GlobalOptions) renderConfig(sel fleet.Selection, src *SourceOptions, contexts bool) (rendered.Config, error) {
	f, err := g.loadFleet()
	if err != nil {
		return rendered.Config{}, err
	}
	return rendered.Config{Fleet: f, Selection: sel, Source: src.Source, Namespace: g.namespace(), Contexts: contexts, Connector: connector{g}, Engine: g.engine(), Fetcher: g.fetcher(), Tests: src.withTests}, nil
}

// connector is how a render reaches the clusters: the command's
// kubeconfigs and clients.
type connector struct{ g *GlobalOptions }

func (c connector) CheckContexts(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster) error {
	return checkContexts(ctx, c.g, f, clusters)
}

func (c connector) Connect(ctx context.Context, f *fleet.Fleet, cl *fleet.Cluster) (*kube.Client, error) {
	return c.g.clusters().Connect(ctx, f, cl)
}

// Idle closes a cluster's idle connections.
func (c connector) Idle(cluster string) { c.g.clusters().Idle(cluster) }

// Explain says a cluster that never answered is unreachable
// (GlobalOptions.explain).
func (c connector) Explain(ctx context.Context, cluster string, err error) error {
	return c.g.clusters().Explain(ctx, cluster, err)
}

// Kubeconfig writes a kubeconfig that reaches only cl, for its group's
// checks: of a delivered cluster, one that reads it only, through this
// process (kube.ReadOnlyKubeconfig).
func (c connector) Kubeconfig(f *fleet.Fleet, cl *fleet.Cluster) (string, func(), error) {
	if f.DeliveryOf(cl) != nil {
		return kube.ReadOnlyKubeconfig(c.g.ConfigFlags, &c.g.sources, f, cl)
	}
	return kube.SingleContextKubeconfig(c.g.ConfigFlags, &c.g.sources, f, cl)
}

// engine is a render engine for this command: standard input for -f -,
// the chart cache (charts pinned by fleet.lock, under their digest), and
// SOPS-encrypted files decrypted, the keys required.
func (g *GlobalOptions) engine() *render.Engine {
	return &render.Engine{Stdin: g.In, ChartCache: g.chartCache(), Secrets: &sopsfile.Decrypter{Mask: g.mask}, Trace: g.ErrOut}
}

// chartCache is where charts are cached (render.ChartCacheDir), with
// kubectl's --cache-dir when it is given.
func (g *GlobalOptions) chartCache() string {
	var dir string
	if cf := g.ConfigFlags; cf != nil && cf.CacheDir != nil && *cf.CacheDir != *kube.NewConfigFlags().CacheDir {
		dir = *cf.CacheDir
	}
	return render.ChartCacheDir(dir)
}
