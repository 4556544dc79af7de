package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	ci "helm.sh/helm/v4/pkg/chart"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"
)

// Where charts come from: local folders and archives, chart repositories
// and OCI registries as the helm CLI reaches them, the cache of pinned
// charts, and the copy each render gets of a chart loaded once.

// helmEnv is how the helm CLI finds repositories, registries and their
// credentials (HELM_* variables, ~/.config/helm), with the chart cache
// kubectl fleet's own when CacheDir is set.
func helmEnv(cacheDir string) *cli.EnvSettings {
	s := cli.New()
	if cacheDir != "" {
		s.RepositoryCache = filepath.Join(cacheDir, "repository")
		s.ContentCache = filepath.Join(cacheDir, "content")
	}
	return s
}

// Remote reports whether h's chart comes from a repository or a registry.
func (h *Helm) Remote() bool { return h.Repo != "" || registry.IsOCI(h.Chart) }

// locateChart returns the local path of h's chart: a local one as is; one
// from a repository or registry downloaded, or, pinned by a digest, found
// in the cache under it (no network) or downloaded and checked against it.
func (e *Engine) locateChart(h *Helm) (string, error) {
	if !h.Remote() {
		if _, err := os.Stat(h.Chart); err != nil {
			return "", fmt.Errorf("chart %s: %w", h.Chart, err)
		}
		return h.Chart, nil
	}
	if h.Digest == "" {
		return e.Download(h)
	}
	cached := filepath.Join(e.ChartCache, "sha256", strings.TrimPrefix(h.Digest, "sha256:")+".tgz")
	if e.ChartCache != "" {
		if _, err := os.Stat(cached); err == nil {
			return cached, nil
		}
	}
	path, err := e.Download(h)
	if err != nil {
		return "", err
	}
	got, err := FileDigest(path)
	if err != nil {
		return "", err
	}
	if got != h.Digest {
		return "", fmt.Errorf("chart %s %s: its archive's digest is %s, but fleet.lock pins %s: the chart changed under the same version; refusing it (kubectl fleet deps update accepts the new one)", h.Chart, h.Version, got, h.Digest)
	}
	if e.ChartCache == "" {
		return path, nil
	}
	if err := copyFile(path, cached); err != nil {
		return "", fmt.Errorf("caching chart %s: %w", h.Chart, err)
	}
	return cached, nil
}

// FileDigest is "sha256:<hex>" of a file's content.
func FileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// copyFile copies src to dst (its folder made), through a temporary file
// renamed into place, so that a reader never sees half of it.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".chart-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// BuildDependencies fetches the dependencies a local chart folder's
// Chart.yaml names (and Chart.lock pins) into its charts/ folder, as helm
// dependency build does, unless they are there already. It reports
// whether it fetched anything.
func (e *Engine) BuildDependencies(h *Helm) (bool, error) {
	if h.Remote() {
		return false, nil
	}
	if info, err := os.Stat(h.Chart); err != nil || !info.IsDir() {
		return false, err // a .tgz carries its dependencies
	}
	ch, err := loader.Load(h.Chart)
	if err != nil {
		return false, err
	}
	if checkDependencies(ch) == nil {
		return false, nil
	}
	settings := helmEnv(e.ChartCache)
	rc, err := registry.NewClient(registry.ClientOptWriter(io.Discard), registry.ClientOptCredentialsFile(settings.RegistryConfig))
	if err != nil {
		return false, err
	}
	m := &downloader.Manager{
		Out: io.Discard, ChartPath: h.Chart, Getters: getter.All(settings), RegistryClient: rc,
		RepositoryConfig: settings.RepositoryConfig, RepositoryCache: settings.RepositoryCache, ContentCache: settings.ContentCache,
	}
	if err := m.Build(); err != nil {
		return false, fmt.Errorf("chart %s: fetching its dependencies: %w", h.Chart, err)
	}
	return true, nil
}

// Download fetches a chart from its repository or registry as the helm
// CLI does, with its credentials, into helm's cache, and returns the
// archive's path (what kubectl fleet deps update pins).
func (e *Engine) Download(h *Helm) (string, error) {
	settings := helmEnv(e.ChartCache)
	locate := action.NewInstall(&action.Configuration{})
	locate.RepoURL, locate.Version, locate.PlainHTTP = h.Repo, h.Version, h.PlainHTTP
	if registry.IsOCI(h.Chart) {
		opts := []registry.ClientOption{registry.ClientOptWriter(io.Discard), registry.ClientOptCredentialsFile(settings.RegistryConfig), registry.ClientOptEnableCache(true)}
		if h.PlainHTTP {
			opts = append(opts, registry.ClientOptPlainHTTP())
		}
		rc, err := registry.NewClient(opts...)
		if err != nil {
			return "", err
		}
		locate.SetRegistryClient(rc)
	}
	return locate.LocateChart(h.Chart, settings)
}

// loadChart reads h's chart once per run, however many clusters render
// it, and returns a copy of its own for one render.
func (e *Engine) loadChart(h *Helm) (*chart.Chart, error) {
	ch, err := e.loaded(h)
	if err != nil {
		return nil, err
	}
	return copyChart(ch), nil
}

// loaded is h's chart as read, shared: never rendered as is.
func (e *Engine) loaded(h *Helm) (*chart.Chart, error) {
	key := strings.Join([]string{h.Chart, h.Repo, h.Version}, "\x00")
	return e.charts.Do(key, func() (*chart.Chart, error) {
		path, err := e.locateChart(h)
		if err != nil {
			return nil, err
		}
		ch, err := loader.Load(path)
		if err != nil {
			return nil, fmt.Errorf("loading chart %s: %w", h.Chart, err)
		}
		if err := checkDependencies(ch); err != nil {
			return nil, fmt.Errorf("chart %s: %w (vendor them into charts/, as helm dependency build does)", h.Chart, err)
		}
		return ch, nil
	})
}

// checkDependencies refuses a chart whose Chart.yaml dependencies are not
// in its charts/ folder.
func checkDependencies(ch *chart.Chart) error {
	ac, err := ci.NewAccessor(ch)
	if err != nil {
		return err
	}
	if req := ac.MetaDependencies(); len(req) > 0 {
		return action.CheckDependencies(ch, req)
	}
	return nil
}

// chartName is "name@version" of a chart loaded already.
func (e *Engine) chartName(h *Helm) string {
	ch, err := e.loaded(h)
	if err != nil || ch.Metadata == nil {
		return ""
	}
	return ch.Metadata.Name + "@" + ch.Metadata.Version
}

// copyChart copies what rendering changes of a chart (its metadata's
// dependencies, its values, the tree of subcharts), so that clusters
// render one loaded chart concurrently. Files are shared: nothing writes
// them.
func copyChart(c *chart.Chart) *chart.Chart {
	out := *c
	if c.Metadata != nil {
		md := *c.Metadata
		md.Dependencies = make([]*chart.Dependency, len(c.Metadata.Dependencies))
		for i, d := range c.Metadata.Dependencies {
			dc := *d
			md.Dependencies[i] = &dc
		}
		out.Metadata = &md
	}
	out.Values = deepCopyMap(c.Values)
	deps := make([]*chart.Chart, len(c.Dependencies()))
	for i, d := range c.Dependencies() {
		deps[i] = copyChart(d)
	}
	out.SetDependencies(deps...)
	return &out
}

func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return deepCopyMap(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = deepCopyValue(x)
		}
		return out
	}
	return v
}

// ChartCacheDir is where charts are cached: $KUBECTL_FLEET_CHART_CACHE,
// else kubectl-fleet-charts in kubectlCache (kubectl's --cache-dir, when
// it is given), else kubectl-fleet/charts in the user's cache folder
// (~/.cache on Linux).
func ChartCacheDir(kubectlCache string) string {
	if dir := os.Getenv("KUBECTL_FLEET_CHART_CACHE"); dir != "" {
		return dir
	}
	if kubectlCache != "" {
		return filepath.Join(kubectlCache, "kubectl-fleet-charts")
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "kubectl-fleet", "charts")
	}
	return ""
}
