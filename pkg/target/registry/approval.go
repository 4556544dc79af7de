package registry

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// A delivered cluster is never written to: its approvals are kept in its
// registry, beside its tags (publish.ReadRecord), one per app under the
// tag <cluster>.approval, signed as on any cluster. Who approved is who
// the cluster's context (which reads it only) authenticates, so that
// the rule of every cluster holds: a run that publishes as that
// identity does not count it. A cluster without a context authenticates
// no one: who approved is the approver the key names, and the
// signature alone is the gate, as on a cluster that does not answer a
// SelfSubjectReview. The digest is the render's without a key (a
// delivered cluster's renders hold no Secret).

// approvalTag is the tag of a delivered cluster's approval of an app.
func approvalTag(cluster string) string { return cluster + ".approval" }

// Approvals reads the approvals of apps on delivered cluster c.
func (r Fleet) Approvals(ctx context.Context, c *fleet.Cluster, apps []string) (map[string]approval.Approval, error) {
	reg, err := r.registry(c)
	reg = reg.WithoutRecordKeys() // an approval is its approver's to sign
	if err != nil {
		return nil, err
	}
	out := map[string]approval.Approval{}
	for _, app := range apps {
		var a approval.Approval
		found, err := reg.ReadRecord(ctx, app, approvalTag(c.Name), &a)
		if err != nil {
			return nil, err
		}
		if found {
			a.App = app
			out[app] = a
		}
	}
	return out, nil
}

// Approve records, in delivered cluster c's registry, s's
// approval of each of results (c's renders, an app each), given by by:
// who c's context authenticates (revision.UserOf), or, "" when nothing
// does, the approver s names.
func (r Fleet) Approve(ctx context.Context, c *fleet.Cluster, results []render.Result, now time.Time, s approval.Signer, by string) ([]approval.Approval, error) {
	f := r.Fleet
	reg, err := r.registry(c)
	reg = reg.WithoutRecordKeys() // an approval is its approver's to sign
	if err != nil {
		return nil, err
	}
	var out []approval.Approval
	for _, res := range results {
		a := approval.Approval{App: res.App, Digest: digest.Render(res.Objects, nil), By: cmp.Or(by, "approver "+s.Name), At: now.UTC().Truncate(time.Second), Approver: s.Name}
		a.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(s.Key, a.Payload(f.Metadata.Name, c.Name)))
		if err := reg.WriteRecord(ctx, res.App, approvalTag(c.Name), a); err != nil {
			return out, err
		}
		out = append(out, a)
	}
	return out, nil
}
