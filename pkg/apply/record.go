package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// What an apply records: the app's set (its members, what was sent of
// each), its revision and the revision's history.

// commit writes the parent, which names the revision recorded (if any)
// current and holds record, while the revisions of history past
// --history-limit are deleted; but prev, the one it named until then,
// which stays current if that write fails, and goes after it when it has
// to.
func (p *pass) commit(ctx context.Context, record inventory.Contents, prev int, history []revision.Revision) error {
	var expired, last []revision.Revision
	if history != nil {
		expired = append(revision.Expired(history, p.cfg.Record.Limit, p.set.Revision), p.history.orphans...)
	}
	if i := slices.IndexFunc(expired, func(r revision.Revision) bool { return r.Number == prev }); i >= 0 {
		last = []revision.Revision{expired[i]}
		expired = slices.Delete(expired, i, i+1)
	}
	var (
		trimmed error
		trim    sync.WaitGroup
	)
	trim.Go(func() { trimmed = revision.Remove(ctx, p.c, expired...) })
	if v := p.verdict(history); v.State != "" && p.holds(history, v) {
		if p.cfg.Record.Verified != nil {
			p.cfg.Record.Verified(v) // recorded already
		}
	} else if v.State != "" {
		// Written beside the parent: each alone is safe (a verdict on a
		// revision no parent names is no release; a revision named without
		// it is unverified, and the caller writes it again; a verdict on
		// the current revision whose parent write then fails is followed
		// by the caller's verdict of the failure).
		trim.Go(func() {
			if revision.Verify(ctx, p.c, p.cfg.App, p.set.Revision, v) == nil && p.cfg.Record.Verified != nil {
				p.cfg.Record.Verified(v)
			}
		})
	}
	var err error
	if !p.set.Holds(&p.last, record, p.cfg.Version) {
		err = p.set.WriteParent(ctx, p.c, record, time.Now(), FieldManager, p.cfg.Version)
	}
	trim.Wait()
	if err != nil {
		return err
	}
	if trimmed = errors.Join(trimmed, revision.Remove(ctx, p.c, last...)); trimmed != nil && !apierrors.IsForbidden(trimmed) {
		return fmt.Errorf("keeping %d revisions: %w", p.cfg.Record.Limit, trimmed)
	}
	return nil
}

// verdict is the verdict written beside the parent, if any: a new
// revision's, known before the apply (Record.Verified); or, when the
// render is the current revision's, the same verdict for it, so that it
// is not a round trip of its own after the parent's.
func (p *pass) verdict(history []revision.Revision) revision.Verification {
	rec := p.cfg.Record
	switch {
	case history != nil:
		return p.stored.verdict
	case rec == nil || rec.Verified == nil || p.cfg.DryRun || p.set.Revision == 0 || p.newRevision():
		return revision.Verification{}
	}
	return rec.Revision.Verification
}

// holds reports whether the current revision, not new (no history),
// already says v: an apply that changed nothing writes nothing.
func (p *pass) holds(history []revision.Revision, v revision.Verification) bool {
	if history != nil {
		return false
	}
	p.history.Wait()
	i := slices.IndexFunc(p.history.revisions, func(r revision.Revision) bool { return r.Number == p.set.Revision })
	if i < 0 {
		return false
	}
	cur := p.history.revisions[i].Verification
	return cur.State == v.State && cur.Reason == v.Reason && slices.Equal(cur.Gates, v.Gates)
}

// storeRevision starts storing the apply as the app's next revision,
// unless its render is the current revision's, while the objects are
// applied (the history it numbers it from was read with the inventory).
// Until the parent names it, a revision is no release: recordRevision
// waits for it once the objects are applied, and unstore removes it when
// they are not.
func (p *pass) storeRevision(ctx context.Context) {
	rec, st := p.cfg.Record, &p.stored
	if p.cfg.DryRun || !p.newRevision() {
		return
	}
	st.Go(func() {
		p.history.Wait()
		r, history, err := rec.Revision, p.history.revisions, p.history.err
		if r.User == "" {
			r.User = p.history.user
		}
		if err != nil {
			st.err = err
			return
		}
		// Stored before the objects are applied, it says no verdict: one
		// is written with the parent, once they are.
		st.verdict, r.Verification = r.Verification, revision.Verification{}
		r.App, r.Number, r.Time, r.Digest = p.cfg.App, revision.Next(slices.Concat(history, p.history.orphans), p.set.Revision), time.Now().UTC().Truncate(time.Second), p.renderDigest
		r.Namespace = cmp.Or(p.cfg.Namespace, p.c.Namespace) // where objects without one went
		if r.Version == "" {
			r.Version = p.cfg.Version
		}
		st.err = revision.Store(ctx, p.c, &r, p.cfg.Objects)
		st.revision, st.history = r, append(history, r)
	})
}

// unstore removes the revision storeRevision stored for an apply that
// failed (err), once it is written: the parent never names it. After
// Ctrl-C (ctx's stop done), or from a cluster that stopped answering, nothing
// more is sent: the revision stays, never named current (history says
// its apply did not finish), as it does when its removal fails.
func (p *pass) unstore(ctx context.Context, err error) error {
	st := &p.stored
	st.Wait()
	if st.revision.Number == 0 || st.err != nil || kube.StopOf(ctx).Err() != nil || kube.IsUnreachable(err) {
		return err
	}
	if rerr := revision.Remove(ctx, p.c, st.revision); rerr != nil {
		klog.V(2).InfoS("revision stored while the objects were applied is left unapplied", "app", p.cfg.App, "revision", st.revision.Number, "err", rerr)
	}
	return err
}

// recordRevision waits for the revision storeRevision stores, and returns
// the history with it (nil when nothing was recorded).
func (p *pass) recordRevision() ([]revision.Revision, error) {
	rec := p.cfg.Record
	if rec == nil {
		return nil, nil
	}
	done := func(r revision.Revision, isNew bool) {
		if rec.Done != nil {
			rec.Done(r, isNew)
		}
	}
	if !p.newRevision() {
		done(revision.Revision{App: p.cfg.App, Number: p.set.Revision, Digest: p.renderDigest, Objects: len(p.cfg.Objects)}, false)
		return nil, nil
	}
	st := &p.stored
	st.Wait()
	if apierrors.IsForbidden(st.err) {
		if rec.Forbidden != nil {
			rec.Forbidden(st.err)
		}
		return nil, nil
	}
	if st.err != nil {
		return nil, st.err
	}
	r := st.revision
	p.set.Revision, p.set.Digest, p.set.Source = r.Number, r.Digest, r.Source.String()
	done(r, true)
	return st.history, nil
}

// newRevision reports whether this apply records a revision: its render
// is not the current revision's.
func (p *pass) newRevision() bool {
	return p.cfg.Record != nil && !(p.set.Revision > 0 && p.renderDigest == p.set.Digest)
}

// readHistory starts reading what storeRevision needs (the app's
// revisions, and who applies when the caller does not say) while the
// inventory is read, so that recording costs no round trip of its own.
func (p *pass) readHistory(ctx context.Context) {
	h, rec := &p.history, p.cfg.Record
	if rec.Revision.User == "" {
		user := rec.User
		if user == nil {
			user = func(ctx context.Context) string { return revision.User(ctx, p.c) }
		}
		h.Go(func() { h.user = user(ctx) })
	}
	h.Go(func() { h.revisions, h.orphans, h.err = revision.ListAll(ctx, p.c, p.cfg.App) })
}

// record notes what was sent of obj and the version that came back.
func (p *pass) record(obj *unstructured.Unstructured, sum, resourceVersion string, uid types.UID) {
	if p.cfg.DryRun {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent[object.Path(obj)] = inventory.Applied{Digest: sum, ResourceVersion: resourceVersion, UID: string(uid)}
}

// keep records that the object with uid was applied: it is not pruned.
func (p *pass) keep(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.applied.Insert(uid)
}
