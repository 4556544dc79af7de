// Package rollback chooses, on one cluster, the revision each app goes
// back to, and reads it: what kubectl fleet rollback re-applies. Nothing
// is written here.
package rollback

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Target is an app's revision to go back to on a cluster: its objects,
// and how the rollback records the revision it makes of them.
type Target struct {
	App     string
	Objects []*unstructured.Unstructured
	Record  revision.Revision
	// From is the digest of the revision it goes back from (the current
	// one), "" when unknown.
	From string
}

// Skip is an app a rollback leaves alone on a cluster, and why; an empty
// App stands for the whole cluster. Nothing: there is nothing to roll
// back there (the app has no revision before its current one, or was
// never applied there: the releases rolled back did not change it),
// which is no failure; else the cluster could not do what was asked
// (--to-revision names a revision it does not have).
type Skip struct {
	App, Reason string
	Nothing     bool
}

// Choose reads, on a cluster, the revision each app goes back to: the
// fleet's named apps, or every app of the fleet with a revision there;
// to a revision number, or (0) the one before the current (Previous).
// An app it cannot go back is skipped, with why; an error is a revision
// that could not be read.
func Choose(ctx context.Context, c *kube.Client, fleet string, apps []string, to int) ([]Target, []Skip, error) {
	sets, err := AppSets(ctx, c, fleet, apps)
	if err != nil {
		return nil, nil, err
	}
	var (
		out   []Target
		skips []Skip
		errs  []error
	)
	skip := func(app, format string, args ...any) {
		skips = append(skips, Skip{App: app, Reason: fmt.Sprintf(format, args...)})
	}
	nothing := func(app, format string, args ...any) {
		skips = append(skips, Skip{App: app, Reason: "nothing to roll back: " + fmt.Sprintf(format, args...), Nothing: true})
	}
	if len(sets) == 0 {
		nothing("", "no app with revisions here")
	}
	for _, set := range sets {
		if !set.Exists {
			nothing(set.App, "app %s was never applied here", set.App)
			continue
		}
		history, err := revision.List(ctx, c, set.App)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		target, none, missing := Back(history, set.Revision, to)
		switch {
		case none:
			nothing(set.App, "app %s has no %s", set.App, missing)
			continue
		case missing != "":
			skip(set.App, "app %s has no %s", set.App, missing)
			continue
		}
		rev, objs, err := revision.Load(ctx, c, set.App, target)
		if err != nil {
			errs = append(errs, fmt.Errorf("cannot roll back: %w", err))
			continue
		}
		out = append(out, Target{App: set.App, Objects: objs, From: set.Digest, Record: revision.Revision{Description: fmt.Sprintf("rollback to %d", target), Source: rev.Source, Verification: rev.Verification, Namespace: rev.Namespace, Sensitive: rev.Sensitive}})
	}
	return out, skips, errors.Join(errs...)
}

// PreviousVerified, as a rollback's to, goes back to the latest
// revision before the current that its gates verified (and whose render
// differs): what an automatic rollback goes back to.
const PreviousVerified = -1

// Back is the revision of history a rollback goes back to from current:
// to, or (0) Previous, or (PreviousVerified) the latest verified before
// it. When there is none, missing says what ("revision before r3 here");
// none then says that is no failure (nothing to go back to, as opposed
// to a revision asked for that is not there).
func Back(history []revision.Revision, current, to int) (target int, none bool, missing string) {
	switch to {
	case 0:
		if target = Previous(history, current); target == 0 {
			return 0, true, fmt.Sprintf("revision before r%d here", current)
		}
	case PreviousVerified:
		if target = previous(history, current, true); target == 0 {
			return 0, true, fmt.Sprintf("verified revision before r%d here", current)
		}
	default:
		if !slices.ContainsFunc(history, func(r revision.Revision) bool { return r.Number == to }) {
			return 0, false, fmt.Sprintf("revision %d here", to)
		}
		target = to
	}
	return target, false, ""
}

// Previous is the revision a rollback goes back to by default: the
// latest before current whose render differs from current's. One of the
// same render (recorded by an apply that did not finish, then again by
// the next) would change nothing. 0 when there is none.
func Previous(history []revision.Revision, current int) int {
	return previous(history, current, false)
}

// previous is Previous, among the verified revisions alone if verified.
func previous(history []revision.Revision, current int, verified bool) int {
	digest := ""
	for _, r := range history {
		if r.Number == current {
			digest = r.Digest
		}
	}
	target := 0
	for _, r := range history {
		if r.Number < current && (digest == "" || r.Digest != digest) && (!verified || r.Verification.State == revision.Verified) {
			target = max(target, r.Number)
		}
	}
	return target
}

// AppSets reads the fleet's sets of the named apps on a cluster, or, with
// no names, of every app of the fleet with a revision there. Another
// fleet's app is left out, or, named, an ErrOtherFleet.
func AppSets(ctx context.Context, c *kube.Client, fleet string, apps []string) ([]*inventory.Set, error) {
	if len(apps) == 0 {
		all, err := inventory.LoadAll(ctx, c)
		return slices.DeleteFunc(all, func(s *inventory.Set) bool { return s.Revision == 0 || s.Foreign(fleet) != nil }), err
	}
	var out []*inventory.Set
	for _, a := range apps {
		s, err := inventory.Load(ctx, c, a)
		if err != nil {
			return nil, err
		}
		if err := s.Foreign(fleet); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
