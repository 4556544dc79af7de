// Package inventory records which objects belong to an app on a cluster
// with the Kubernetes ApplySet convention (KEP-3659): a parent ConfigMap per
// app, labelled with the set's ID, and the label
// applyset.kubernetes.io/part-of on every member. kubectl apply --applyset
// sees the same set: configmaps/fleet-<app> in namespace kubectl-fleet.
package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/kubectl/pkg/cmd/apply"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

const (
	// Namespace holds the parent objects.
	Namespace = "kubectl-fleet"
	// ToolName is the tooling name in applyset.kubernetes.io/tooling.
	ToolName = "kubectl-fleet"
	// LastAppliedAnnotation on the parent is when the app was last applied.
	LastAppliedAnnotation = "fleet.kubectl.io/last-applied"
	// AppAnnotation on the parent names the app.
	AppAnnotation = "fleet.kubectl.io/app"
	// FleetAnnotation on the parent names the fleet (its metadata.name)
	// whose app the set is: another fleet's app of the same name is
	// refused, not merged into it.
	FleetAnnotation = "fleet.kubectl.io/fleet"
	// RevisionAnnotation on the parent is the app's current revision
	// (package revision).
	RevisionAnnotation = "fleet.kubectl.io/revision"
	// DigestAnnotation on the parent is the digest of the current
	// revision's render.
	DigestAnnotation = "fleet.kubectl.io/digest"
	// SourceAnnotation on the parent is the current revision's source
	// commit, when it came from git.
	SourceAnnotation = "fleet.kubectl.io/source"
	// AppliedDigestAnnotation on the parent is the digest of the render
	// the AppliedKey record is of.
	AppliedDigestAnnotation = "fleet.kubectl.io/applied-digest"
	// MembersKey in the parent's data lists the members, one object.Path
	// per line, so that other apps of the cluster can tell what it holds.
	MembersKey = "members"
	// AdoptedKey in the parent's data lists the members the app adopted,
	// one object.Path per line: objects that existed, outside any of
	// kubectl fleet's sets, before the app first applied them. Prune,
	// delete, rollback and --atomic release them instead of deleting
	// them.
	AdoptedKey = "adopted"
	// HandingKey in the parent's data lists the members the app handed to
	// another app of its run and keeps only until that app records them
	// (Decision.Stay), one object.Path per line. The app no longer
	// applies them: another app's delete or prune does not leave them to
	// it.
	HandingKey = "handing"
	// AppliedKey in the parent's data records, for each object the last
	// apply sent, the digest of what it sent, the resourceVersion the
	// server returned and the object's uid, one "path digest
	// resourceVersion uid" per line: an object whose render and live
	// version are both unchanged since needs no request (Applied).
	AppliedKey = "applied"
	// AppliedFormatAnnotation on the parent is the AppliedKey record's
	// format (AppliedFormat); a record of another format is not used.
	AppliedFormatAnnotation = "fleet.kubectl.io/applied-format"
	// AppliedFormat is the record's format this plugin writes and reads.
	AppliedFormat = "2"
	// MaxApplied bounds the AppliedKey record (about 4,000 objects), so
	// that the parent stays well inside a ConfigMap's 1 MiB with its
	// members: an app with more is applied without skipping anything.
	MaxApplied = 400 << 10
)

var (
	parentGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	parentGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// ParentName is the name of an app's parent object.
func ParentName(app string) string { return "fleet-" + app }

// ID is the ApplySet ID of an app, computed by kubectl's own code.
func ID(app string) string {
	ref := &apply.ApplySetParentRef{Name: ParentName(app), Namespace: Namespace, RESTMapping: &meta.RESTMapping{GroupVersionKind: parentGVK}}
	return apply.NewApplySet(ref, apply.ApplySetTooling{}, nil, nil).ID()
}

// Set is an app's ApplySet on one cluster as the parent records it.
type Set struct {
	App string
	ID  string
	// Exists is whether the parent object exists, and ResourceVersion
	// the parent's, as read.
	Exists          bool
	ResourceVersion string
	Contents
	// LastApplied is when the app was last applied, if ever.
	LastApplied string
	// Revision is the current revision's number (0: none recorded), and
	// Digest its render's digest.
	Revision int
	Digest   string
	// Source is the current revision's source commit, "" if unknown.
	Source string
	// Version is the plugin version that wrote the parent.
	Version string
	// Fleet is the fleet whose app the set is (FleetAnnotation); "" for
	// a parent an earlier version wrote, which the next apply claims.
	Fleet string
	// Applied is what the last apply sent, by object.Path (AppliedKey),
	// and AppliedDigest the digest of the render it sent.
	Applied       map[string]Applied
	AppliedDigest string
	// Adopted are the members the app did not create (AdoptedKey), by
	// object.Path.
	Adopted sets.Set[string]
	// Handing are the members the app handed over and keeps only until
	// their new app records them (HandingKey), by object.Path.
	Handing sets.Set[string]
}

// Applied is what an apply sent of one object, and what came back.
type Applied struct {
	// Digest identifies the object as sent.
	Digest string
	// ResourceVersion is the one the server returned, and UID the
	// object's: a resourceVersion alone may come again on a cluster
	// rebuilt or restored from a backup.
	ResourceVersion string
	UID             string
}

func appliedOf(data string) map[string]Applied {
	out := map[string]Applied{}
	for _, line := range strings.Split(data, "\n") {
		if f := strings.Fields(line); len(f) == 4 {
			out[f[0]] = Applied{Digest: f[1], ResourceVersion: f[2], UID: f[3]}
		}
	}
	return out
}

func appliedData(m map[string]Applied) string {
	lines := make([]string, 0, len(m))
	for path, a := range m {
		if a.Digest == "" {
			continue // nothing to compare (a Secret without the digest key): never skipped
		}
		lines = append(lines, path+" "+a.Digest+" "+a.ResourceVersion+" "+a.UID)
	}
	sort.Strings(lines)
	if out := strings.Join(lines, "\n"); len(out) <= MaxApplied {
		return out
	}
	return ""
}

// Contents is what a parent records: where members may be, and which
// objects they are.
type Contents struct {
	GroupKinds sets.Set[schema.GroupKind]
	Namespaces sets.Set[string]
	// Members are the object.Path of every member.
	Members sets.Set[string]
}

// ContentsOf describes objects put in their scope by the cluster.
func ContentsOf(objs []*unstructured.Unstructured) Contents {
	c := Contents{GroupKinds: sets.New[schema.GroupKind](), Namespaces: sets.New[string](), Members: sets.New[string]()}
	for _, o := range objs {
		c.GroupKinds.Insert(o.GroupVersionKind().GroupKind())
		if ns := o.GetNamespace(); ns != "" {
			c.Namespaces.Insert(ns)
		}
		c.Members.Insert(object.Path(o))
	}
	return c
}

// Union is everything either records.
// Equal reports whether c and d record the same kinds, namespaces and
// members.
func (c Contents) Equal(d Contents) bool {
	return c.GroupKinds.Equal(d.GroupKinds) && c.Namespaces.Equal(d.Namespaces) && c.Members.Equal(d.Members)
}

func (c Contents) Union(d Contents) Contents {
	return Contents{GroupKinds: c.GroupKinds.Union(d.GroupKinds), Namespaces: c.Namespaces.Union(d.Namespaces), Members: c.Members.Union(d.Members)}
}

// Load reads an app's ApplySet parent. A parent written by another tool is
// an error: its set is not ours to change.
func Load(ctx context.Context, c *kube.Client, app string) (*Set, error) {
	p, err := c.Core.ConfigMaps(Namespace).Get(ctx, ParentName(app), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return newSet(app), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the inventory of app %s: %w", app, err)
	}
	return setOf(app, p)
}

// LoadWithNeighbours reads an app's set (Load) and what the cluster's
// other apps hold (LoadNeighbours) in one request: a list of every
// ConfigMap of the namespace, its parent among them (found by name, so
// that another tool's ConfigMap of that name is refused as Load refuses
// it). A user who may not list them gets the set alone, and neighbours
// that are unknown: nothing is deleted (Decide).
func LoadWithNeighbours(ctx context.Context, c *kube.Client, app string) (*Set, *Neighbours, error) {
	list, err := c.Core.ConfigMaps(Namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		set, lerr := Load(ctx, c, app)
		return set, unknownNeighbours(app, err), lerr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the inventories: %w", err)
	}
	set := newSet(app)
	for i := range list.Items {
		if p := &list.Items[i]; p.Name == ParentName(app) {
			if set, err = setOf(app, p); err != nil {
				return nil, nil, err
			}
		}
	}
	n := neighboursOf(list.Items, app)
	n.listed = map[string]*corev1.ConfigMap{}
	for i := range list.Items {
		if _, parent := list.Items[i].Labels[apply.ApplySetParentIDLabel]; !parent {
			// A copy: the list, whose parents hold every member and
			// what was sent of it, is not kept for the apply's length.
			cm := list.Items[i]
			n.listed[cm.Name] = &cm
		}
	}
	return set, n, nil
}

// ConfigMap is the ConfigMap name of the namespace that is no app's
// parent, as read with the neighbours (nil: there is none); known is
// false when the namespace was not listed whole, and it must be read.
func (n *Neighbours) ConfigMap(name string) (cm *corev1.ConfigMap, known bool) {
	if n == nil || n.listed == nil {
		return nil, false
	}
	return n.listed[name], true
}

// newSet is the set of an app that has no parent yet.
func newSet(app string) *Set {
	return &Set{App: app, ID: ID(app), Contents: ContentsOf(nil), Adopted: sets.New[string](), Handing: sets.New[string]()}
}

// LoadAll reads the sets of every app kubectl fleet applied to the
// cluster (their parents), by app name: one list.
func LoadAll(ctx context.Context, c *kube.Client) ([]*Set, error) {
	list, err := c.Core.ConfigMaps(Namespace).List(ctx, metav1.ListOptions{LabelSelector: apply.ApplySetParentIDLabel})
	if err != nil {
		return nil, fmt.Errorf("reading the inventories: %w", err)
	}
	var out []*Set
	for i := range list.Items {
		p := &list.Items[i]
		app := p.GetAnnotations()[AppAnnotation]
		if app == "" || p.GetName() != ParentName(app) {
			continue
		}
		s, err := setOf(app, p)
		if err != nil {
			continue // another tool's set
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].App < out[j].App })
	return out, nil
}

// setOf reads a parent object of app, refusing one of another tool.
func setOf(app string, p *corev1.ConfigMap) (*Set, error) {
	s := &Set{App: app, ID: ID(app), Adopted: adoptedOf(p), Handing: handingOf(p)}
	ann := p.GetAnnotations()
	tooling := ann[apply.ApplySetToolingAnnotation]
	if name, _, _ := strings.Cut(tooling, "/"); name != ToolName {
		return nil, fmt.Errorf("configmap %s/%s is the ApplySet parent of another tool (%s=%q); refusing to adopt it", Namespace, ParentName(app), apply.ApplySetToolingAnnotation, tooling)
	}
	if id := p.GetLabels()[apply.ApplySetParentIDLabel]; id != s.ID {
		return nil, fmt.Errorf("configmap %s/%s has ApplySet ID %q, want %q; refusing to use it", Namespace, ParentName(app), id, s.ID)
	}
	s.Exists, s.ResourceVersion = true, p.GetResourceVersion()
	s.Contents = contentsOf(p)
	s.LastApplied = ann[LastAppliedAnnotation]
	s.Revision, _ = strconv.Atoi(ann[RevisionAnnotation])
	s.Digest = ann[DigestAnnotation]
	s.Source = ann[SourceAnnotation]
	s.Fleet = ann[FleetAnnotation]
	_, s.Version, _ = strings.Cut(tooling, "/")
	s.AppliedDigest = ann[AppliedDigestAnnotation]
	applied := p.Data[AppliedKey]
	s.Applied = map[string]Applied{}
	if ann[AppliedFormatAnnotation] == AppliedFormat {
		s.Applied = appliedOf(applied)
	}
	return s, nil
}

// handingOf reads the paths a parent records as handed over.
func handingOf(parent *corev1.ConfigMap) sets.Set[string] {
	return sets.New(splitLines(parent.Data[HandingKey])...)
}

// adoptedOf reads the paths a parent records as adopted.
func adoptedOf(parent *corev1.ConfigMap) sets.Set[string] {
	return sets.New(splitLines(parent.Data[AdoptedKey])...)
}

func splitLines(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

func contentsOf(parent *corev1.ConfigMap) Contents {
	c := ContentsOf(nil)
	ann := parent.GetAnnotations()
	for _, gk := range splitList(ann[apply.ApplySetGKsAnnotation]) {
		c.GroupKinds.Insert(schema.ParseGroupKind(gk))
	}
	c.Namespaces.Insert(splitList(ann[apply.ApplySetAdditionalNamespacesAnnotation])...)
	c.Members.Insert(splitLines(parent.Data[MembersKey])...)
	return c
}

// Neighbours is what the other apps of a cluster hold, as their parents
// record it, and what the other apps of this run render there.
type Neighbours struct {
	// holders maps an object.Path to the other apps whose records list
	// it, and handingOver to those of them that keep it only until the
	// app they handed it to records it.
	holders     map[string][]string
	handingOver map[string][]string
	// apps maps other apps' set IDs to their names.
	apps map[string]string
	// inNamespace maps a namespace to the other apps with members in it.
	inNamespace map[string][]string
	// adopted maps other apps' names to the members they adopted.
	adopted map[string]sets.Set[string]
	// unknown, when not nil, is why the other apps' parents could not
	// be read: nothing is deleted then (Decide).
	unknown error
	// listed are the namespace's ConfigMaps that are no app's parent,
	// by name, when the whole namespace was listed (LoadWithNeighbours);
	// nil when it was not.
	listed map[string]*corev1.ConfigMap
	// rendering maps an object.Path to the other app of this run that
	// renders it on the cluster, and inRun are those apps (Rendering).
	rendering map[string]string
	inRun     sets.Set[string]
}

// handing reports whether every one of apps is of this run and renders
// nothing at path: they hand it over.
func (n *Neighbours) handing(apps []string, path string) bool {
	for _, a := range apps {
		if !n.inRun.Has(a) || n.rendering[path] == a {
			return false
		}
	}
	return true
}

// LoadNeighbours reads the parents of every other app of the cluster: one
// list, which leaves out the app's own parent (its records are most of
// what a one-app cluster's list would carry, and the caller read it). A
// user who may not list them gets neighbours that are unknown (Decide
// deletes nothing then), not an error.
func LoadNeighbours(ctx context.Context, c *kube.Client, app string) (*Neighbours, error) {
	list, err := c.Core.ConfigMaps(Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: apply.ApplySetParentIDLabel,
		FieldSelector: fields.OneTermNotEqualSelector("metadata.name", ParentName(app)).String(),
	})
	switch {
	case apierrors.IsNotFound(err):
		return neighboursOf(nil, app), nil
	case apierrors.IsForbidden(err):
		return unknownNeighbours(app, err), nil
	case err != nil:
		return nil, fmt.Errorf("reading the other apps' inventories: %w", err)
	}
	return neighboursOf(list.Items, app), nil
}

// unknownNeighbours are the neighbours of an app whose list could not be
// read (err): none known, and nothing deleted.
func unknownNeighbours(app string, err error) *Neighbours {
	n := neighboursOf(nil, app)
	n.unknown = err
	return n
}

// Rendering tells the neighbours what the other apps of this run render
// on the cluster (others, by app; their objects are not changed): an
// object one of them renders is never deleted by this app's prune but
// handed to that app, whatever order the apps run in.
func (n *Neighbours) Rendering(c *kube.Client, others map[string][]*unstructured.Unstructured) {
	n.rendering, n.inRun = map[string]string{}, sets.New[string]()
	for app, objs := range others {
		n.inRun.Insert(app)
		for _, o := range objs {
			o = &unstructured.Unstructured{Object: o.Object}
			_, _, _ = c.ScopeShared(o) // kinds not served yet keep the render's namespace
			n.rendering[object.Path(o)] = app
		}
	}
}

// neighboursOf is what the parents among configMaps of apps other than
// app hold: those with an ApplySet ID, an app, and its parent's name.
func neighboursOf(configMaps []corev1.ConfigMap, app string) *Neighbours {
	n := &Neighbours{holders: map[string][]string{}, handingOver: map[string][]string{}, apps: map[string]string{}, inNamespace: map[string][]string{}, adopted: map[string]sets.Set[string]{}}
	for i := range configMaps {
		p := &configMaps[i]
		other := p.Annotations[AppAnnotation]
		if _, parent := p.Labels[apply.ApplySetParentIDLabel]; !parent || other == "" || other == app || p.Name != ParentName(other) {
			continue
		}
		n.apps[ID(other)] = other
		n.adopted[other] = adoptedOf(p)
		namespaces := sets.New[string]()
		handing := handingOf(p)
		for m := range contentsOf(p).Members {
			n.holders[m] = append(n.holders[m], other)
			if handing.Has(m) {
				n.handingOver[m] = append(n.handingOver[m], other)
			}
			if parts := strings.Split(m, "/"); len(parts) == 3 {
				namespaces.Insert(parts[1])
			}
		}
		for ns := range namespaces {
			n.inNamespace[ns] = append(n.inNamespace[ns], other)
		}
	}
	for _, m := range []map[string][]string{n.holders, n.inNamespace} {
		for k := range m {
			sort.Strings(m[k])
		}
	}
	return n
}

// Decision is the ownership rule's answer for a member of an app's set
// that the app no longer renders (or whose app is deleted): delete it,
// hand it to another app, release it, or leave it in the set.
type Decision struct {
	// Delete: nothing else claims it, nothing asks to keep it.
	Delete bool
	// To, when not empty, is the app it is handed to (it joins that
	// app's set); else a member not deleted is released (out of every
	// set, left as it is), unless Retain.
	To string
	// Retain: an input of the decision could not be read; the member is
	// neither deleted nor released but stays in the app's set, so that a
	// later prune decides again.
	Retain bool
	// Stay: handed to To, an app of this run, it stays in this app's
	// record, and under its label, until To's apply records it: To then
	// finds it held by an app that records it (not a label no record
	// backs, which it would adopt), and this app still lists it as its
	// member if To's apply never comes (a run killed in between); the
	// next prune here hands it over for good.
	Stay bool
	// Reason says why it is not deleted.
	Reason string
}

// Keep reports whether the member stays (not deleted).
func (d Decision) Keep() bool { return !d.Delete }

// Decide is the one ownership rule every delete of kubectl fleet asks
// (prune, delete, rollback, --atomic, and diff's prediction of them), for
// a member m of set s no longer rendered. It fails closed: when it cannot
// tell, the answer is keep, with the reason. In order:
//
//   - the other apps' records could not be read: retained;
//   - another app of this run renders it: handed to that app (an adopted
//     member is released instead, for that app to adopt in turn);
//   - another app still records it: handed to that app;
//   - the app adopted it (it existed before the app): released, unless
//     fleet.kubectl.io/prune: always;
//   - a Namespace with other apps' objects in it (recorded, or rendered
//     by this run), or in inUse: released;
//   - a CustomResourceDefinition of a kind another app of this run
//     renders: released;
//   - fleet.kubectl.io/prune: disabled: released;
//   - else: deleted. What the cluster holds beyond the records (objects
//     no app owns in a Namespace, custom resources of a CRD) is checked
//     by the caller, which reads the cluster, before it deletes.
//
// inUse are the namespaces the prune must not delete, with why: those of
// objects the app still applies and of members it keeps
// (NamespacesInUse).
func (n *Neighbours) Decide(s *Set, m *unstructured.Unstructured, inUse map[string]string) Decision {
	path := object.Path(m)
	keep := func(to, format string, args ...any) Decision {
		return Decision{To: to, Reason: fmt.Sprintf(format, args...)}
	}
	if n.unknown != nil {
		return Decision{Retain: true, Reason: fmt.Sprintf("not deleted: the other apps' inventories could not be read (%v); left in app %s, decided again at its next prune", n.unknown, s.App)}
	}
	adopted := s.Adopted.Has(path) && !object.PruneAlways(m)
	if app := n.rendering[path]; app != "" {
		if adopted {
			return keep("", "rendered by app %s in this run; released for it to adopt (it existed before app %s applied it)", app, s.App)
		}
		d := keep(app, "rendered by app %s in this run; handed to it, not deleted", app)
		// Until app records it: then it is app's alone.
		d.Stay = !slices.Contains(n.holders[path], app)
		return d
	}
	if apps := n.applying(path); len(apps) > 0 {
		return keep(apps[0], "shared with app %s, which still applies it; left to it", strings.Join(apps, ", "))
	}
	if adopted {
		return keep("", "adopted: it existed before app %s applied it; released, not deleted (%s: always deletes it)", s.App, object.PruneAnnotation)
	}
	if m.GetKind() == "Namespace" && m.GroupVersionKind().Group == "" {
		if apps := n.inNamespace[m.GetName()]; len(apps) > 0 {
			return keep("", "app %s has objects in it; left in place and no longer part of app %s", strings.Join(apps, ", "), s.App)
		}
		if app := n.renderingIn(m.GetName()); app != "" {
			return keep("", "app %s renders objects in it in this run; left in place and no longer part of app %s", app, s.App)
		}
		if why := inUse[m.GetName()]; why != "" {
			return keep("", "%s; left in place and no longer part of app %s", why, s.App)
		}
	}
	if m.GetKind() == "CustomResourceDefinition" && m.GroupVersionKind().Group == "apiextensions.k8s.io" {
		if app := n.renderingKind(m); app != "" {
			return keep("", "app %s renders custom resources of its kind in this run; left in place and no longer part of app %s", app, s.App)
		}
	}
	if object.PruneDisabled(m) {
		return keep("", "%s: disabled; left in place and no longer part of app %s", object.PruneAnnotation, s.App)
	}
	return Decision{Delete: true}
}

// applying are the other apps whose records list path, but for those
// that keep it only until the app they handed it to records it: they no
// longer apply it.
func (n *Neighbours) applying(path string) []string {
	return slices.DeleteFunc(slices.Clone(n.holders[path]), func(a string) bool { return slices.Contains(n.handingOver[path], a) })
}

// renderingIn is an app of this run that renders objects in namespace ns
// ("" for none), the first by name.
func (n *Neighbours) renderingIn(ns string) string {
	var apps []string
	for path, app := range n.rendering {
		if parts := strings.Split(path, "/"); len(parts) == 3 && parts[1] == ns {
			apps = append(apps, app)
		}
	}
	slices.Sort(apps)
	if len(apps) == 0 {
		return ""
	}
	return apps[0]
}

// renderingKind is an app of this run that renders custom resources of
// crd's kind ("" for none), the first by name.
func (n *Neighbours) renderingKind(crd *unstructured.Unstructured) string {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	if kind == "" {
		return ""
	}
	prefix := kind + "." + group + "/"
	var apps []string
	for path, app := range n.rendering {
		if strings.HasPrefix(path, prefix) {
			apps = append(apps, app)
		}
	}
	slices.Sort(apps)
	if len(apps) == 0 {
		return ""
	}
	return apps[0]
}

// NamespacesInUse are the namespaces a prune of set s must not delete:
// those of the objects it still applies (a Namespace dropped from the
// render while objects in it stay), and those of the doomed members it
// keeps (fleet.kubectl.io/prune: disabled, shared).
func (n *Neighbours) NamespacesInUse(s *Set, applied sets.Set[string], doomed []*unstructured.Unstructured) map[string]string {
	inUse := map[string]string{}
	for ns := range applied {
		inUse[ns] = fmt.Sprintf("objects app %s still applies are in it", s.App)
	}
	for _, m := range doomed {
		ns := m.GetNamespace()
		if _, done := inUse[ns]; done || ns == "" {
			continue
		}
		if n.Decide(s, m, nil).Keep() {
			inUse[ns] = fmt.Sprintf("%s, which is kept, is in it", object.Ref(m))
		}
	}
	return inUse
}

// Claim is which set an object an app applies belongs to.
type Claim struct {
	// PartOf is the ID of the set whose label the object gets.
	PartOf string
	// Warning says the object is shared with another app, or taken from
	// the one that held it.
	Warning string
	// Adopt: the object exists, is not the app's yet, and kubectl fleet
	// did not create it (no set of an app of this cluster holds it, or
	// the app that held it had adopted it); the app takes it over, and
	// records that it did.
	Adopt bool
}

// Claim decides which set an object that set s applies belongs to, and
// warns when it is shared with another app or taken from the one that
// held it. An object that other apps' records list too stays in the set of
// the one holding it, so that apps sharing it do not take it from each
// other at every apply; the field values of the last apply win. live is
// the live object's metadata, nil if it does not exist.
func (n *Neighbours) Claim(s *Set, path string, live *kube.Live) Claim {
	var holder string
	if live != nil {
		holder = live.Labels[apply.ApplysetPartOfLabel]
	}
	if apps := n.holders[path]; len(apps) > 0 {
		if (holder == s.ID || slices.Contains(apps, n.apps[holder])) && n.handing(apps, path) {
			// Handed to us by the apps that record it, which this run
			// applies without it (still under their label, which they
			// keep until we record it): ours, the same object, and
			// adopted as it was theirs (someone else's before).
			adopted := slices.ContainsFunc(apps, func(a string) bool { return n.adopted[a].Has(path) })
			return Claim{PartOf: s.ID, Warning: fmt.Sprintf("moved from app %s to app %s", strings.Join(apps, ", "), s.App), Adopt: adopted}
		}
		c := Claim{PartOf: s.ID, Warning: fmt.Sprintf("shared with app %s, which applies it too (the last apply wins)", strings.Join(apps, ", "))}
		if slices.Contains(apps, n.apps[holder]) {
			c.PartOf = holder
		}
		c.Adopt = !s.Contents.Members.Has(path) && n.adopted[n.apps[holder]].Has(path)
		return c
	}
	switch from := n.apps[holder]; {
	case live == nil:
		return Claim{PartOf: s.ID}
	case holder == s.ID && s.Contents.Members.Has(path):
		// Ours already (the parent records every member before it is
		// labelled).
		return Claim{PartOf: s.ID}
	case holder == s.ID:
		// Our label, but no record of ours (nor another app's) backs it:
		// a label set by hand, a copy. Adopted, never deleted.
		return Claim{PartOf: s.ID, Warning: fmt.Sprintf("labelled as app %s's, which does not record it; adopted", s.App), Adopt: true}
	case holder == "":
		return Claim{PartOf: s.ID, Adopt: true}
	case from != "":
		// Labelled as another app's that does not record it (those that
		// do are holders): the label alone proves nothing (a copy, a
		// label set by hand), so the object is adopted, never deleted.
		return Claim{PartOf: s.ID, Warning: fmt.Sprintf("labelled as app %s's, which does not record it; adopted by app %s", from, s.App), Adopt: true}
	default:
		return Claim{PartOf: s.ID, Warning: fmt.Sprintf("taken from another ApplySet (%s=%s)", apply.ApplysetPartOfLabel, holder), Adopt: true}
	}
}

// Label marks obj as a member of the set with the given ID. obj's
// metadata must be its own (object.CopyMeta): its labels are changed in
// place, not copied (apply labels every object of every cluster twice).
func Label(obj *unstructured.Unstructured, id string) {
	own, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "labels")
	if l, ok := own.(map[string]any); ok {
		l[apply.ApplysetPartOfLabel] = id
		return
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[apply.ApplysetPartOfLabel] = id
	obj.SetLabels(labels)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Label marks obj as a member of the set.
func (s *Set) Label(obj *unstructured.Unstructured) { Label(obj, s.ID) }

// ErrOtherFleet refuses a set another fleet owns.
var ErrOtherFleet = errors.New("the app belongs to another fleet")

// OwnedBy claims the set for fleet (its metadata.name), or refuses it
// when another fleet's parent records it: two fleets with an app of one
// name on a cluster would otherwise share one set, and each prune the
// other's objects. A parent an earlier version wrote names no fleet: the
// next apply claims it (its members, adoptions and revisions unchanged).
// An empty fleet (a caller with no fleet file) claims nothing.
func (s *Set) OwnedBy(fleet string) error {
	if err := s.Foreign(fleet); err != nil {
		return err
	}
	if fleet != "" {
		s.Fleet = fleet
	}
	return nil
}

// Foreign is OwnedBy's refusal, without the claim: an ErrOtherFleet when
// another fleet's parent records the set, for commands that only read it
// (history).
func (s *Set) Foreign(fleet string) error {
	if fleet != "" && s.Exists && s.Fleet != "" && s.Fleet != fleet {
		return fmt.Errorf("%w: app %s on this cluster is fleet %s's (configmap %s/%s, %s=%s), not fleet %s's; refusing to change it: rename the app in one of the fleets, or delete it with fleet %s first", ErrOtherFleet, s.App, s.Fleet, Namespace, ParentName(s.App), FleetAnnotation, s.Fleet, fleet, s.Fleet)
	}
	return nil
}

// Holds reports whether the parent as read (before) says already what
// writing s with contents and version would, but the time of the last
// apply: an apply that changed nothing writes nothing.
func (s *Set) Holds(before *Set, contents Contents, version string) bool {
	return before.Exists && before.Contents.Equal(contents) && before.Version == version && before.Fleet == s.Fleet &&
		before.Revision == s.Revision && before.Digest == s.Digest && before.Source == s.Source &&
		maps.Equal(before.Applied, s.Applied) && before.AppliedDigest == s.AppliedDigest &&
		before.Adopted.Equal(s.Adopted.Intersection(contents.Members)) && before.Handing.Equal(s.Handing.Intersection(contents.Members))
}

// WriteParent records the set's contents in the parent object (creating
// the kubectl-fleet namespace if needed), with server-side apply.
// lastApplied, when not zero, is recorded too.
func (s *Set) WriteParent(ctx context.Context, c *kube.Client, contents Contents, lastApplied time.Time, fieldManager, version string) error {
	kinds := make([]string, 0, contents.GroupKinds.Len())
	for gk := range contents.GroupKinds {
		kinds = append(kinds, gk.String())
	}
	sort.Strings(kinds)
	ann := map[string]any{
		apply.ApplySetToolingAnnotation:              ToolName + "/" + version,
		apply.ApplySetGKsAnnotation:                  strings.Join(kinds, ","),
		apply.ApplySetAdditionalNamespacesAnnotation: strings.Join(sets.List(contents.Namespaces.Clone().Delete(Namespace)), ","),
		AppAnnotation: s.App,
	}
	if s.Fleet != "" {
		ann[FleetAnnotation] = s.Fleet
	}
	adopted, handing := s.Adopted.Intersection(contents.Members), s.Handing.Intersection(contents.Members)
	if s.Revision > 0 {
		ann[RevisionAnnotation] = strconv.Itoa(s.Revision)
		ann[DigestAnnotation] = s.Digest
		if s.Source != "" {
			ann[SourceAnnotation] = s.Source
		}
	}
	applied := appliedData(s.Applied)
	if applied != "" {
		ann[AppliedFormatAnnotation] = AppliedFormat
	}
	if applied != "" && s.AppliedDigest != "" {
		ann[AppliedDigestAnnotation] = s.AppliedDigest
	}
	if !lastApplied.IsZero() {
		ann[LastAppliedAnnotation] = lastApplied.UTC().Format(time.RFC3339)
	} else if s.LastApplied != "" {
		ann[LastAppliedAnnotation] = s.LastApplied
	}
	parent := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": ParentName(s.App), "namespace": Namespace,
			"labels":      map[string]any{apply.ApplySetParentIDLabel: s.ID},
			"annotations": ann,
		},
		"data": map[string]any{MembersKey: strings.Join(sets.List(contents.Members), "\n"), AppliedKey: applied, AdoptedKey: strings.Join(sets.List(adopted), "\n")},
	}
	if handing.Len() > 0 {
		parent["data"].(map[string]any)[HandingKey] = strings.Join(sets.List(handing), "\n")
	}
	err := applyRaw(ctx, c, parentGVR, Namespace, ParentName(s.App), parent, fieldManager)
	if kube.IsNamespaceNotFound(err) {
		// Made by the first lock or digest key on the cluster, as a rule:
		// made here only when it is not there, not asked for every time.
		if err := c.EnsureNamespace(ctx, Namespace, fieldManager); err != nil {
			return fmt.Errorf("creating namespace %s for the inventory: %w", Namespace, err)
		}
		err = applyRaw(ctx, c, parentGVR, Namespace, ParentName(s.App), parent, fieldManager)
	}
	if err != nil {
		return fmt.Errorf("writing the inventory of app %s: %w", s.App, err)
	}
	s.Exists, s.Contents, s.Version, s.Adopted, s.Handing = true, contents, version, adopted, handing
	return nil
}

func applyRaw(ctx context.Context, c *kube.Client, gvr schema.GroupVersionResource, ns, name string, obj map[string]any, fieldManager string) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	force := true
	ri := c.Dynamic.Resource(gvr)
	if ns != "" {
		_, err = ri.Namespace(ns).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	} else {
		_, err = ri.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	}
	return err
}

// Members lists the live members of the set: every object of its kinds, in
// its namespaces (or cluster-wide for cluster-scoped kinds), and of extra's,
// that carries the set's part-of label and that the parent (or extra)
// records as a member. Membership is the record; the label is a check:
// an object that carries the label without being recorded (a user's copy
// of a member under another name, a controller copying labels) is no
// member, and nothing kubectl fleet deletes. Kinds the cluster no longer
// serves are skipped.
func (s *Set) Members(ctx context.Context, c *kube.Client, extra Contents) ([]*unstructured.Unstructured, error) {
	return KeepMembers(ctx, c, s, extra, kube.AllFields, func(m *unstructured.Unstructured) (*unstructured.Unstructured, bool) { return m, true })
}

// KeepMembers is s's Members, keeping of each member what keep returns of
// it as it is listed (nothing when keep says false): the lists are read
// item by item (kube.Client.ListEach), so that what a caller does not keep
// of a member (all but its health, a member it will not delete) is let go
// at once rather than when every list of the set has been read, and what
// it never reads (fields: kube.Fields) is never decoded. keep may be
// called from several goroutines at once, never twice for one member.
// Objects that are not members are never given to it.
func KeepMembers[T any](ctx context.Context, c *kube.Client, s *Set, extra Contents, fields kube.Fields, keep func(*unstructured.Unstructured) (T, bool)) ([]T, error) {
	selector := apply.ApplysetPartOfLabel + "=" + s.ID
	gks := s.GroupKinds.Union(extra.GroupKinds)
	nss := sets.List(s.Namespaces.Union(extra.Namespaces))
	type list struct {
		m  *meta.RESTMapping
		ns string
	}
	var lists []list
	for _, gk := range sets.List(gksAsStrings(gks)) {
		m, err := c.MappingFor(schema.ParseGroupKind(gk))
		if err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, err
		}
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			lists = append(lists, list{m, ""})
			continue
		}
		for _, ns := range nss {
			lists = append(lists, list{m, ns})
		}
	}
	// The lists are reads: a few at a time, in one round trip or so.
	results := make([][]T, len(lists))
	var g errgroup.Group
	g.SetLimit(8)
	for i, l := range lists {
		g.Go(func() error {
			return c.ListEach(ctx, l.m, l.ns, selector, fields, func(item *unstructured.Unstructured) {
				if path := object.Path(item); !s.Contents.Members.Has(path) && !extra.Members.Has(path) {
					return
				}
				if kept, ok := keep(item); ok {
					results[i] = append(results[i], kept)
				}
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.Concat(results...), nil
}

func gksAsStrings(gks sets.Set[schema.GroupKind]) sets.Set[string] {
	out := sets.New[string]()
	for gk := range gks {
		out.Insert(gk.String())
	}
	return out
}

// Release takes a member out of the set without deleting it: with a
// non-empty to, it joins that app's set; else it loses the part-of label
// and fieldManager's entries in its managed fields, so that it is left
// as it is, no longer anyone's in kubectl fleet, and a later apply by
// another tool or by hand meets no conflict with us. The patch is
// conditional on the object's resourceVersion (a concurrent change is
// read again), and a uid precondition keeps it on the object listed.
func (s *Set) Release(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, to, fieldManager string) error {
	for range 3 {
		if obj.GetLabels()[apply.ApplysetPartOfLabel] != s.ID {
			return nil
		}
		patch, err := releasePatch(obj, to, fieldManager)
		if err != nil {
			return err
		}
		_, err = ri.Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("taking %s out of app %s: %w", obj.GetName(), s.App, err)
		}
		uid := obj.GetUID()
		if obj, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{}); apierrors.IsNotFound(err) || err == nil && obj.GetUID() != uid {
			return nil // gone, or another object under its name
		} else if err != nil {
			return fmt.Errorf("taking %s out of app %s: %w", obj.GetName(), s.App, err)
		}
	}
	return fmt.Errorf("taking %s out of app %s: it kept changing", obj.GetName(), s.App)
}

// releasePatch is the merge patch Release sends.
func releasePatch(obj *unstructured.Unstructured, to, fieldManager string) ([]byte, error) {
	var label any // nil: removed
	if to != "" {
		label = ID(to)
	}
	md := map[string]any{
		"labels":          map[string]any{apply.ApplysetPartOfLabel: label},
		"resourceVersion": obj.GetResourceVersion(),
		"uid":             obj.GetUID(),
	}
	if to == "" {
		managers := obj.GetManagedFields()
		kept := slices.DeleteFunc(slices.Clone(managers), func(e metav1.ManagedFieldsEntry) bool { return e.Manager == fieldManager })
		switch {
		case len(kept) == len(managers):
		case len(kept) == 0:
			// An empty list leaves them unchanged; one empty entry
			// clears them (the documented way to strip managed fields).
			md["managedFields"] = []any{map[string]any{}}
		default:
			md["managedFields"] = kept
		}
	}
	return json.Marshal(map[string]any{"metadata": md})
}

// Unchanged reports whether an apply by this plugin version may skip the
// object at path: the last apply, by the same version, sent exactly this
// (digest, as Digest computes it from the object as apply would send it)
// and the live object's resourceVersion is still the one the server
// returned then. live is nil for an object that does not exist.
func (s *Set) Unchanged(path, digest string, live *kube.Live, version string) bool {
	if !s.Exists || live == nil || s.Version != version || digest == "" || !releaseBuild(version) {
		return false
	}
	last, ok := s.Applied[path]
	return ok && last.Digest == digest && last.ResourceVersion == live.ResourceVersion && last.UID != "" && last.UID == string(live.UID)
}

// releaseBuild reports whether version names a build whose behaviour the
// record can vouch for: a development build ("dev", no version stamped)
// may have changed what it sends without changing its name, so it never
// skips.
func releaseBuild(version string) bool { return version != "" && version != "dev" }

// Moved returns the objects of objs (the render whose digest is
// renderDigest) that may differ from what the cluster has: all of them
// unless the last apply, by this plugin version, sent this very render;
// else those it has no record of, and those whose live resourceVersion is
// not the one the server returned then (edited since, or gone). The rest
// are, to the version, what the last apply made them. Errors only make
// objects count as moved.
func (s *Set) Moved(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, renderDigest, version string) []*unstructured.Unstructured {
	if !s.Exists || s.AppliedDigest != renderDigest || s.Version != version || len(s.Applied) == 0 || !releaseBuild(version) {
		return objs
	}
	var (
		listings kube.Listings
		wg       sync.WaitGroup
		moved    = make([]bool, len(objs))
	)
	for i, o := range objs {
		o = &unstructured.Unstructured{Object: o.Object} // put in scope, the render's maps unchanged
		_, m, err := c.ScopeShared(o)
		rec, ok := s.Applied[object.Path(o)]
		if err != nil || !ok || c.Aggregated(ctx, o.GroupVersionKind().GroupVersion()) {
			moved[i] = true
			continue
		}
		wg.Go(func() {
			listed, _ := listings.Of(ctx, c, m, o.GetNamespace())
			live := listed[o.GetName()]
			moved[i] = live == nil || live.ResourceVersion != rec.ResourceVersion || rec.UID == "" || string(live.UID) != rec.UID
		})
	}
	wg.Wait()
	var out []*unstructured.Unstructured
	for i, o := range objs {
		if moved[i] {
			out = append(out, o)
		}
	}
	return out
}
