package rendered

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/ocisource"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// Source says what to render: an ad hoc source (a kustomize folder, a
// jsonnet file, manifests or a Helm chart, given on the command line) or
// the fleet file's apps. pkg/cmd binds its flags to these fields and
// checks them with Validate.
type Source struct {
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
}

// App is one named source with the clusters it goes to.
type App struct {
	Name string
	// Source is what renders; for an oci:// source, its Path is the
	// reference until Fetch unpacks it.
	Source render.Source
	// OCI is an oci:// source to fetch, and Path the folder or file
	// inside it; nil for a local source.
	OCI  *ocisource.Spec
	Path string
	// Fetched is what Fetch fetched of OCI.
	Fetched  *ocisource.Fetched
	Clusters []*fleet.Cluster
	// Tests is the app's test source (apps[].tests, or a chart's test
	// hooks), if any.
	Tests *render.Source
	// CreateNamespace is the namespace created for the app when no app's
	// render on a cluster has it (apps[].createNamespace), or "".
	CreateNamespace string
}

// AppsOf names the apps that go to c, in order.
func AppsOf(apps []App, c *fleet.Cluster) []string {
	var out []string
	for _, a := range apps {
		if a.GoesTo(c) {
			out = append(out, a.Name)
		}
	}
	return out
}

// GoesTo reports whether the app is deployed to c.
func (a App) GoesTo(c *fleet.Cluster) bool { return slices.Contains(a.Clusters, c) }

// Resolve says what to render for the selected clusters: the ad hoc source
// for all of them, or the fleet file's apps for the clusters each targets.
// A namespace that is not "" (-n) is every app's.
func (s *Source) Resolve(f *fleet.Fleet, clusters []*fleet.Cluster, namespace string) ([]App, error) {
	if adhoc, ok := s.Adhoc(); ok {
		if namespace != "" {
			adhoc.Namespace = namespace
		}
		ap := App{Name: s.appName(), Source: adhoc, Clusters: clusters}
		if adhoc.Type != render.HelmChart && ocisource.Is(adhoc.Path) { // a chart's oci:// is Helm's
			ap.OCI = &ocisource.Spec{Ref: adhoc.Path}
		}
		return []App{ap}, nil
	}
	if len(f.Apps) == 0 {
		return nil, fmt.Errorf("nothing to render: give -k DIR, -j FILE or -f PATH, or define apps in %s", f.Path)
	}
	for _, name := range s.Apps {
		if f.App(name) == nil {
			return nil, fmt.Errorf("--app %s: no such app in %s%s", name, f.Path, appsHint(f, name))
		}
	}
	var out []App
	lock := lockOf(f) // read once, for the first chart or source it pins
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
			h, err := helmOf(f, a, lock)
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
		ap := App{Name: a.Name, Source: src, Clusters: targets}
		if ref := a.OCI(); ref != "" {
			spec, err := ociOf(f, a, lock)
			if err != nil {
				return nil, err
			}
			ap.Source.Path, ap.OCI, ap.Path = ref, spec, a.Path
		}
		if a.CreatesNamespace() {
			ap.CreateNamespace = src.Namespace
		}
		if a.Helm != nil && a.Tests == "" {
			// The chart's test hooks are the app's tests.
			tests := *src.Helm
			tests.Tests = true
			ap.Tests = &render.Source{Type: render.HelmChart, Path: src.Path, Namespace: src.Namespace, Helm: &tests}
		}
		if a.Tests != "" {
			ap.Tests = &render.Source{Type: render.Manifests, Path: f.ResolvePath(a.Tests), Namespace: src.Namespace}
			if isKustomization(ap.Tests.Path) {
				ap.Tests.Type = render.Kustomize
			}
		}
		out = append(out, ap)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no app of %s deploys to the selected clusters", f.Path)
	}
	return out, nil
}

// appsHint is what follows an unknown --app: the app it may mean, and
// the fleet's apps.
func appsHint(f *fleet.Fleet, name string) string {
	names := make([]string, len(f.Apps))
	for i, a := range f.Apps {
		names[i] = a.Name
	}
	hint := ""
	if h := output.DidYouMean(name, names); h != "" {
		hint = " (" + h + ")"
	}
	return hint + "; its apps: " + strings.Join(names, ", ")
}

// Adhoc returns the -k/-j/-f/--chart source, if one was given.
func (s *Source) Adhoc() (render.Source, bool) {
	for _, p := range []struct {
		t    render.SourceType
		path string
	}{{render.Kustomize, s.Kustomize}, {render.Jsonnet, s.Jsonnet}, {render.Manifests, s.Manifests}} {
		if ocisource.Is(p.path) {
			return render.Source{Type: p.t, Path: p.path}, true // fetched by Fetch
		}
	}
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

// helmOf is the render's view of an app's chart: ChartOf, and a chart
// from a repository or registry pinned by fleet.lock to its exact version
// and digest, when the lock has it.
func helmOf(f *fleet.Fleet, a *fleet.App, lock func() (*fleet.Lock, error)) (*render.Helm, error) {
	out := ChartOf(f, a)
	if !out.Remote() {
		return out, nil
	}
	l, err := lock()
	if err != nil {
		return nil, err
	}
	switch locked := l.Of(a.Name); {
	case locked == nil:
	case !locked.Matches(a.Helm):
		return nil, fmt.Errorf("app %s: %s pins chart %s %s (repo %q), but the fleet file asks for %s %s (repo %q): run kubectl fleet deps update", a.Name, fleet.LockFile, locked.Chart, locked.Version, locked.Repo, a.Helm.Chart, a.Helm.Version, a.Helm.Repo)
	default:
		out.Version, out.Digest = locked.Resolved, locked.Digest
	}
	return out, nil
}

// lockOf reads f's fleet.lock when first asked, once.
func lockOf(f *fleet.Fleet) func() (*fleet.Lock, error) {
	var (
		once sync.Once
		l    *fleet.Lock
		err  error
	)
	return func() (*fleet.Lock, error) {
		once.Do(func() { l, err = fleet.LoadLock(f.Path) })
		return l, err
	}
}

// ChartOf is the render's view of an app's chart (apps[].helm), local
// paths resolved from the fleet file's folder, before fleet.lock pins it:
// what deps update resolves.
func ChartOf(f *fleet.Fleet, a *fleet.App) *render.Helm {
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

// appName is Name, else the base name of the source without extension:
// -k apps/web → web, -j web.jsonnet → web, -f - → stdin.
func (s *Source) appName() string {
	if s.Name != "" {
		return s.Name
	}
	if s.Manifests == "-" {
		return "stdin"
	}
	p := s.Kustomize + s.Jsonnet + s.Manifests + s.Chart
	if ref, err := ocisource.Parse(p, false); err == nil {
		p = ref.Context().RepositoryStr() // oci://host/bases/web:v1: web
	}
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

// isKustomization reports whether dir holds a kustomization.
func isKustomization(dir string) bool {
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// Validate checks that the flags of a source go together: one of -k,
// -j, -f and --chart at most, the Helm flags with --chart only, --app
// with the fleet file's apps only.
func (s Source) Validate() error {
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
		if err := fleet.CheckAppNames(s.Name); err != nil {
			return fmt.Errorf("--name: %w", err)
		}
	}
	return nil
}
