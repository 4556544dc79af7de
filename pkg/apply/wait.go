package apply

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// What apply waits for: CRDs established before their custom resources,
// and (--wait, phases, tests) objects healthy by kstatus rules.

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

// waitHealthy polls objects until kstatus calls every one Current, one
// Failed, or the timeout passes.
// waiting is the stage of the final wait: how long at most, and why.
func waiting(cfg Config) string {
	s := "waiting until healthy, up to " + waitTimeout(cfg).String()
	if cfg.WaitWhy != "" {
		s += " (" + cfg.WaitWhy + ")"
	}
	return s
}

// waitTimeout is how long a wait lasts at most (--timeout).
func waitTimeout(cfg Config) time.Duration {
	if cfg.Timeout <= 0 {
		return 5 * time.Minute
	}
	return cfg.Timeout
}

func waitHealthy(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, cfg Config) error {
	timeout := waitTimeout(cfg)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pending := slices.Clone(objs)
	last := map[string]string{}
	for {
		// One round reads every pending object, concurrently, under the
		// cluster's and the process's bounds; one not read (the wait is
		// over) stays pending.
		results := make([]*status.Result, len(pending))
		errs := make([]error, len(pending))
		for i := range errs {
			errs[i] = context.Canceled
		}
		kube.NewSlots(cfg.Concurrency).Each(ctx, len(pending), func(i int) {
			results[i], errs[i] = Health(ctx, c, pending[i])
		})
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
				cfg.Report(Change{Ref: object.Ref(o), Namespace: o.GetNamespace(), Health: Healthy})
			case res.Status == status.FailedStatus:
				cfg.Report(Change{Ref: object.Ref(o), Namespace: o.GetNamespace(), Health: Unhealthy, Reason: res.Message})
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
				cfg.Report(Change{Ref: object.Ref(o), Namespace: o.GetNamespace(), Health: Unhealthy, Reason: last[object.Path(o)]})
			}
			return fmt.Errorf("%s not healthy after %s", output.Plural(len(pending), "object"), timeout)
		case <-time.After(time.Second):
		}
	}
}

// Health reads an object and computes its health (object.Health). The
// object is put in its scope first (kube.Client.Scope).
func Health(ctx context.Context, c *kube.Client, o *unstructured.Unstructured) (*status.Result, error) {
	ri, _, err := c.ScopeShared(o) // o may be a render's, which is never written
	if err != nil {
		return nil, err
	}
	live, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return object.Health(live)
}
