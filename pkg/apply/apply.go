// Package apply applies one app's objects to one cluster: server-side
// apply with a fixed field manager, CRDs and Namespaces first (waiting for
// CRDs to be established), the rest concurrently, ApplySet inventory and
// prune, and an optional wait for health by kstatus rules. It never sees
// cobra: commands hand it a Config.
package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubectl-fleet/kubectl-fleet/internal/memo"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

// FieldManager owns every field kubectl fleet applies.
const FieldManager = "kubectl-fleet"

// Action is what happened to one object.
type Action string

// The actions.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	Pruned     Action = "pruned"
	Failed     Action = "failed"
	// Skipped: not applied, because an earlier stage failed, or (dry run)
	// because its CRD is not installed yet.
	Skipped Action = "skipped"
	// Healthy and Unhealthy report --wait.
	Healthy   Action = "healthy"
	Unhealthy Action = "unhealthy"
)

// Change is one object's outcome.
type Change struct {
	// Ref is kind.group/name, as kubectl prints it.
	Ref       string
	Namespace string
	Action    Action
	// Reason explains a skip or a health state.
	Reason string
	Err    error
}

// Config is one app's apply to one cluster.
type Config struct {
	App     string
	Version string
	Objects []*unstructured.Unstructured
	DryRun  bool
	Force   bool
	Prune   bool
	// AllowEmpty lets an empty render prune everything.
	AllowEmpty bool
	Wait       bool
	Timeout    time.Duration
	// Concurrency bounds the object requests in flight.
	Concurrency int
	// Report receives each change as it happens; it must be safe for
	// concurrent use.
	Report func(Change)
}

// ErrEmptyPrune refuses to prune everything because of an empty render.
var ErrEmptyPrune = errors.New("the render is empty: --prune would delete every object of the app; refusing without --allow-empty")

// Run applies cfg to the cluster. It returns an error if anything failed.
// When ctx is cancelled (Ctrl-C) no new request starts; requests in flight
// finish or time out (--request-timeout), and Run returns ctx's error.
func Run(ctx context.Context, c *kube.Client, cfg Config) error {
	stop := ctx
	ctx = context.WithoutCancel(ctx)
	if len(cfg.Objects) == 0 && cfg.Prune && !cfg.AllowEmpty {
		return ErrEmptyPrune
	}
	set, err := inventory.Load(ctx, c, cfg.App)
	if err != nil {
		return err
	}
	objs := make([]*unstructured.Unstructured, len(cfg.Objects))
	for i, o := range cfg.Objects {
		objs[i] = o.DeepCopy()
		set.Label(objs[i])
		// A namespaced object without a namespace goes to the context's
		// namespace; the set must record it. (Kinds not served yet are
		// mapped, and fail, later.)
		_, _, _ = c.DefaultNamespace(objs[i])
	}
	gks, nss := inventory.Scope(objs)
	if !cfg.DryRun {
		// Record the union of the old and new scope first, so that a failure
		// half-way never orphans a member from the set.
		if err := set.WriteParent(ctx, c, set.GroupKinds.Union(gks), set.Namespaces.Union(nss), time.Time{}, FieldManager, cfg.Version); err != nil {
			return err
		}
	}
	first, rest := stages(objs)
	if err := applyAll(stop, ctx, c, first, cfg, nil, nil); err != nil {
		return err
	}
	var (
		pending map[schema.GroupKind]bool
		newNS   map[string]bool
	)
	if cfg.DryRun {
		newNS = object.Namespaces(first)
	}
	if crds := crdsOf(first); len(crds) > 0 {
		if cfg.DryRun {
			pending = notServed(c, object.CRDKinds(crds))
		} else {
			if err := waitEstablished(stop, c, crds, cfg.Timeout); err != nil {
				return err
			}
			c.Mapper.Reset()
		}
	}
	if err := applyAll(stop, ctx, c, rest, cfg, pending, newNS); err != nil {
		return err
	}
	if cfg.Prune && stop.Err() == nil {
		if err := prune(ctx, c, set, objs, gks, nss, cfg); err != nil {
			return err
		}
	}
	if !cfg.DryRun {
		newGKs, newNSs := gks, nss
		if !cfg.Prune {
			newGKs, newNSs = set.GroupKinds.Union(gks), set.Namespaces.Union(nss)
		}
		if err := set.WriteParent(ctx, c, newGKs, newNSs, time.Now(), FieldManager, cfg.Version); err != nil {
			return err
		}
	}
	if cfg.Wait && !cfg.DryRun {
		return waitHealthy(stop, c, objs, cfg)
	}
	return nil
}

// stages splits objects: CRDs and Namespaces first, then the rest.
func stages(objs []*unstructured.Unstructured) (first, rest []*unstructured.Unstructured) {
	for _, o := range objs {
		if object.IsFirst(o) {
			first = append(first, o)
		} else {
			rest = append(rest, o)
		}
	}
	return first, rest
}

// applyAll applies objects concurrently. Objects of a kind in pending, and
// (dry run) objects in a namespace of newNS, are reported skipped: a dry
// run cannot apply instances of a CRD or into a namespace it did not
// create. Every failure is reported; the error sums them up.
func applyAll(stop, ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, cfg Config, pending map[schema.GroupKind]bool, newNS map[string]bool) error {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
	)
	sem := make(chan struct{}, max(1, cfg.Concurrency))
	rvs := &versions{}
	for _, obj := range objs {
		if stop.Err() != nil {
			break
		}
		if pending[obj.GroupVersionKind().GroupKind()] {
			cfg.Report(Change{Ref: object.Ref(obj), Namespace: obj.GetNamespace(), Action: Skipped, Reason: "would be created after its CRD"})
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ch := applyOne(ctx, c, obj, cfg, rvs)
			if cfg.DryRun && ch.Err != nil && kube.IsNamespaceNotFound(ch.Err) && newNS[obj.GetNamespace()] {
				ch = Change{Ref: ch.Ref, Namespace: ch.Namespace, Action: Skipped, Reason: "its namespace is created by this apply; not validated by the server"}
			}
			if ch.Err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
			}
			cfg.Report(ch)
		}()
	}
	wg.Wait()
	if err := stop.Err(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d objects failed", failed, len(objs))
	}
	return nil
}

// applyOne applies one object. A real apply tells created, configured and
// unchanged apart by the resource versions listed once per resource and
// namespace (one request, not a read per object); a dry run, whose result
// keeps the old version, compares the objects.
func applyOne(ctx context.Context, c *kube.Client, obj *unstructured.Unstructured, cfg Config, rvs *versions) Change {
	opts := kube.ApplyOptions{FieldManager: FieldManager, Force: cfg.Force, DryRun: cfg.DryRun}
	ch := Change{Ref: object.Ref(obj), Namespace: obj.GetNamespace()}
	fail := func(err error) Change {
		ch.Action, ch.Err, ch.Namespace = Failed, explain(err), obj.GetNamespace()
		return ch
	}
	if !cfg.DryRun {
		ri, m, err := c.DefaultNamespace(obj)
		if err != nil {
			return fail(err)
		}
		ch.Namespace = obj.GetNamespace()
		if known, err := rvs.of(ctx, c, m, obj.GetNamespace()); err == nil {
			after, err := c.Patch(ctx, ri, obj, opts)
			if err != nil {
				return fail(err)
			}
			old, existed := known[obj.GetName()]
			switch {
			case !existed:
				ch.Action = Created
			case old == after.GetResourceVersion():
				ch.Action = Unchanged
			default:
				ch.Action = Configured
			}
			return ch
		}
		// Not allowed to list: read the object itself.
	}
	before, after, err := c.Apply(ctx, obj, opts)
	ch.Namespace = obj.GetNamespace()
	switch {
	case err != nil:
		return fail(err)
	case before == nil:
		ch.Action = Created
	case before.GetResourceVersion() == after.GetResourceVersion() && !cfg.DryRun:
		ch.Action = Unchanged
	case cfg.DryRun && object.Same(before, after):
		ch.Action = Unchanged
	default:
		ch.Action = Configured
	}
	return ch
}

// versions lists resource versions once per resource and namespace, on
// first use, for concurrent callers.
type versions struct {
	memo memo.Memo[string, map[string]string]
}

func (v *versions) of(ctx context.Context, c *kube.Client, m *meta.RESTMapping, ns string) (map[string]string, error) {
	return v.memo.Do(m.Resource.String()+"|"+ns, func() (map[string]string, error) { return c.ResourceVersions(ctx, m, ns) })
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// explain adds advice to errors users can act on.
func explain(err error) error {
	if apierrors.IsConflict(err) {
		return fmt.Errorf("%w (another field manager owns these fields; --force-conflicts takes them over)", err)
	}
	return err
}

func crdsOf(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			out = append(out, o)
		}
	}
	return out
}

// notServed returns the kinds the cluster does not serve yet.
func notServed(c *kube.Client, kinds map[schema.GroupKind]bool) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for gk := range kinds {
		if _, err := c.MappingFor(gk); err != nil && meta.IsNoMatchError(err) {
			out[gk] = true
		}
	}
	return out
}

// waitEstablished waits until every CRD reports Established.
func waitEstablished(ctx context.Context, c *kube.Client, crds []*unstructured.Unstructured, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, crd := range crds {
		for {
			live, err := c.Dynamic.Resource(gvr).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err == nil && conditionTrue(live, "Established") {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established: %w", crd.GetName(), ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func conditionTrue(o *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}

// prune deletes the set's live members that are no longer rendered, in
// reverse dependency order, never anything outside the set.
func prune(ctx context.Context, c *kube.Client, set *inventory.Set, objs []*unstructured.Unstructured, gks sets.Set[schema.GroupKind], nss sets.Set[string], cfg Config) error {
	if !set.Exists && !cfg.DryRun {
		return nil
	}
	keep := map[string]bool{}
	for _, o := range objs {
		keep[object.Path(o)] = true
	}
	members, err := set.Members(ctx, c, gks, nss)
	if err != nil {
		return fmt.Errorf("listing the members of app %s: %w", cfg.App, err)
	}
	var doomed []*unstructured.Unstructured
	for _, m := range members {
		if !keep[object.Path(m)] {
			doomed = append(doomed, m)
		}
	}
	// Namespaces and CRDs last: their deletion takes their contents along.
	slices.SortStableFunc(doomed, func(a, b *unstructured.Unstructured) int {
		return boolInt(object.IsFirst(a)) - boolInt(object.IsFirst(b))
	})
	var errs []error
	for _, m := range doomed {
		ri, _, err := c.Resource(m)
		if err == nil {
			opts := metav1.DeleteOptions{}
			if cfg.DryRun {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			err = ri.Delete(ctx, m.GetName(), opts)
			if apierrors.IsNotFound(err) {
				err = nil
			}
		}
		ch := Change{Ref: object.Ref(m), Namespace: m.GetNamespace(), Action: Pruned}
		if err != nil {
			ch.Action, ch.Err = Failed, fmt.Errorf("prune: %w", err)
			errs = append(errs, err)
		}
		cfg.Report(ch)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d objects could not be pruned", len(errs))
	}
	return nil
}

// waitHealthy polls objects until kstatus calls every one Current, one
// Failed, or the timeout passes.
func waitHealthy(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, cfg Config) error {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pending := slices.Clone(objs)
	last := map[string]string{}
	for {
		// One round reads every pending object, concurrently.
		results := make([]*status.Result, len(pending))
		errs := make([]error, len(pending))
		sem := make(chan struct{}, max(1, cfg.Concurrency))
		var wg sync.WaitGroup
		for i, o := range pending {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				results[i], errs[i] = health(ctx, c, o)
			}()
		}
		wg.Wait()
		var still []*unstructured.Unstructured
		for i, o := range pending {
			res, err := results[i], errs[i]
			switch {
			case err != nil:
				still = append(still, o)
				if ctx.Err() == nil {
					last[object.Path(o)] = err.Error()
				}
			case res.Status == status.CurrentStatus:
				cfg.Report(Change{Ref: object.Ref(o), Namespace: o.GetNamespace(), Action: Healthy})
			case res.Status == status.FailedStatus:
				cfg.Report(Change{Ref: object.Ref(o), Namespace: o.GetNamespace(), Action: Unhealthy, Reason: res.Message})
				return fmt.Errorf("%s is %s: %s", object.Ref(o), res.Status, res.Message)
			default:
				still = append(still, o)
				last[object.Path(o)] = string(res.Status) + ": " + res.Message
			}
		}
		if len(still) == 0 {
			return nil
		}
		pending = still
		select {
		case <-ctx.Done():
			for _, o := range pending {
				cfg.Report(Change{Ref: object.Ref(o), Namespace: o.GetNamespace(), Action: Unhealthy, Reason: last[object.Path(o)]})
			}
			return fmt.Errorf("%d objects not healthy after %s", len(pending), timeout)
		case <-time.After(time.Second):
		}
	}
}

// health reads an object and computes its kstatus.
func health(ctx context.Context, c *kube.Client, o *unstructured.Unstructured) (*status.Result, error) {
	ri, _, err := c.Resource(o)
	if err != nil {
		return nil, err
	}
	live, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return status.Compute(live)
}
