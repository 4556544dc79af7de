// Package plan keeps what a reviewed diff saw, so that apply writes
// exactly that or nothing (Terraform's plan, for a fleet): per cluster and
// app, the digest of the rendered objects and the resource version of
// every live object the diff compared them with. A plan holds no object
// content: no Secret data, no credentials.
package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// APIVersion and Kind of a plan file.
const (
	APIVersion = "fleet.kubectl.io/v1alpha1"
	Kind       = "Plan"
)

// Plan is what "diff --out" saw on every selected cluster.
type Plan struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Created    time.Time `json:"created"`
	// Fleet is the fleet's name.
	Fleet    string    `json:"fleet"`
	Clusters []Cluster `json:"clusters"`
}

// Cluster is one cluster's part of a plan.
type Cluster struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	Apps  []App  `json:"apps"`
}

// App is one app's part of a cluster's plan.
type App struct {
	App string `json:"app"`
	// Digest identifies the rendered objects (revision.Digest).
	Digest string `json:"digest"`
	// Source is the source's git commit, when in git.
	Source revision.Source `json:"source,omitzero"`
	// Objects are the live objects the diff compared the render with, and
	// what apply would do to each.
	Objects []Object `json:"objects"`
	// Set is the app's ApplySet as the diff read it, before the objects:
	// what it would prune follows from its members. Plans written
	// before it was recorded have none, and are not checked for it.
	Set *Set `json:"set,omitempty"`
	// Published is, for a delivered cluster, the artifact the cluster's
	// tag of the app pointed at when planned ("none": no tag); such an
	// app has no Objects or Set, as no cluster was asked.
	Published string `json:"published,omitempty"`
}

// NoTag is App.Published when the cluster's tag did not exist.
const NoTag = "none"

// CheckPublished returns a wrapped ErrStale when the render of a
// delivered cluster's app (objs) changed since the plan, or its tag
// (current, "" for none) was moved by someone else since.
func CheckPublished(planned *App, objs []*unstructured.Unstructured, current string) error {
	if planned == nil {
		return fmt.Errorf("%w: the plan has no such app", ErrStale)
	}
	if d := digest.Render(objs, nil); d != planned.Digest {
		return fmt.Errorf("%w: the render of app %s changed since the plan (digest %s, planned %s)", ErrStale, planned.App, revision.ShortDigest(d), revision.ShortDigest(planned.Digest))
	}
	if current == "" {
		current = NoTag
	}
	if current != planned.Published {
		return fmt.Errorf("%w: the tag of app %s moved since the plan (now %s, planned %s)", ErrStale, planned.App, current, planned.Published)
	}
	return nil
}

// Set is the state of an app's ApplySet parent.
type Set struct {
	// ResourceVersion is the parent's; "" when the app had none there.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// SetOf is the plan's record of an app's set.
func SetOf(s *inventory.Set) *Set { return &Set{ResourceVersion: s.ResourceVersion} }

// Object is one object the diff saw.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Action is change.Action.Planned: the word diff prints (create,
	// change, unchanged, prune, …).
	Action string `json:"action"`
	// ResourceVersion is the live object's; "" for one that did not exist.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

func (o Object) ref() string {
	gv, _ := schema.ParseGroupVersion(o.APIVersion)
	ref := strings.ToLower(o.Kind)
	if gv.Group != "" {
		ref += "." + gv.Group
	}
	return ref + "/" + o.Name
}

func (o Object) key() string { return o.APIVersion + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name }

// Objects lists what a diff of one app saw. A diff with errors makes no
// plan: it could not see everything.
func Objects(diffs []diff.Object) ([]Object, error) {
	out := make([]Object, 0, len(diffs))
	for _, d := range diffs {
		if d.Err != nil {
			return nil, fmt.Errorf("%s: %w", d.Ref, d.Err)
		}
		src := d.Current
		if src == nil {
			src = d.Merged
		}
		if src == nil {
			continue
		}
		o := Object{APIVersion: src.GetAPIVersion(), Kind: src.GetKind(), Namespace: src.GetNamespace(), Name: src.GetName(), Action: d.Action.Planned()}
		if d.Current != nil {
			o.ResourceVersion = d.Current.GetResourceVersion()
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, nil
}

// Write writes the plan as JSON, readable only by its owner: it names
// every object of the fleet.
func (p *Plan) Write(path string) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// Load reads a plan file.
func Load(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	p := &Plan{}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("%s is not a plan: %w", path, err)
	}
	if p.APIVersion != APIVersion || p.Kind != Kind {
		return nil, fmt.Errorf("%s is not a plan: apiVersion %q, kind %q; want %s, %s (written by kubectl fleet diff --out)", path, p.APIVersion, p.Kind, APIVersion, Kind)
	}
	return p, nil
}

// Cluster returns a cluster's part of the plan, nil if it has none.
func (p *Plan) Cluster(name string) *Cluster {
	for i := range p.Clusters {
		if p.Clusters[i].Name == name {
			return &p.Clusters[i]
		}
	}
	return nil
}

// App returns an app's part of the cluster's plan, nil if it has none.
func (c *Cluster) App(name string) *App {
	for i := range c.Apps {
		if c.Apps[i].App == name {
			return &c.Apps[i]
		}
	}
	return nil
}

// LoadFor reads a plan file (Load) and checks that it covers exactly
// the clusters selected and the apps rendered for each (Agree): apply
// --plan, before anything is sent.
func LoadFor(path string, apps map[string][]string) (*Plan, error) {
	p, err := Load(path)
	if err != nil {
		return nil, err
	}
	if err := p.Agree(apps); err != nil {
		return nil, err
	}
	return p, nil
}

// Agree checks, before anything is sent, that the plan covers exactly the
// clusters selected and, on each, the apps rendered for it.
func (p *Plan) Agree(apps map[string][]string) error {
	var problems []string
	planned := map[string]bool{}
	for _, c := range p.Clusters {
		planned[c.Name] = true
		if _, ok := apps[c.Name]; !ok {
			problems = append(problems, fmt.Sprintf("the plan has cluster %s, which is not selected", c.Name))
		}
	}
	names := make([]string, 0, len(apps))
	for n := range apps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		c := p.Cluster(name)
		if c == nil {
			problems = append(problems, fmt.Sprintf("cluster %s is not in the plan", name))
			continue
		}
		have := map[string]bool{}
		for _, a := range apps[name] {
			have[a] = true
			if c.App(a) == nil {
				problems = append(problems, fmt.Sprintf("cluster %s: app %s is not in the plan", name, a))
			}
		}
		for _, a := range c.Apps {
			if !have[a.App] {
				problems = append(problems, fmt.Sprintf("cluster %s: the plan has app %s, which is not rendered for it", name, a.App))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the plan does not match the selection (use the diff's selection flags and source):\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// ErrStale marks a plan that no longer holds for a cluster.
var ErrStale = errors.New("plan is stale")

// Check compares an app's render and the cluster's live objects with its
// plan; an error (ErrStale) names what moved. It only reads.
// CheckArtifact returns a wrapped ErrStale when the app's source is an
// OCI artifact other than the one planned (artifact: this run's, "" for a
// local source): its tag was moved since the plan.
func CheckArtifact(planned *App, artifact string) error {
	if planned == nil || planned.Source.Artifact == artifact {
		return nil
	}
	none := func(s string) string {
		if s == "" {
			return "none"
		}
		return s
	}
	return fmt.Errorf("%w: the source of app %s moved since the plan: planned %s, now %s (its tag was moved: make the plan again)", ErrStale, planned.App, none(planned.Source.Artifact), none(artifact))
}

func Check(ctx context.Context, c *kube.Client, planned *App, objs []*unstructured.Unstructured, concurrency int) error {
	key, err := digest.KeyOf(ctx, c)
	if err != nil {
		return err
	}
	if d := digest.Render(objs, key); !digest.Comparable(planned.Digest) || !digest.Comparable(d) {
		return fmt.Errorf("%w: app %s holds Secret values, and the cluster's digest key %s/%s could not be read when the plan was made or now: a plan cannot vouch for them; apply once, or plan as a user who may read the key", ErrStale, planned.App, digest.Namespace, digest.KeySecret)
	} else if d != planned.Digest {
		return fmt.Errorf("%w: the render of app %s changed since the plan (digest %s, planned %s)", ErrStale, planned.App, revision.ShortDigest(d), revision.ShortDigest(planned.Digest))
	}
	moved := make([]string, len(planned.Objects))
	if kube.NewSlots(concurrency).Each(ctx, len(moved), func(i int) { moved[i] = check(ctx, c, planned.Objects[i]) }) < len(moved) {
		return ctx.Err()
	}
	var problems []string
	for _, m := range moved {
		if m != "" {
			problems = append(problems, m)
		}
	}
	if m, err := setMoved(ctx, c, planned); err != nil {
		return err
	} else if m != "" {
		problems = append(problems, m)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrStale, strings.Join(problems, "; "))
	}
	return nil
}

// setMoved says how the app's ApplySet moved since the plan: another
// apply changed its members (which a prune would delete unreviewed), or
// created it; "" if it did not.
func setMoved(ctx context.Context, c *kube.Client, planned *App) (string, error) {
	if planned.Set == nil {
		return "", nil
	}
	set, err := inventory.Load(ctx, c, planned.App)
	switch {
	case err != nil:
		return "", err
	case set.ResourceVersion == planned.Set.ResourceVersion:
		return "", nil
	case planned.Set.ResourceVersion == "":
		return fmt.Sprintf("app %s was applied here since the plan (its inventory was created)", planned.App), nil
	case !set.Exists:
		return fmt.Sprintf("the inventory of app %s was deleted since the plan", planned.App), nil
	}
	return fmt.Sprintf("the inventory of app %s changed since the plan (another apply: resourceVersion %s, planned %s)", planned.App, set.ResourceVersion, planned.Set.ResourceVersion), nil
}

// check reads one object's metadata and says how it moved since the
// plan, "" if it did not.
func check(ctx context.Context, c *kube.Client, o Object) string {
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		return fmt.Sprintf("%s: %v", o.ref(), err)
	}
	m, err := c.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: o.Kind}, gv.Version)
	if err != nil {
		if o.ResourceVersion == "" && meta.IsNoMatchError(err) {
			return "" // a custom resource whose CRD the apply creates
		}
		return fmt.Sprintf("%s: %v", o.ref(), err)
	}
	ri := c.Metadata.Resource(m.Resource)
	var live *metav1.PartialObjectMetadata
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		live, err = ri.Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	} else {
		live, err = ri.Get(ctx, o.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err) && o.ResourceVersion == "":
		return ""
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("%s was deleted since the plan", o.ref())
	case err != nil:
		return fmt.Sprintf("%s: %v", o.ref(), err)
	case o.ResourceVersion == "":
		return fmt.Sprintf("%s was created since the plan", o.ref())
	case live.ResourceVersion != o.ResourceVersion:
		return fmt.Sprintf("%s changed since the plan (resourceVersion %s, planned %s)", o.ref(), live.ResourceVersion, o.ResourceVersion)
	}
	return ""
}
