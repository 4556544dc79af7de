package render

import (
	"github.com/kubectl-fleet/kubectl-fleet/pkg/subst"

	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
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

// helmValues merges h's values for one cluster, as helm merges -f files
// then --set: each file read and substituted (typed: "${replicas}" alone
// is the attribute's value, an integer stays one), then the inline
// values, substituted the same way, then the --set pairs.
func helmValues(h *Helm, vars Vars, fs files) (map[string]any, error) {
	vals := map[string]any{}
	for _, file := range h.Values {
		path, err := subst.Substitute(file, vars.Text)
		if err != nil {
			return nil, fmt.Errorf("values file %s: %w", file, err)
		}
		data, err := fs.read(path)
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
		undef  *subst.UndefinedError
		syntax *subst.SyntaxError
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
func (e *Engine) renderHelm(ctx context.Context, h *Helm, app, ns string, c *Cluster, lim Limits, fs files) ([]rawObject, []string, error) {
	ch, err := e.loadChart(h)
	if err != nil {
		return nil, nil, err
	}
	vals, err := helmValues(h, VariablesOf(c), fs)
	if err != nil {
		return nil, nil, err
	}
	kv, apis, err := capabilities(c)
	if err != nil {
		return nil, nil, err
	}
	warnings := unknownValues(ch, vals) // before Helm merges them
	if e.Lint {
		warnings = append(warnings, e.strictTemplates(h, vals, cmp.Or(h.ReleaseName, app), cmp.Or(ns, "default"), kv, apis)...)
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

// strictTemplates renders h's chart again as helm lint --strict does,
// for vet: a template that reads a value nothing sets (.Values.imag for
// .Values.image) fails there, and renders "<no value>" or nothing for
// the server to refuse otherwise. A warning, not an error: charts read
// optional values that way on purpose too.
func (e *Engine) strictTemplates(h *Helm, vals map[string]any, releaseName, ns string, kv *common.KubeVersion, apis []string) []string {
	ch, err := e.loadChart(h)
	if err != nil {
		return nil // said by the render itself
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	caps.APIVersions = append(caps.APIVersions, apis...)
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil
	}
	values, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: releaseName, Namespace: ns, IsInstall: true}, caps)
	if err != nil {
		return nil
	}
	if _, err := (engine.Engine{Strict: true, LintMode: true}).Render(ch, values); err != nil {
		return []string{fmt.Sprintf("chart %s: a template reads a value nothing sets, a typo? (as helm lint --strict says): %v", h.Chart, err)}
	}
	return nil
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
		_ = unstructured.SetNestedStringMap(template, labels, "metadata", "labels")
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
