package diff

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// Kind is what apply would do to an object.
type Kind string

// The kinds of object difference.
const (
	Create    Kind = "create"
	Change    Kind = "change"
	Unchanged Kind = "unchanged"
	// Prune: apply --prune would delete the object.
	Prune Kind = "prune"
	// AfterCRD: the object's kind comes from a CRD in the same render that
	// the cluster does not have yet; it would be created after it.
	AfterCRD Kind = "after-crd"
)

// Object is the difference for one object. Live and Merged are normalized
// and, unless asked otherwise, masked; either may be nil.
type Object struct {
	Ref    string
	Path   string
	Kind   Kind
	Live   *unstructured.Unstructured
	Merged *unstructured.Unstructured
	// Text is the unified diff of Live and Merged as YAML.
	Text string
	// Current is the live object as read, status included and unmasked:
	// for health checks, never for printing.
	Current *unstructured.Unstructured
	Err     error
}

// Options configure a diff.
type Options struct {
	App          string
	FieldManager string
	Force        bool
	ShowSecrets  bool
	// Concurrency bounds the object requests in flight.
	Concurrency int
	// Context lines around each change.
	Context int
	// Cluster names the cluster in diff headers.
	Cluster string
	// Set is the app's inventory, if the caller has read it already.
	Set *inventory.Set
}

// Run computes, for one app on one cluster, what apply --prune would do:
// each rendered object is server-side applied with dry run and compared
// with the live object; members of the app's ApplySet that are no longer
// rendered are prunes. objs are labelled as members, as apply would.
func Run(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, o Options) ([]Object, error) {
	set := o.Set
	if set == nil {
		var err error
		if set, err = inventory.Load(ctx, c, o.App); err != nil {
			return nil, err
		}
	}
	crds := CRDKinds(objs)
	newNS := Namespaces(objs)
	out := make([]Object, len(objs))
	sem := make(chan struct{}, max(1, o.Concurrency))
	var wg sync.WaitGroup
	for i, obj := range objs {
		obj = obj.DeepCopy()
		set.Label(obj)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = one(ctx, c, obj, crds, newNS, o)
		}()
	}
	wg.Wait()

	rendered := map[string]bool{}
	for _, d := range out {
		rendered[d.Path] = true
	}
	if !set.Exists {
		return out, nil
	}
	gks, nss := inventory.Scope(objs)
	members, err := set.Members(ctx, c, gks, nss)
	if err != nil {
		return nil, fmt.Errorf("listing the members of app %s: %w", o.App, err)
	}
	for _, m := range members {
		if rendered[Path(m)] {
			continue
		}
		d := Object{Ref: Ref(m), Path: Path(m), Kind: Prune, Live: Normalize(m), Current: m}
		if err := finish(&d, o); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func one(ctx context.Context, c *kube.Client, obj *unstructured.Unstructured, crds map[schema.GroupKind]bool, newNS map[string]bool, o Options) Object {
	d := Object{Ref: Ref(obj), Path: Path(obj)}
	before, after, err := c.Apply(ctx, obj, kube.ApplyOptions{FieldManager: o.FieldManager, Force: o.Force, DryRun: true})
	d.Path = Path(obj) // the namespace may have been defaulted
	d.Current = before
	switch {
	case err != nil && meta.IsNoMatchError(err) && crds[obj.GroupVersionKind().GroupKind()]:
		d.Kind, d.Merged = AfterCRD, Normalize(obj)
	case err != nil && IsNamespaceNotFound(err) && newNS[obj.GetNamespace()]:
		// Its namespace is created by the same apply, so the server cannot
		// dry-run it yet: it is new, shown as rendered.
		d.Kind, d.Merged = Create, Normalize(obj)
	case err != nil:
		d.Err = err
		return d
	case before == nil:
		d.Kind, d.Merged = Create, Normalize(after)
	default:
		d.Live, d.Merged = Normalize(before), Normalize(after)
		d.Kind = Change
		if Same(before, after) {
			d.Kind = Unchanged
		}
	}
	if err := finish(&d, o); err != nil {
		d.Err = err
	}
	return d
}

// finish masks Secrets and computes the text diff.
func finish(d *Object, o Options) error {
	if !o.ShowSecrets {
		var err error
		if d.Live, d.Merged, err = Mask(d.Live, d.Merged); err != nil {
			return err
		}
	}
	if d.Kind == Unchanged {
		return nil
	}
	live, err := ToYAML(d.Live)
	if err != nil {
		return err
	}
	merged, err := ToYAML(d.Merged)
	if err != nil {
		return err
	}
	d.Text = Unified("live/"+o.Cluster+"/"+d.Path, "merged/"+o.Cluster+"/"+d.Path, live, merged, o.Context)
	return nil
}

// IsNamespaceNotFound reports an error about a missing namespace.
func IsNamespaceNotFound(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || !apierrors.IsNotFound(err) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// Namespaces lists the Namespaces among objs.
func Namespaces(objs []*unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GroupVersionKind().Group == "" {
			out[o.GetName()] = true
		}
	}
	return out
}

// CRDKinds lists the kinds the CRDs among objs define.
func CRDKinds(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		out[schema.GroupKind{Group: group, Kind: kind}] = true
	}
	return out
}

// Same reports whether two versions of an object differ only in noise.
func Same(a, b *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(Normalize(a).Object, Normalize(b).Object)
}

// Summary counts a cluster's differences.
type Summary struct {
	Create, Change, Prune, Unchanged, Errors int
}

// Summarize counts diffs by kind; AfterCRD counts as a creation.
func Summarize(diffs []Object) Summary {
	var s Summary
	for _, d := range diffs {
		switch {
		case d.Err != nil:
			s.Errors++
		case d.Kind == Create || d.Kind == AfterCRD:
			s.Create++
		case d.Kind == Change:
			s.Change++
		case d.Kind == Prune:
			s.Prune++
		default:
			s.Unchanged++
		}
	}
	return s
}

// Differs reports whether anything would change.
func (s Summary) Differs() bool { return s.Create+s.Change+s.Prune > 0 }
