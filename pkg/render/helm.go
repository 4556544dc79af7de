package render

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	"helm.sh/helm/v4/pkg/action"
	ci "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

// Helm is a Helm chart source: the chart, where it comes from, and the
// values it is rendered with (package helm.sh/helm/v4, in process; no helm
// binary).
type Helm struct {
	// Chart is a local folder or .tgz (an absolute path), an oci:// URL,
	// or a chart's name in Repo.
	Chart string
	// Repo is an HTTP chart repository's URL, for a chart by name.
	Repo string
	// Version is the chart version (a semver range for a repository; ""
	// is the latest).
	Version string
	// ReleaseName is .Release.Name; the app's name when empty.
	ReleaseName string
	// Values are values files, merged in order as helm's -f: absolute
	// paths, which may hold ${var}; their content gets the cluster's
	// substitution, typed.
	Values []string
	// ValuesInline are merged after the files, with substitution.
	ValuesInline map[string]any
	// Set are --set key=value pairs, merged last.
	Set []string
	// IncludeCRDs renders the chart's crds/ folder too.
	IncludeCRDs bool
	// PlainHTTP talks to an OCI registry over HTTP (helm's --plain-http).
	PlainHTTP bool
	// Digest, when set, is the sha256 the chart's archive must have
	// ("sha256:<hex>", from fleet.lock): a chart from a repository or
	// registry whose archive has another is an error, and one cached under
	// its digest is used without the network.
	Digest string
	// Tests renders the chart's test hooks alone, as the app's tests: a
	// test Pod becomes a Job of the same name, whose result the tests
	// wait for.
	Tests bool
}

// The attributes that give a chart's templates the cluster's
// .Capabilities when the render does not ask the cluster.
const (
	KubeVersionAttribute = "kubeVersion"
	APIVersionsAttribute = "apiVersions"
	// DefaultKubeVersion is .Capabilities.KubeVersion without the
	// attribute: the Kubernetes version kubectl fleet is built against.
	DefaultKubeVersion = "v1.37.0"
)

// helmHookPhase is the phase a hook of these events runs in: before the
// chart's other objects, or after them.
func helmHookPhase(events []release.HookEvent) (phase int, ok bool) {
	for _, e := range events {
		switch e {
		case release.HookPreInstall, release.HookPreUpgrade:
			return -1, true
		case release.HookPostInstall, release.HookPostUpgrade:
			return 1, true
		}
	}
	return 0, false
}

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

// helmValues merges h's values for one cluster, as helm merges -f files
// then --set: each file read and substituted (typed: "${replicas}" alone
// is the attribute's value, an integer stays one), then the inline
// values, substituted the same way, then the --set pairs.
func helmValues(h *Helm, vars Vars, max int64) (map[string]any, error) {
	vals := map[string]any{}
	for _, file := range h.Values {
		path, err := Substitute(file, vars.Text)
		if err != nil {
			return nil, fmt.Errorf("values file %s: %w", file, err)
		}
		data, err := readFile(path, max)
		if err != nil {
			return nil, fmt.Errorf("values file: %w", err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("values file %s: %w", displayPath(path), err)
		}
		expanded, err := vars.expand(m)
		if err != nil {
			return nil, fmt.Errorf("values file %s%s: %w", displayPath(path), lineSuffix(data, err), err)
		}
		m, _ = expanded.(map[string]any)
		vals = loader.MergeMaps(vals, m)
	}
	if len(h.ValuesInline) > 0 {
		expanded, err := vars.expand(deepCopyMap(h.ValuesInline))
		if err != nil {
			return nil, fmt.Errorf("valuesInline: %w", err)
		}
		m, _ := expanded.(map[string]any)
		vals = loader.MergeMaps(vals, m)
	}
	for _, kv := range h.Set {
		if err := strvals.ParseInto(kv, vals); err != nil {
			return nil, fmt.Errorf("--set %s: %w", kv, err)
		}
	}
	return vals, nil
}

// lineSuffix is ":LINE" of the field a substitution error names in a
// YAML document, "" when it cannot be found.
func lineSuffix(data []byte, err error) string {
	var (
		undef  *UndefinedError
		syntax *SyntaxError
		field  string
	)
	switch {
	case errors.As(err, &undef):
		field = undef.Field
	case errors.As(err, &syntax):
		field = syntax.Field
	}
	var doc yaml3.Node
	if field == "" || yaml3.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return ""
	}
	n := doc.Content[0]
	for _, step := range fieldSteps(field) {
		n = child(n, step)
		if n == nil {
			return ""
		}
	}
	return ":" + strconv.Itoa(n.Line)
}

// fieldSteps splits a field path as substitution errors write it
// ("a.b[0][x.y].c") into its steps.
func fieldSteps(field string) []string {
	var steps []string
	for field != "" {
		switch {
		case field[0] == '.':
			field = field[1:]
		case field[0] == '[':
			end := strings.IndexByte(field, ']')
			if end < 0 {
				return append(steps, field[1:])
			}
			steps, field = append(steps, field[1:end]), field[end+1:]
		default:
			end := strings.IndexAny(field, ".[")
			if end < 0 {
				end = len(field)
			}
			steps, field = append(steps, field[:end]), field[end:]
		}
	}
	return steps
}

// child is a mapping's value under key, or a sequence's item at the
// index step, nil when there is none.
func child(n *yaml3.Node, step string) *yaml3.Node {
	switch n.Kind {
	case yaml3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == step {
				return n.Content[i+1]
			}
		}
	case yaml3.SequenceNode:
		if i, err := strconv.Atoi(step); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}

// capabilities are .Capabilities for a cluster: the cluster's own when
// known (diff, apply, status ask its discovery), else from its
// attributes, kubeVersion (else DefaultKubeVersion) and apiVersions; the
// API versions are added to the built-in ones, as helm template
// --api-versions adds them.
func capabilities(c *Cluster) (*common.KubeVersion, []string, error) {
	if caps := c.Capabilities; caps != nil {
		kv, err := common.ParseKubeVersion(caps.KubeVersion)
		if err != nil {
			return nil, nil, fmt.Errorf("the cluster's version %q: %w", caps.KubeVersion, err)
		}
		return kv, caps.APIVersions, nil
	}
	kv := DefaultKubeVersion
	if v, ok := c.Attributes[KubeVersionAttribute]; ok {
		kv = fmt.Sprint(v)
	}
	parsed, err := common.ParseKubeVersion(kv)
	if err != nil {
		return nil, nil, fmt.Errorf("attribute %s: %w", KubeVersionAttribute, err)
	}
	var apis []string
	switch v := c.Attributes[APIVersionsAttribute].(type) {
	case nil:
	case []any:
		for _, a := range v {
			apis = append(apis, fmt.Sprint(a))
		}
	case string:
		apis = strings.Split(v, ",")
	default:
		return nil, nil, fmt.Errorf("attribute %s: want a list of group/version strings, got %T", APIVersionsAttribute, v)
	}
	return parsed, apis, nil
}

// renderHelm templates h's chart for one cluster as helm template does
// (client only), in namespace ns. Hooks become objects of the phase
// their events say (pre-install/pre-upgrade before the rest,
// post-install/post-upgrade after), recreated when they change; test
// hooks and the other events are left out. helm.sh/resource-policy: keep
// means fleet.kubectl.io/prune: disabled.
func (e *Engine) renderHelm(ctx context.Context, h *Helm, app, ns string, c *Cluster, lim Limits) ([]rawObject, []string, error) {
	ch, err := e.loadChart(h)
	if err != nil {
		return nil, nil, err
	}
	vals, err := helmValues(h, VariablesOf(c), lim.MaxBytes)
	if err != nil {
		return nil, nil, err
	}
	kv, apis, err := capabilities(c)
	if err != nil {
		return nil, nil, err
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRunStrategy = action.DryRunClient
	install.Replace = true
	install.ReleaseName = cmp.Or(h.ReleaseName, app)
	install.Namespace = cmp.Or(ns, "default")
	install.IncludeCRDs = h.IncludeCRDs
	install.KubeVersion = kv
	install.APIVersions = common.VersionSet(apis)
	r, err := install.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, nil, fmt.Errorf("chart %s: %w", h.Chart, err)
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return nil, nil, fmt.Errorf("chart %s: an unexpected release type %T", h.Chart, r)
	}
	if h.Tests {
		raws, err := testHooks(rel, h, lim)
		return raws, nil, err
	}
	raws, err := parseDocuments([]byte(rel.Manifest), lim.MaxBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("chart %s: %w", h.Chart, err)
	}
	var warnings []string
	for _, hook := range rel.Hooks {
		phase, ok := helmHookPhase(hook.Events)
		if !ok {
			if !slices.Contains(hook.Events, release.HookTest) {
				warnings = append(warnings, fmt.Sprintf("chart hook %s (%s) is not run: kubectl fleet runs pre/post-install and -upgrade hooks, and test hooks as the app's tests", hook.Path, hookEvents(hook.Events)))
			}
			continue
		}
		objs, err := parseDocuments([]byte(hook.Manifest), lim.MaxBytes)
		if err != nil {
			return nil, nil, fmt.Errorf("chart %s: hook %s: %w", h.Chart, hook.Path, err)
		}
		for _, o := range objs {
			annotate(o.obj, map[string]string{object.PhaseAnnotation: strconv.Itoa(phase), object.ForceAnnotation: "enabled"})
		}
		raws = append(raws, objs...)
	}
	for _, r := range raws {
		if r.obj.GetAnnotations()["helm.sh/resource-policy"] == "keep" {
			annotate(r.obj, map[string]string{object.PruneAnnotation: "disabled"})
		}
		r.vars = false // values were substituted; what the chart renders is not
	}
	return raws, warnings, nil
}

func hookEvents(events []release.HookEvent) string {
	s := make([]string, len(events))
	for i, e := range events {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}

// testHooks are a release's test hooks, as an app's tests: Jobs as they
// are, Pods as Jobs of the same name and template that run once.
func testHooks(rel *release.Release, h *Helm, lim Limits) ([]rawObject, error) {
	var out []rawObject
	for _, hook := range rel.Hooks {
		if !slices.Contains(hook.Events, release.HookTest) {
			continue
		}
		objs, err := parseDocuments([]byte(hook.Manifest), lim.MaxBytes)
		if err != nil {
			return nil, fmt.Errorf("chart %s: test %s: %w", h.Chart, hook.Path, err)
		}
		for _, o := range objs {
			if o.obj.GetKind() == "Pod" && o.obj.GroupVersionKind().Group == "" {
				o.obj = podAsJob(o.obj)
			}
			o.vars = false
			out = append(out, o)
		}
	}
	return out, nil
}

// podAsJob wraps a Pod in a Job that runs it once (backoffLimit 0), with
// the Pod's name, namespace, labels and annotations.
func podAsJob(pod *unstructured.Unstructured) *unstructured.Unstructured {
	spec, _, _ := unstructured.NestedMap(pod.Object, "spec")
	if rp, _ := spec["restartPolicy"].(string); rp != "OnFailure" {
		spec["restartPolicy"] = "Never"
	}
	template := map[string]any{"spec": spec}
	if labels := pod.GetLabels(); len(labels) > 0 {
		template["metadata"] = map[string]any{"labels": toAny(labels)}
	}
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": pod.GetName()},
		"spec":     map[string]any{"backoffLimit": int64(0), "template": template},
	}}
	job.SetNamespace(pod.GetNamespace())
	job.SetLabels(pod.GetLabels())
	job.SetAnnotations(pod.GetAnnotations())
	return job
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func annotate(o interface {
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}, add map[string]string) {
	ann := o.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	maps.Copy(ann, add)
	o.SetAnnotations(ann)
}
