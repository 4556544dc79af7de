package render

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/memo"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// Cluster is what every renderer is given about the cluster it renders for.
// Its JSON form, {name, group, context, labels, attributes}, is what jsonnet
// sees as the top-level argument and external variable "cluster".
type Cluster struct {
	Name       string            `json:"name"`
	Group      string            `json:"group"`
	Context    string            `json:"context"`
	Labels     map[string]string `json:"labels"`
	Attributes map[string]any    `json:"attributes"`
	// Fleet is the fleet's name, FLEET_NAME in substitutions.
	Fleet string `json:"-"`
	// Capabilities, when known, are the cluster's own (from its
	// discovery): a chart's .Capabilities, before the attributes.
	Capabilities *Capabilities `json:"-"`
}

// Capabilities are what a cluster serves, as a chart's templates see it.
type Capabilities struct {
	// KubeVersion is the server's version ("v1.37.1").
	KubeVersion string
	// APIVersions are its group versions, and group/version/Kind for each
	// of their kinds, as helm reads them from discovery.
	APIVersions []string
}

// ClusterOf builds the render view of a fleet cluster, attributes merged.
func ClusterOf(f *fleet.Fleet, c *fleet.Cluster) Cluster {
	labels := c.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	return Cluster{Name: c.Name, Group: c.Group, Context: c.Context, Labels: labels, Attributes: f.Attributes(c), Fleet: f.Metadata.Name}
}

// ClusterIn is c as its renders among results saw it, with the
// attributes read from it (attributesFrom); as the fleet file says it
// (ClusterOf) when none of them is c's.
func ClusterIn(f *fleet.Fleet, c *fleet.Cluster, results []Result) Cluster {
	for _, res := range results {
		if res.Cluster.Name == c.Name {
			return res.Cluster
		}
	}
	return ClusterOf(f, c)
}

// SourceType tells how a source is rendered.
type SourceType string

// The source types.
const (
	Kustomize SourceType = "kustomize"
	Jsonnet   SourceType = "jsonnet"
	Manifests SourceType = "manifests"
	HelmChart SourceType = "helm"
)

// Source is where an app's manifests come from.
type Source struct {
	Type SourceType
	// Path is a kustomize folder, a jsonnet file, or a manifest file or
	// folder ("-" reads standard input).
	Path string
	// JPath lists jsonnet library folders; the last one wins.
	JPath []string
	// Namespace is set on namespaced objects that have none (and is a
	// chart's .Release.Namespace).
	Namespace string
	// Helm is the chart of a HelmChart source.
	Helm *Helm
	// NoSubstitute leaves every ${...} of the objects alone (the app's
	// substitute: false: vendored manifests full of other tools'
	// variables).
	NoSubstitute bool
	// Artifact is, for a source read from an OCI registry, the artifact
	// Path was unpacked from: oci://registry/repository@sha256:….
	Artifact string
}

// Target is one app to render for one cluster.
type Target struct {
	Cluster Cluster
	App     string
	Source  Source
	// CreateNamespace is the Namespace the app asks to be created
	// (apps[].createNamespace), put first in its render when no render of
	// the cluster has it (NamespacesToCreate); "" for none.
	CreateNamespace string
}

// Result is the rendered objects of one target, in a stable order, or why
// rendering failed.
type Result struct {
	Target
	// Objects are set with Err too when every object rendered but some of
	// them twice, so that vet can check them all.
	Objects []*unstructured.Unstructured
	// Path is the kustomize folder or file that was rendered.
	Path string
	// Chart is the Helm chart rendered, "name@version", and the short
	// digest fleet.lock pins it to, if any.
	Chart string
	// Warnings are what the render left out that the user should know:
	// a chart's hooks kubectl fleet does not run.
	Warnings []string
	// Decrypted says that the render read values decrypted from SOPS (a
	// file, a values file, an import, standard input), whatever form
	// they took in its objects, or, in vet without the keys, values
	// apply would decrypt (sopsfile.Decrypter.Open): such a render is
	// never published.
	Decrypted bool
	Err       error

	// again makes Objects again from what the render kept in memory,
	// when the fleet shares the source's build, or from the objects
	// packed (Pack).
	again func() ([]*unstructured.Unstructured, error)
}

// Again makes the result's objects again, the same as its render made
// them, from memory alone: the source's build (kustomize's or the
// manifests read), which the fleet's clusters share and the engine
// keeps, substituted with the cluster's variables again, or the objects
// Pack packed, read back. No file is read
// again, so an edit of the source since cannot change them. A caller
// that holds a thousand clusters' renders for a run lets go of those not
// in flight and makes each again when its turn comes (rendered.Set.Shed).
func (r *Result) Again() ([]*unstructured.Unstructured, error) {
	if r.again == nil {
		return nil, errors.New("the render cannot be made again")
	}
	return r.again()
}

// Engine renders targets in parallel and renders identical inputs once: a
// kustomize folder is built once however many clusters use it, and only the
// cheap variable substitution runs per cluster.
type Engine struct {
	// Parallel bounds concurrent renders; 0 means GOMAXPROCS.
	Parallel int
	// Stdin is read (once) for the source path "-".
	Stdin io.Reader
	// Limits bound each render; the zero value is the defaults.
	Limits Limits
	// ChartCache is where charts from repositories and registries are
	// kept; "" is helm's own cache.
	ChartCache string
	// Secrets decrypts the SOPS-encrypted files the sources read, each
	// once however many clusters read it; nil reads them as they are.
	Secrets *sopsfile.Decrypter
	// Trace receives jsonnet's std.trace, its decrypted values masked;
	// nil is standard error.
	Trace io.Writer
	// Lint (vet) also renders each Helm chart with Helm's strict
	// templates, as helm lint --strict does: a template that reads a
	// value nothing sets (a typo: .Values.imag) is a warning.
	Lint bool

	memo memo.Memo[string, built]
	// charts are the Helm charts loaded, each once per run.
	charts memo.Memo[string, *chart.Chart]
	// perCluster memoizes jsonnet evaluations, which depend on the
	// cluster, per cluster (see Release); released counts the
	// evaluations of released clusters, for Renders.
	mu         sync.Mutex
	perCluster map[string]*memo.Memo[string, built]
	released   int
	stdin      struct {
		once      sync.Once
		data      []byte
		decrypted bool
		err       error
	}
}

// Render renders every target; results are in target order.
func (e *Engine) Render(ctx context.Context, targets []Target) []Result {
	results := make([]Result, len(targets))
	n := e.Parallel
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	var g errgroup.Group
	g.SetLimit(n)
	for i, t := range targets {
		results[i].Target = t
		if err := ctx.Err(); err != nil {
			results[i].Err = err
			continue
		}
		g.Go(func() error {
			results[i] = e.RenderTarget(ctx, t)
			return nil
		})
	}
	_ = g.Wait()
	return results
}

// RenderTarget renders one target, for callers that fan out themselves
// (render's streaming). A panic is the target's error.
func (e *Engine) RenderTarget(ctx context.Context, t Target) (r Result) {
	r.Target = t
	defer func() {
		if p := recover(); p != nil {
			r.Objects = nil
			r.Err = &TargetError{Cluster: t.Cluster.Name, App: t.App, Err: fmt.Errorf("recovered from panic: %v", p)}
		}
	}()
	r.Err = e.renderOne(ctx, t, &r)
	if t.Source.Type == HelmChart && r.Err == nil {
		r.Chart = e.chartName(t.Source.Helm)
		if d := t.Source.Helm.Digest; d != "" && r.Chart != "" {
			r.Chart += " " + d[:min(len(d), len("sha256:")+12)]
		}
	}
	if r.Err != nil {
		r.Err = &TargetError{Cluster: t.Cluster.Name, App: t.App, Err: e.redact(r.Err)}
	}
	return r
}

// trace is where std.trace writes: Trace (or standard error) behind the
// mask of the decrypted values, whoever gave it.
func (e *Engine) trace() io.Writer {
	return e.Secrets.Sensitive().Writer(cmp.Or[io.Writer](e.Trace, os.Stderr))
}

// redact is err with every decrypted value in its message replaced
// (sopsfile.Decrypter.Redact): the last guard, for a tool's error that
// quotes a value it was given.
func (e *Engine) redact(err error) error {
	if msg := e.Secrets.Redact(err.Error()); msg != err.Error() {
		return &redacted{msg: msg, err: err}
	}
	return err
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// TargetError is why one target (an app for a cluster) did not render:
// "cluster c1: app web: …".
type TargetError struct {
	Cluster, App string
	Err          error
}

func (e *TargetError) Error() string {
	return fmt.Sprintf("cluster %s: app %s: %v", e.Cluster, e.App, e.Err)
}

// Unwrap is the render's own error.
func (e *TargetError) Unwrap() error { return e.Err }

// files reads one build's files, each of at most max bytes.
func (e *Engine) files(max int64) files {
	return files{max: max, sops: e.Secrets, decrypted: new(atomic.Bool)}
}

// built is what one build of a source made, as the engine keeps it:
// its objects, and whether it read a value decrypted from SOPS.
type built struct {
	raws      []rawObject
	decrypted bool
}

// buildWith runs build with a fresh files and says what it made.
func buildWith(fs files, build func(files) ([]rawObject, error)) (built, error) {
	raws, err := build(fs)
	return built{raws: raws, decrypted: fs.decrypted.Load()}, err
}

// Release forgets what the engine kept for one cluster: its jsonnet
// evaluations, which depend on the cluster and so are kept per cluster.
// A streaming caller releases a cluster once all its targets are
// rendered, so that what the engine holds does not grow with the fleet;
// rendering the cluster again evaluates again.
func (e *Engine) Release(cluster string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m, ok := e.perCluster[cluster]; ok {
		e.released += m.Len()
		delete(e.perCluster, cluster)
	}
}

// clusterMemo is the memo of one cluster's jsonnet evaluations.
func (e *Engine) clusterMemo(cluster string) *memo.Memo[string, built] {
	e.mu.Lock()
	defer e.mu.Unlock()
	m, ok := e.perCluster[cluster]
	if !ok {
		if e.perCluster == nil {
			e.perCluster = map[string]*memo.Memo[string, built]{}
		}
		m = &memo.Memo[string, built]{}
		e.perCluster[cluster] = m
	}
	return m
}

// renderOne renders t into r: its objects, path and warnings, and for a
// source the fleet's clusters share, how to make the objects again.
func (e *Engine) renderOne(ctx context.Context, t Target, r *Result) error {
	var (
		b      built
		lim    = e.Limits.orDefaults()
		shared bool // raws are the fleet's, not the cluster's
		err    error
	)
	r.Path = t.Source.Path
	switch t.Source.Type {
	case Kustomize:
		if r.Path, err = KustomizeDir(t.Source.Path, &t.Cluster); err != nil {
			r.Path = ""
			return err
		}
		path := r.Path
		shared = true
		b, err = e.memo.Do("kustomize\x00"+path, func() (built, error) {
			b, err := bounded(ctx, lim.Timeout, func() (built, error) {
				return buildWith(e.files(lim.MaxBytes), func(fs files) ([]rawObject, error) { return buildKustomize(path, fs) })
			})
			if err != nil {
				return b, fmt.Errorf("kustomize build %s: %w", displayPath(path), err)
			}
			return b, nil
		})
	case Manifests:
		path := r.Path
		b, err = e.memo.Do("manifests\x00"+path, func() (built, error) { return e.readManifests(path, lim.MaxBytes) })
		shared = true
	case Jsonnet:
		path := r.Path
		clusterJSON, jerr := json.Marshal(t.Cluster)
		if jerr != nil {
			return jerr
		}
		key := "jsonnet\x00" + path + "\x00" + strings.Join(t.Source.JPath, "\x00") + "\x00" + string(clusterJSON)
		b, err = e.clusterMemo(t.Cluster.Name).Do(key, func() (built, error) {
			b, err := bounded(ctx, lim.Timeout, func() (built, error) {
				return buildWith(e.files(lim.MaxBytes), func(fs files) ([]rawObject, error) {
					return evalJsonnet(path, t.Source.JPath, string(clusterJSON), lim, fs, e.trace())
				})
			})
			if err != nil {
				return b, fmt.Errorf("jsonnet %s: %w", displayPath(path), err)
			}
			return b, nil
		})
	case HelmChart:
		b, err = bounded(ctx, lim.Timeout, func() (built, error) {
			return buildWith(e.files(lim.MaxBytes), func(fs files) ([]rawObject, error) {
				raws, w, err := e.renderHelm(ctx, t.Source.Helm, t.App, t.Source.Namespace, &t.Cluster, lim, fs)
				r.Warnings = w
				return raws, err
			})
		})
	default:
		return fmt.Errorf("unknown source type %q", t.Source.Type)
	}
	if err != nil {
		return err
	}
	raws := b.raws
	r.Decrypted = b.decrypted
	objs, err := made(raws, &t, lim.MaxBytes)
	if err != nil {
		return err
	}
	err = errors.Join(duplicates(objs, raws), badPolicies(objs, raws))
	Sort(objs)
	r.Objects = objs
	if shared && err == nil {
		r.again = func() ([]*unstructured.Unstructured, error) {
			objs, err := made(raws, &t, lim.MaxBytes)
			Sort(objs)
			return objs, err
		}
	}
	return err
}

// made is t's objects made of raws, in raws' order: substituted
// (unless the source opts out), in the source's namespace. It reads
// memory alone, so that made again (Result.Again) they are the same.
func made(raws []rawObject, t *Target, max int64) ([]*unstructured.Unstructured, error) {
	objs, err := substituteAll(raws, t.Source.Type != Jsonnet && t.Source.Type != HelmChart && !t.Source.NoSubstitute, VariablesOf(&t.Cluster), max)
	if err != nil {
		return nil, err
	}
	setDefaultNamespace(objs, t.Source.Namespace)
	return objs, nil
}

// ownMeta is obj, a render of raw, with a top level and a metadata map
// of its own, which the render still writes (its namespace): each is
// copied unless substitution already did (it is not raw's). The rest is
// shared: readers change metadata on a deep copy of their own
// (object.CopyMeta) and replace, never change, the rest.
func ownMeta(obj, raw map[string]any) *unstructured.Unstructured {
	if sameMap(obj, raw) {
		obj = maps.Clone(obj)
	}
	if m, ok := obj["metadata"].(map[string]any); ok && sameMap(m, raw["metadata"]) {
		obj["metadata"] = maps.Clone(m)
	}
	return &unstructured.Unstructured{Object: obj}
}

// sameMap reports whether m is the very map v holds.
func sameMap(m map[string]any, v any) bool {
	o, ok := v.(map[string]any)
	return ok && reflect.ValueOf(m).UnsafePointer() == reflect.ValueOf(o).UnsafePointer()
}

// rawObject is a rendered object before substitution.
type rawObject struct {
	obj *unstructured.Unstructured
	// vars is set when the object holds "${" anywhere.
	vars bool
	// source says where the object came from, when that is known:
	// "web/cm.yaml document 2", "output.web.deployment".
	source string
}

// substituteAll returns every object, with variables expanded when subst
// is set and the object does not opt out; the substituted text of all
// objects together may not pass max bytes. Each object's top level and
// metadata are its own; the rest may be shared with the other clusters'
// renders of the same source, where variables change nothing: it is
// replaced, never changed (object.CopyMeta).
func substituteAll(raws []rawObject, subst bool, vars Vars, max int64) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(raws))
	x := expansion{vars: vars, left: max, max: max}
	var failed []string // every object that fails, so that one pass fixes them all
	for _, r := range raws {
		if !subst || !r.vars || r.obj.GetAnnotations()[SubstituteAnnotation] == "disabled" {
			out = append(out, ownMeta(r.obj.Object, r.obj.Object))
			continue
		}
		x.redact = isSecret(r.obj.GetKind())
		v, err := x.value(r.obj.Object)
		var limit *limitError
		switch {
		case errors.As(err, &limit):
			return nil, fmt.Errorf("%s: %w", ObjectRef(r.obj), err) // too large: no point going on
		case err != nil:
			failed = append(failed, fmt.Sprintf("%s: %v", ObjectRef(r.obj), err))
			continue
		}
		out = append(out, ownMeta(coerceStrings(v.(map[string]any)), r.obj.Object))
	}
	switch len(failed) {
	case 0:
		return out, nil
	case 1:
		return nil, errors.New(failed[0])
	}
	return nil, fmt.Errorf("%d objects fail variable substitution (the annotation %s: disabled, or the app's substitute: false, leaves an object's ${...} alone):\n    %s", len(failed), SubstituteAnnotation, strings.Join(failed, "\n    "))
}

// isSecret tells the kinds whose values errors never quote: Secret, and
// kinds like SealedSecret and ExternalSecret.
func isSecret(kind string) bool { return strings.Contains(kind, "Secret") }

// duplicates refuses two objects of one group, kind, namespace and name;
// objs[i] was rendered from raws[i]. The error names the object and, when
// known, both sources, and counts any further duplicates.
func duplicates(objs []*unstructured.Unstructured, raws []rawObject) error {
	seen := make(map[string]int, len(objs))
	var errs firstErrors
	for i, o := range objs {
		if o.GetName() == "" {
			continue // generateName: a new object each time
		}
		gvk := o.GroupVersionKind()
		key := gvk.Group + "\x00" + gvk.Kind + "\x00" + o.GetNamespace() + "\x00" + o.GetName()
		j, ok := seen[key]
		if !ok {
			seen[key] = i
			continue
		}
		if a, b := raws[j].source, raws[i].source; a != "" && b != "" {
			errs.add(fmt.Errorf("%s is rendered twice: from %s and from %s", ObjectRef(o), a, b))
		} else {
			errs.add(fmt.Errorf("%s is rendered twice", ObjectRef(o)))
		}
	}
	return errs.err("objects rendered more than once")
}

// badPolicies refuses a policy annotation with a value it does not take:
// a typo must not silently turn a policy off.
func badPolicies(objs []*unstructured.Unstructured, raws []rawObject) error {
	var errs firstErrors
	for i, o := range objs {
		for _, err := range object.ValidatePolicies(o) {
			if src := raws[i].source; src != "" {
				errs.add(fmt.Errorf("%s (from %s): %w", ObjectRef(o), src, err))
			} else {
				errs.add(fmt.Errorf("%s: %w", ObjectRef(o), err))
			}
		}
	}
	return errs.err("objects with bad policy annotations")
}

// firstErrors keeps the first error and counts the rest.
type firstErrors struct {
	first error
	more  int
}

func (e *firstErrors) add(err error) {
	if e.first == nil {
		e.first = err
	} else {
		e.more++
	}
}

func (e *firstErrors) err(what string) error {
	if e.more > 0 {
		return fmt.Errorf("%w (and %d more %s)", e.first, e.more, what)
	}
	return e.first
}

// ObjectRef names an object the way kubectl does: kind/name, with its
// namespace when it has one ("Deployment web/api").
func ObjectRef(o *unstructured.Unstructured) string {
	name := o.GetName()
	if ns := o.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return o.GetKind() + " " + name
}

// displayPath shortens p relative to the working folder when it is inside.
func displayPath(p string) string {
	wd, err := filepath.Abs(".")
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// Renders returns how many distinct inputs the engine has rendered: the
// kustomize builds, manifest reads and jsonnet evaluations it ran.
func (e *Engine) Renders() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.memo.Len() + e.released
	for _, m := range e.perCluster {
		n += m.Len()
	}
	return n
}
