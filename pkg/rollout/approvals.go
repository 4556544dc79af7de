package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// AwaitingApproval is a wave of a group marked approval: required that
// did not start: its clusters' releases are not all approved.
type AwaitingApproval struct {
	Wave, Group string
	Reasons     []string
}

func (e *AwaitingApproval) Error() string {
	return fmt.Sprintf("%s awaits approval: %s; %s", e.Wave, strings.Join(e.Reasons, "; "), ApproveCommand(e.Group))
}

// Of is what awaits approval on cluster, without the other clusters'
// reasons (said once, with the wave): "web sha256:1a2b… is not approved".
func (e *AwaitingApproval) Of(cluster string) string {
	var own []string
	for _, r := range e.Reasons {
		if why, ok := strings.CutPrefix(r, cluster+": "); ok {
			own = append(own, why)
		}
	}
	if len(own) == 0 {
		return "its group's other clusters are not approved"
	}
	return strings.Join(own, "; ")
}

// ApproveCommand says what approves the release groups await: "approve
// this release with kubectl fleet approve -g production (and this run's
// source flags)".
func ApproveCommand(groups ...string) string {
	return "approve this release with kubectl fleet approve -g " + strings.Join(groups, " -g ") + " (and this run's source flags)"
}

// requiresApproval holds each wave of a group marked approval:
// required until every one of its clusters has an approval of exactly
// what the run renders for it (package approval), read when the wave
// would start. A cluster whose approvals cannot be read holds it too;
// one skipped as unreachable does not. Dry runs and rollbacks are not
// held.
func (e *Engine) requiresApproval(ws []runner.Wave, i int) Brake {
	w := ws[i]
	if g := e.r.Fleet.Group(w.Group); e.o.DryRun || e.o.Rollback != nil || g == nil || !g.Approval.Required {
		return Brake{}
	}
	return Brake{Name: brakeApproval, Check: func(context.Context) error {
		reasons := e.unapproved(w.Clusters)
		if len(reasons) == 0 {
			return nil
		}
		e.emit(WaveEvent{Type: typeWave, Wave: w.Name, State: "awaiting approval", Brake: brakeApproval, Reasons: reasons})
		return &AwaitingApproval{Wave: w.Name, Group: w.Group, Reasons: reasons}
	}}
}

// unapproved says, for each of clusters, what of its render is not
// approved there; one whose approvals cannot be read holds too.
func (e *Engine) unapproved(clusters []string) []string {
	name := e.r.Fleet.Metadata.Name
	check := func(cluster string, found map[string]approval.Approval, key []byte, self string) string {
		rules := approval.Rules{Fleet: name, Cluster: cluster, Approvers: e.r.Fleet.Approvers, Self: self}
		if g := e.r.Fleet.Group(e.clusters[cluster].Group); g != nil {
			rules.Expires = g.Approval.Expires
		}
		if why := approval.Check(e.r.Of(cluster), found, key, time.Now(), rules); len(why) > 0 {
			return cluster + ": " + strings.Join(why, ", ")
		}
		return ""
	}
	unapproved, unread := e.ask(clusters, "approvals", func(ctx context.Context, name string, t target) (string, error) {
		found, key, self, err := t.approvals(ctx, e.r.Apps(name))
		if err != nil {
			return "", err
		}
		return check(name, found, key, self), nil
	})
	return slices.Concat(unapproved, unread)
}

// ask asks why of each of clusters' targets, Parallel at once, every
// one whatever the others do, and returns, in order, the answers that
// are not "" and, apart, why the clusters that could not be read were
// not ("prod-eu: its approvals cannot be read: …"). A cluster skipped as
// unreachable says nothing.
func (e *Engine) ask(clusters []string, what string, why func(ctx context.Context, name string, t target) (string, error)) (answers, unread []string) {
	at := make(map[string]int, len(clusters))
	for i, name := range clusters {
		at[name] = i
	}
	said := make([]string, len(clusters))
	// A brake's reads finish, as the promotion rule's: not on the run's
	// context, which Ctrl-C ends (the brake is then not asked at all).
	for _, oc := range runner.Run(context.Background(), runner.Every(clusters), e.o.Parallel, func(ctx context.Context, name string) error {
		var err error
		said[at[name]], err = why(ctx, name, e.runOf(name).target)
		return err
	}) {
		var skip *runner.SkipError
		if oc.Err != nil && !errors.As(oc.Err, &skip) {
			unread = append(unread, fmt.Sprintf("%s: its %s cannot be read: %v", oc.Cluster, what, oc.Err))
		}
	}
	return slices.DeleteFunc(said, func(r string) bool { return r == "" }), unread
}
