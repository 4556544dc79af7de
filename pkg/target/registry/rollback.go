package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollback"
)

// Choose is rollback.Choose for a delivered cluster, from the histories
// its registry keeps (publish.History): the revision each app's tag goes
// back to, its objects read from its artifact, and a record that names
// the artifact, so that the tag moves back to exactly it. apps none:
// every app of the fleet with a history there.
func (r Fleet) Choose(ctx context.Context, c *fleet.Cluster, apps []string, to int) ([]rollback.Target, []rollback.Skip, error) {
	f := r.Fleet
	reg, err := r.registry(c)
	if err != nil {
		return nil, nil, err
	}
	named := len(apps) > 0
	if !named {
		for _, a := range f.Apps {
			apps = append(apps, a.Name)
		}
	}
	var (
		out   []rollback.Target
		skips []rollback.Skip
		errs  []error
	)
	skip := func(app, format string, args ...any) {
		skips = append(skips, rollback.Skip{App: app, Reason: fmt.Sprintf(format, args...)})
	}
	nothing := func(app, format string, args ...any) {
		skips = append(skips, rollback.Skip{App: app, Reason: "nothing to roll back: " + fmt.Sprintf(format, args...), Nothing: true})
	}
	for _, app := range apps {
		h, err := reg.History(ctx, app, c.Name)
		switch {
		case err != nil:
			errs = append(errs, err)
			continue
		case len(h.Revisions) == 0 && named:
			nothing(app, "app %s was never published here", app)
			continue
		case len(h.Revisions) == 0:
			continue
		}
		target, none, missing := rollback.Back(h.Revisions, h.Current, to)
		switch {
		case none:
			nothing(app, "app %s has no %s", app, missing)
			continue
		case missing != "":
			skip(app, "app %s has no %s", app, missing)
			continue
		}
		i := slices.IndexFunc(h.Revisions, func(r revision.Revision) bool { return r.Number == target })
		rev := h.Revisions[i]
		objs, err := reg.PullDigest(ctx, app, rev.Artifact)
		if err != nil {
			errs = append(errs, fmt.Errorf("cannot roll back: %w", err))
			continue
		}
		// The record names an artifact; what it holds must be the render
		// the record says, or the record was edited.
		if got := digest.Render(objs, nil); got != rev.Digest {
			errs = append(errs, fmt.Errorf("cannot roll back app %s: revision %d of %s names artifact %s, whose objects' digest is %s, not the %s it records: the record was edited, or its artifact replaced", app, target, publish.HistoryTag(c.Name), publish.Short(rev.Artifact), publish.Short(got), publish.Short(rev.Digest)))
			continue
		}
		from, _ := h.Record()
		out = append(out, rollback.Target{App: app, Objects: objs, From: from.Digest, Record: revision.Revision{Description: fmt.Sprintf("rollback to %d", target), Source: rev.Source, Verification: rev.Verification, Artifact: rev.Artifact}})
	}
	if len(out) == 0 && len(skips) == 0 && len(errs) == 0 {
		nothing("", "no app published here")
	}
	return out, skips, errors.Join(errs...)
}
