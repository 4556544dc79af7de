package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-fleet/kubectl-fleet/internal/memo"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
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

	// clients holds one client per cluster for the command's run.
	clients memo.Memo[string, *kube.Client]
	// verified holds the clients whose identity pins were verified.
	verified memo.Memo[string, *kube.Client]
	// sources holds the clusters' kubeconfigFrom, written to temporary
	// files; Execute removes them.
	sources kube.KubeconfigSources
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
	cmd.PersistentFlags().IntVar(&g.LogLevel, "v", 0, "client-go log level, as kubectl's -v (6 shows requests); bodies are never logged")
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

// index lists the clusters' names and maps names to clusters.
func index(clusters []*fleet.Cluster) ([]string, map[string]*fleet.Cluster) {
	names := make([]string, len(clusters))
	byName := make(map[string]*fleet.Cluster, len(clusters))
	for i, c := range clusters {
		names[i], byName[c.Name] = c.Name, c
	}
	return names, byName
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
	names, _ := index(clusters)
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
	cmd.Flags().StringVarP(&w.Output, "output", "o", "", "output format: json (one object per event and line)")
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

// SourceOptions say what to render: an ad hoc source (-k, -j or -f) or the
// fleet file's apps.
type SourceOptions struct {
	Kustomize string
	Jsonnet   string
	Manifests string
	JPath     []string
	// Chart is an ad hoc Helm chart (--chart), with ChartVersion, Repo,
	// ValuesFiles (--values) and Set.
	Chart        string
	ChartVersion string
	Repo         string
	ValuesFiles  []string
	Set          []string
	PlainHTTP    bool
	// Name names an ad hoc source's app; default: the source's base name.
	Name string
	// Apps narrows the fleet file's apps.
	Apps []string
	// withTests renders the apps' tests too.
	withTests bool
	// warm, when set, is started once the clusters are selected, to run
	// beside the render (apply: the first requests to the clusters).
	warm func(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster)
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

func (s *SourceOptions) validate() error {
	n := 0
	for _, v := range []string{s.Kustomize, s.Jsonnet, s.Manifests, s.Chart} {
		if v != "" {
			n++
		}
	}
	helmOnly := s.ChartVersion != "" || s.Repo != "" || len(s.ValuesFiles) > 0 || len(s.Set) > 0 || s.PlainHTTP
	switch {
	case n > 1:
		return fmt.Errorf("-k/--kustomize, -j/--jsonnet, -f/--filename and --chart are mutually exclusive")
	case n == 1 && len(s.Apps) > 0:
		return fmt.Errorf("--app selects apps of the fleet file; it does not go with -k, -j, -f or --chart")
	case n == 0 && s.Name != "":
		return fmt.Errorf("--name names an ad hoc source; give -k, -j, -f or --chart with it")
	case helmOnly && s.Chart == "":
		return fmt.Errorf("--chart-version, --repo, --values, --set and --plain-http go with --chart")
	case (s.Repo != "" || strings.HasPrefix(s.Chart, "oci://")) && s.ChartVersion == "":
		return fmt.Errorf("--chart-version is required for a chart from a repository or registry")
	case len(s.JPath) > 0 && s.Jsonnet == "" && n > 0:
		return fmt.Errorf("-J/--jpath only works with -j/--jsonnet")
	}
	if s.Name != "" {
		if err := validateAppName(s.Name); err != nil {
			return fmt.Errorf("--name: %w", err)
		}
	}
	return nil
}

// app is one named source with the clusters it goes to.
type app struct {
	name     string
	source   render.Source
	clusters []*fleet.Cluster
	// tests is the app's test source (apps[].tests), if any.
	tests *render.Source
}

// goesTo reports whether the app is deployed to c.
func (a app) goesTo(c *fleet.Cluster) bool { return slices.Contains(a.clusters, c) }

// apps resolves what to render for the selected clusters: the ad hoc source
// for all of them, or the fleet file's apps for the clusters each targets.
func (s *SourceOptions) apps(f *fleet.Fleet, clusters []*fleet.Cluster, namespace string) ([]app, error) {
	if adhoc, ok := s.adhoc(); ok {
		if namespace != "" {
			adhoc.Namespace = namespace
		}
		return []app{{name: s.appName(), source: adhoc, clusters: clusters}}, nil
	}
	if len(f.Apps) == 0 {
		return nil, fmt.Errorf("nothing to render: give -k DIR, -j FILE or -f PATH, or define apps in %s", f.Path)
	}
	for _, name := range s.Apps {
		if f.App(name) == nil {
			return nil, fmt.Errorf("--app %s: no such app in %s", name, f.Path)
		}
	}
	var (
		out  []app
		lock *fleet.Lock // read once, for the first chart it pins
	)
	for i := range f.Apps {
		a := &f.Apps[i]
		if len(s.Apps) > 0 && !slices.Contains(s.Apps, a.Name) {
			continue
		}
		targets := a.Targets(clusters)
		if len(targets) == 0 {
			continue
		}
		src := render.Source{Namespace: a.Namespace, JPath: resolveAll(f, a.JPath), NoSubstitute: a.Substitute != nil && !*a.Substitute}
		switch {
		case a.Helm != nil:
			h, err := helmOf(f, a, &lock)
			if err != nil {
				return nil, err
			}
			src.Type, src.Helm, src.Path = render.HelmChart, h, h.Chart
		case a.Kustomize != "":
			src.Type, src.Path = render.Kustomize, f.ResolvePath(a.Kustomize)
		case a.Jsonnet != "":
			src.Type, src.Path = render.Jsonnet, f.ResolvePath(a.Jsonnet)
		default:
			src.Type, src.Path = render.Manifests, f.ResolvePath(a.Manifests)
		}
		if namespace != "" {
			src.Namespace = namespace
		}
		ap := app{name: a.Name, source: src, clusters: targets}
		if a.Helm != nil && a.Tests == "" {
			// The chart's test hooks are the app's tests.
			tests := *src.Helm
			tests.Tests = true
			ap.tests = &render.Source{Type: render.HelmChart, Path: src.Path, Namespace: src.Namespace, Helm: &tests}
		}
		if a.Tests != "" {
			ap.tests = &render.Source{Type: render.Manifests, Path: f.ResolvePath(a.Tests), Namespace: src.Namespace}
			if isKustomization(ap.tests.Path) {
				ap.tests.Type = render.Kustomize
			}
		}
		out = append(out, ap)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no app of %s deploys to the selected clusters", f.Path)
	}
	return out, nil
}

// adhoc returns the -k/-j/-f source, if one was given.
func (s *SourceOptions) adhoc() (render.Source, bool) {
	switch {
	case s.Kustomize != "":
		return render.Source{Type: render.Kustomize, Path: absPath(s.Kustomize)}, true
	case s.Jsonnet != "":
		jpath := make([]string, len(s.JPath))
		for i, p := range s.JPath {
			jpath[i] = absPath(p)
		}
		return render.Source{Type: render.Jsonnet, Path: absPath(s.Jsonnet), JPath: jpath}, true
	case s.Manifests == "-":
		return render.Source{Type: render.Manifests, Path: "-"}, true
	case s.Manifests != "":
		return render.Source{Type: render.Manifests, Path: absPath(s.Manifests)}, true
	case s.Chart != "":
		h := &render.Helm{Chart: s.Chart, Repo: s.Repo, Version: s.ChartVersion, Values: make([]string, len(s.ValuesFiles)), Set: s.Set, IncludeCRDs: true, PlainHTTP: s.PlainHTTP}
		if s.Repo == "" && !strings.HasPrefix(s.Chart, "oci://") {
			h.Chart = absPath(s.Chart)
		}
		for i, v := range s.ValuesFiles {
			h.Values[i] = absPath(v)
		}
		return render.Source{Type: render.HelmChart, Path: h.Chart, Helm: h}, true
	}
	return render.Source{}, false
}

// helmOf is the render's view of an app's chart: local paths resolved from
// the fleet file's folder; a chart from a repository or registry pinned by
// fleet.lock to its exact version and digest, when the lock has it. lock
// is the lock read so far (nil: not yet), read once for a whole fleet.
func helmOf(f *fleet.Fleet, a *fleet.App, lock **fleet.Lock) (*render.Helm, error) {
	out := unlockedHelmOf(f, a)
	if !out.Remote() {
		return out, nil
	}
	if *lock == nil {
		l, err := fleet.LoadLock(f.Path)
		if err != nil {
			return nil, err
		}
		*lock = l
	}
	switch locked := (*lock).Of(a.Name); {
	case locked == nil:
	case !locked.Matches(a.Helm):
		return nil, fmt.Errorf("app %s: %s pins chart %s %s (repo %q), but the fleet file asks for %s %s (repo %q): run kubectl fleet deps update", a.Name, fleet.LockFile, locked.Chart, locked.Version, locked.Repo, a.Helm.Chart, a.Helm.Version, a.Helm.Repo)
	default:
		out.Version, out.Digest = locked.Resolved, locked.Digest
	}
	return out, nil
}

// unlockedHelmOf is helmOf without the lock: what deps update resolves.
func unlockedHelmOf(f *fleet.Fleet, a *fleet.App) *render.Helm {
	h := a.Helm
	out := &render.Helm{Chart: h.Chart, Repo: h.Repo, Version: h.Version, ReleaseName: h.ReleaseName, ValuesInline: h.ValuesInline, IncludeCRDs: h.IncludeCRDs == nil || *h.IncludeCRDs, PlainHTTP: h.PlainHTTP}
	if h.Repo == "" && !strings.HasPrefix(h.Chart, "oci://") {
		out.Chart = f.ResolvePath(h.Chart)
	}
	for _, v := range h.Values {
		out.Values = append(out.Values, f.ResolvePath(v))
	}
	return out
}

// appName is --name, else the base name of the source without extension:
// -k apps/web → web, -j web.jsonnet → web, -f - → stdin.
func (s *SourceOptions) appName() string {
	if s.Name != "" {
		return s.Name
	}
	if s.Manifests == "-" {
		return "stdin"
	}
	p := s.Kustomize + s.Jsonnet + s.Manifests + s.Chart
	base := filepath.Base(filepath.Clean(p))
	if s.Jsonnet != "" || s.Manifests != "" || s.Chart != "" {
		base = strings.TrimSuffix(base, filepath.Ext(base))
	}
	if base == "." || base == string(filepath.Separator) {
		if wd, err := os.Getwd(); err == nil {
			base = filepath.Base(wd)
		}
	}
	// Made a DNS label: it names the app's inventory.
	name := strings.Trim(invalidNameChars.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	if name == "" {
		name = "app"
	}
	return name
}

var invalidNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

func validateAppName(name string) error {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("%q is not a valid app name: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}

func resolveAll(f *fleet.Fleet, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = f.ResolvePath(p)
	}
	return out
}

func absPath(p string) string {
	p = fleet.ExpandHome(p)
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// targets lists every (cluster, app) pair to render, cluster by cluster in
// fleet order, apps in fleet order within a cluster. live holds attributes
// read from clusters; they override the fleet file's.
// With tests, the targets are the apps' tests instead.
func targets(f *fleet.Fleet, clusters []*fleet.Cluster, apps []app, live map[string]map[string]any, tests bool) []render.Target {
	var out []render.Target
	for _, c := range clusters {
		rc := render.ClusterOf(f, c)
		for k, v := range live[c.Name] {
			rc.Attributes[k] = v
		}
		for _, a := range apps {
			switch {
			case !a.goesTo(c):
			case !tests:
				out = append(out, render.Target{Cluster: rc, App: a.name, Source: a.source})
			case a.tests != nil:
				out = append(out, render.Target{Cluster: rc, App: a.name, Source: *a.tests})
			}
		}
	}
	return out
}

// isKustomization reports whether dir holds a kustomization.
func isKustomization(dir string) bool {
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}
