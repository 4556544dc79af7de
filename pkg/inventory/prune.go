package inventory

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

// Prune is the one walk over the members of an app's set no longer
// rendered, which apply --prune makes and diff predicts: in the order
// they are deleted (Namespaces and CRDs last: their deletion takes their
// contents along), each decided by the ownership rule (Neighbours.Decide)
// and then by what the cluster holds (Guard.Check). A member the walker
// does not delete after all is spared, so that a Namespace or CRD after
// it counts it as remaining.
type Prune struct {
	set    *Set
	others *Neighbours
	inUse  map[string]string
	guard  *Guard
	order  []*unstructured.Unstructured
}

// NewPrune is the prune of s's members doomed (no longer rendered), by
// the rule of s's neighbours n; applied are the namespaces the app still
// applies objects in.
func NewPrune(c *kube.Client, s *Set, n *Neighbours, applied sets.Set[string], doomed []*unstructured.Unstructured) *Prune {
	order := slices.Clone(doomed)
	slices.SortStableFunc(order, object.DeletedLast)
	return &Prune{set: s, others: n, inUse: n.NamespacesInUse(s, applied, order), guard: NewGuard(c, s.App, order), order: order}
}

// Decide is the decision for m, one of the members or m read again: a
// member whose decision has an input that could not be read is retained.
func (p *Prune) Decide(ctx context.Context, m *unstructured.Unstructured) Decision {
	d, unread := p.guard.Check(ctx, m, p.others.Decide(p.set, m, p.inUse))
	if unread != "" {
		return Decision{Retain: true, Reason: unread}
	}
	return d
}

// Walk hands each member, in the order of deletion, to do with its
// decision; do acts on it and says whether the member is gone. One that
// is not is spared. Walk stops at do's first error (Ctrl-C, a pause).
func (p *Prune) Walk(ctx context.Context, do func(m *unstructured.Unstructured, d Decision) (gone bool, err error)) error {
	for _, m := range p.order {
		if err := kube.StopOf(ctx).Err(); err != nil {
			return err // Ctrl-C: no request starts after it
		}
		gone, err := do(m, p.Decide(ctx, m))
		if !gone {
			p.guard.Spare(m)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
