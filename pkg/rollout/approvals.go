package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// AwaitingApproval is a wave of a group marked approval: required that
// did not start: its clusters' releases are not all approved.
type AwaitingApproval struct {
	Wave, Group string
	Reasons     []string
}

func (e *AwaitingApproval) Error() string {
	return fmt.Sprintf("%s awaits approval: %s; approve this release with kubectl fleet approve -g %s (and this run's source flags)", e.Wave, strings.Join(e.Reasons, "; "), e.Group)
}

// approved is the approval check of wave (approvals), nil when it needs
// none.
func (e *Engine) approved(wave string) error {
	if check := e.approvals[wave]; check != nil {
		return check()
	}
	return nil
}

// requireApprovals holds each wave of a group marked approval: required until
// every one of its clusters has an approval of exactly what the run
// renders for it (package approval), read when the wave would start. A
// cluster whose approvals cannot be read holds it too; one skipped as
// unreachable does not. Dry runs and rollbacks are not held.
func (e *Engine) requireApprovals(ws []runner.Wave) {
	if e.o.DryRun || e.o.Rollback != nil {
		return
	}
	for i := range ws {
		w := &ws[i]
		if g := e.r.Fleet.Group(w.Group); g == nil || g.Approval != fleet.ApprovalRequired {
			continue
		}
		if e.approvals == nil {
			e.approvals = map[string]func() error{}
		}
		e.approvals[w.Name] = func() error {
			reasons := e.unapproved(w.Clusters)
			if len(reasons) == 0 {
				return nil
			}
			e.emit(WaveEvent{Type: "wave", Wave: w.Name, State: "awaiting approval", Brake: BrakeApproval, Reasons: reasons})
			return &AwaitingApproval{Wave: w.Name, Group: w.Group, Reasons: reasons}
		}
	}
}

// unapproved says, for each of clusters, what of its render is not
// approved there.
func (e *Engine) unapproved(clusters []string) []string {
	return e.ask(clusters, "approvals", nil, func(ctx context.Context, name string, client *kube.Client) (string, error) {
		key, err := digest.KeyOf(ctx, client)
		if err != nil {
			return "", err
		}
		found, err := approval.Read(ctx, client, e.r.Fleet.Metadata.Name)
		if err != nil {
			return "", err
		}
		if why := approval.Check(e.r.Of(name), found, key, time.Now()); len(why) > 0 {
			return name + ": " + strings.Join(why, ", "), nil
		}
		return "", nil
	})
}

// ask asks why of each of clusters (Parallel at once, each connected
// first) and returns the answers that are not "", in order. A cluster
// skipped as unreachable says nothing; one that cannot be read holds
// too ("prod-eu: its approvals cannot be read: …"): fail closed, unless
// lenient says it need not.
func (e *Engine) ask(clusters []string, what string, lenient func(cluster string) bool, why func(ctx context.Context, name string, client *kube.Client) (string, error)) []string {
	ctx := context.Background() // a gate's reads finish, as the promotion rule's
	reasons := make([]string, len(clusters))
	sem := make(chan struct{}, max(1, e.o.Parallel))
	var wg sync.WaitGroup
	for i, name := range clusters {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			client, err := e.connect(ctx, name)
			if err == nil {
				reasons[i], err = why(ctx, name, client)
			}
			var skip *runner.SkipError
			if err != nil && !errors.As(err, &skip) && (lenient == nil || !lenient(name)) {
				reasons[i] = fmt.Sprintf("%s: its %s cannot be read: %v", name, what, err)
			}
		})
	}
	wg.Wait()
	return slices.DeleteFunc(reasons, func(r string) bool { return r == "" })
}
