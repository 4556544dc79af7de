package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	applyset "k8s.io/kubectl/pkg/cmd/apply"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// What apply --prune deletes, and what it keeps: the members of the
// app's set no longer rendered, each asked of the ownership rule
// (inventory.Decide) and the guards of CRDs, Namespaces and owners.

// prune deletes the set's live members that this apply did not just apply,
// known by the UIDs the server returned (never by names the render guessed),
// in the order inventory.Prune walks, never anything outside the set. What
// happens to each is the ownership rule's (inventory.Neighbours.Decide):
// a member another app renders in this run or still records is handed to
// that app, one whose prune is disabled or that the app adopted is left
// in place, out of the set, and one whose decision cannot be made (an
// input could not be read) stays in the set untouched.
func (p *pass) prune(ctx context.Context, extra inventory.Contents) error {
	if !p.set.Exists && !p.cfg.DryRun {
		return nil
	}
	// Only the members this apply did not apply are kept, as listed,
	// whole: releasing one reads its managed fields.
	doomed, err := inventory.KeepMembers(ctx, p.c, p.set, extra, kube.AllFields, func(m *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
		return m, !p.applied.Has(m.GetUID()) && !p.rendered.Has(object.Path(m))
	})
	if err != nil {
		return fmt.Errorf("listing the members of app %s: %w", p.cfg.App, err)
	}
	var errs []error
	pr := inventory.NewPrune(p.c, p.set, p.others, extra.Namespaces, doomed)
	err = pr.Walk(ctx, func(m *unstructured.Unstructured, d inventory.Decision) (bool, error) {
		if err := p.held.before(ctx); err != nil {
			return false, err
		}
		ch := p.pruneOne(ctx, pr, m, d)
		if ch.Err != nil {
			errs = append(errs, ch.Err)
		}
		p.cfg.Report(ch)
		return ch.Action == change.Pruned, nil
	})
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s could not be pruned", output.Plural(len(errs), "object"))
	}
	return nil
}

// retain leaves a member in the set, untouched, for the next prune to
// decide: reason says which input of the decision could not be read.
func (p *pass) retain(ch Change, m *unstructured.Unstructured, reason string) Change {
	p.stay(m)
	ch.Action, ch.Reason = change.Kept, reason
	return ch
}

// stay keeps m in the app's record.
func (p *pass) stay(m *unstructured.Unstructured) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retained = p.retained.Union(inventory.ContentsOf([]*unstructured.Unstructured{m}))
}

// pruneOne acts on the decision d for member m: deletes it, keeps it or
// retains it. A member changed since it was listed is read and decided
// again (pr.Decide).
func (p *pass) pruneOne(ctx context.Context, pr *inventory.Prune, m *unstructured.Unstructured, d inventory.Decision) Change {
	ch := Change{Ref: object.Ref(m), Namespace: m.GetNamespace(), Action: change.Pruned}
	ri, _, err := p.c.Resource(m)
	if err != nil {
		return p.retain(ch, m, fmt.Sprintf("not deleted: its kind cannot be mapped (%v); left in app %s", err, p.cfg.App))
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			d = pr.Decide(ctx, m)
		}
		switch {
		case d.Retain:
			return p.retain(ch, m, d.Reason)
		case !d.Delete:
			return p.kept(ctx, ri, ch, m, d)
		}
		// The object listed, in the version listed: not one re-created
		// under its name since, nor one changed since (a policy added
		// after the listing is read, and decided on, again).
		uid, rv := m.GetUID(), m.GetResourceVersion()
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}
		if p.cfg.DryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		err = ri.Delete(ctx, m.GetName(), opts)
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return ch
		case !apierrors.IsConflict(err):
			ch.Action, ch.Err = change.Failed, fmt.Errorf("prune: %w", err)
			return ch
		}
		// Changed since it was listed: read it again and decide again.
		live, gerr := ri.Get(ctx, m.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
			return ch
		case gerr != nil:
			return p.retain(ch, m, fmt.Sprintf("not deleted: changed since it was listed, and could not be read again (%v); left in app %s", gerr, p.cfg.App))
		case live.GetUID() != uid:
			ch.Action, ch.Reason = change.Skipped, "not deleted: re-created since it was listed (another uid)"
			return ch
		case live.GetLabels()[applyset.ApplysetPartOfLabel] != p.set.ID:
			ch.Action, ch.Reason = change.Skipped, "not deleted: no longer labelled as the app's since it was listed"
			return ch
		case attempt == 2:
			return p.retain(ch, m, fmt.Sprintf("not deleted: it kept changing while it was pruned; left in app %s", p.cfg.App))
		}
		m = live
	}
}

// kept is a member the rule keeps (d): released, or handed to another
// app (To); one handed to an app of this run that does not record it yet
// (Stay) stays in the record, under the app's label, for To's claim.
func (p *pass) kept(ctx context.Context, ri dynamic.ResourceInterface, ch Change, m *unstructured.Unstructured, d inventory.Decision) Change {
	ch.Action, ch.Reason = change.Kept, d.Reason
	if d.Stay {
		p.stay(m)
		p.mu.Lock()
		p.handing.Insert(object.Path(m))
		p.mu.Unlock()
		return ch
	}
	if !p.cfg.DryRun {
		if err := p.set.Release(ctx, ri, m, d.To, FieldManager); err != nil {
			ch.Action, ch.Err = change.Failed, err
		}
	}
	return ch
}
