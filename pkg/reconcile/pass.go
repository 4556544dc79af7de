package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Config is what a pass's decisions depend on.
type Config struct {
	// Pass is the pass's number, in its events.
	Pass int
	// CorrectDrift applies a drifted cluster, its drifted apps with force
	// (and its changed apps applied before); without it drift is only
	// reported.
	CorrectDrift bool
	// RerunGates applies a cluster whose current revision is not verified,
	// so that its gates run again (not with --skip-gates or --skip-tests).
	RerunGates bool
	// Parallel is how many clusters are checked at once at most.
	Parallel int
	// Concurrency is how many requests a cluster's check sends at once.
	Concurrency int
	// Delivered is the StateReader of a cluster of f delivered through a
	// registry (package target/registry's State): what its registry says
	// it runs.
	Delivered func(f *fleet.Fleet, c *fleet.Cluster) (StateReader, error)
}

// Clients reach the clusters a pass checks, and close a cluster's
// connections once it is checked. pkg/cmd's are the command's clients,
// one per cluster and pass.
type Clients = kube.IdleConnector

// Metrics is told what a pass found and did (metrics.Reconcile).
type Metrics interface {
	// App is an app's last pass: when, whether it went through, its
	// current revision.
	App(cluster, app string, at time.Time, ok bool, revision int)
	// Drift is how many of an app's objects drifted.
	Drift(cluster, app string, n int)
	// KeepOnly drops the series of clusters and apps no longer rendered.
	KeepOnly(results []render.Result)
}

// Decisions are what a pass does: the clusters it applies, and the apps it
// applies with force to take drifted fields back.
type Decisions struct {
	// Pass holds the pass's lists, for its end (PassEvent.Ended).
	Pass PassEvent
	// Apply are the clusters to apply, by name.
	Apply map[string]bool
	force map[string]bool
}

// Forced says whether an app of a cluster is applied with force
// (--correct-drift on drifted objects).
func (d Decisions) Forced(cluster, app string) bool { return d.force[cluster+"/"+app] }

// RefuseProtected refuses a pass whose selection (its waves) includes a
// protected group, unless yes (--yes): reconcile has no terminal to ask on.
func RefuseProtected(f *fleet.Fleet, waves []runner.Wave, yes bool) error {
	if yes {
		return nil
	}
	if g, clusters := rollout.FirstProtected(f, waves); g != "" {
		return fmt.Errorf("group %s is protected (%s) and reconcile never asks: pass --yes to let it write there, or select other groups (-g)", g, strings.Join(clusters, ", "))
	}
	return nil
}

// Owned is the part of r that shard s owns (all of it unsharded).
func Owned(r *rendered.Set, s fleet.Shard) *rendered.Set {
	if !s.Sharded() {
		return r
	}
	owned := map[string]bool{}
	for _, c := range r.Clusters {
		if s.Owns(c.Name) {
			owned[c.Name] = true
		}
	}
	return r.Only(owned)
}

// Decide checks every cluster of r, cfg.Parallel at once, says on emit
// what it found on each and what the pass does about it, tells m, and
// returns the pass's decisions.
func Decide(ctx context.Context, cfg Config, r *rendered.Set, clients Clients, m Metrics, emit rollout.Sink) Decisions {
	d := decide(cfg, checkAll(ctx, cfg, r, clients), m, emit, time.Now())
	m.KeepOnly(r.Results)
	return d
}

// checkAll checks every cluster of r, cfg.Parallel at once, in r's order.
func checkAll(ctx context.Context, cfg Config, r *rendered.Set, clients Clients) []ClusterCheck {
	at := make(map[string]int, len(r.Clusters))
	for i, c := range r.Clusters {
		at[c.Name] = i
	}
	checks := make([]ClusterCheck, len(r.Clusters))
	outcomes := kube.EachTarget(ctx, clients, r.Fleet, r.Clusters, cfg.Parallel, kube.Reach{Written: func(ctx context.Context, c *fleet.Cluster, client *kube.Client) error {
		checks[at[c.Name]] = Check(ctx, c.Name, KubeState{Client: client, Ignore: r.Fleet.IgnoreRules, Concurrency: cfg.Concurrency}, r.Of(c.Name))
		clients.Idle(c.Name)
		return nil
	}, Delivered: func(ctx context.Context, c *fleet.Cluster) error {
		// Its registry says what it runs; nothing connects.
		state, err := cfg.Delivered(r.Fleet, c)
		if err != nil {
			return err
		}
		check := Check(ctx, c.Name, state, r.Of(c.Name))
		for j := range check.Apps {
			check.Apps[j].Unobserved = !c.Observed()
		}
		checks[at[c.Name]] = check
		return nil
	}})
	for _, oc := range outcomes {
		if oc.Err != nil { // not connected (said as unreachable), or not started
			checks[at[oc.Cluster]] = ClusterCheck{Cluster: oc.Cluster, Err: oc.Err}
		}
	}
	return checks
}

// decide says what the checks found, decides what the pass does with each
// cluster, and tells m, at now.
func decide(cfg Config, checks []ClusterCheck, m Metrics, emit rollout.Sink, now time.Time) Decisions {
	d := Decisions{Apply: map[string]bool{}, force: map[string]bool{}}
	for _, c := range checks {
		decision, doApply := c.Decide(cfg.CorrectDrift, cfg.RerunGates)
		report(cfg, c, decision, doApply, emit)
		switch {
		case doApply:
			d.Apply[c.Cluster] = true
			d.Pass.Applied = append(d.Pass.Applied, c.Cluster)
		case decision == DecDrifted:
			d.Pass.Drifted = append(d.Pass.Drifted, c.Cluster)
		default:
			d.Pass.Unchanged = append(d.Pass.Unchanged, c.Cluster)
		}
		for _, ac := range c.Apps {
			// A changed render of an app applied before takes drifted
			// fields back too: its drift was not looked for, and without
			// force a field someone else took would fail this pass and
			// every pass after it. A first apply adopts nothing by force.
			if doApply && cfg.CorrectDrift && (len(ac.Drifted) > 0 || ac.Err == nil && ac.Exists && ac.Revision > 0 && ac.Changed()) {
				d.force[c.Cluster+"/"+ac.App] = true
			}
			if ac.Err == nil && !ac.Changed() {
				m.Drift(c.Cluster, ac.App, len(ac.Drifted))
			}
			if !doApply {
				// Checked, nothing to do: the app is as rendered, or
				// its drift is reported.
				m.App(c.Cluster, ac.App, now, true, ac.Revision)
			}
		}
	}
	return d
}

// report says what a pass found on a cluster and what it does about it.
func report(cfg Config, c ClusterCheck, decision string, doApply bool, emit rollout.Sink) {
	say := func(ev ClusterEvent, line string) {
		ev.Type, ev.Msg, ev.Pass, ev.Cluster, ev.Decision, ev.Apply = "reconcile", line, cfg.Pass, c.Cluster, decision, doApply
		emit(ev)
	}
	if c.Err != nil {
		say(ClusterEvent{Error: c.Err.Error()}, "cannot be checked, applying: "+c.Err.Error())
		return
	}
	var current []string
	for _, ac := range c.Apps {
		ev := ClusterEvent{App: ac.App, Revision: ac.Revision, Drifted: ac.Drifted}
		switch {
		case ac.Err != nil:
			ev.Error = ac.Err.Error()
			say(ev, fmt.Sprintf("%s: cannot be checked: %v", ac.App, ac.Err))
		case !ac.Exists:
			say(ev, fmt.Sprintf("%s: never applied", ac.App))
		case ac.Revision == 0:
			say(ev, fmt.Sprintf("%s: no revision recorded", ac.App))
		case ac.Changed():
			say(ev, fmt.Sprintf("%s: render changed (%s, current revision %d is %s)", ac.App, revision.ShortDigest(ac.Render), ac.Revision, revision.ShortDigest(ac.Current)))
		case ac.Unverified() && decision == DecUnverified:
			say(ev, fmt.Sprintf("%s: r%d %s; running its gates again", ac.App, ac.Revision, ac.Verification))
		case len(ac.Drifted) > 0:
			what := "not corrected (--correct-drift corrects it)"
			if cfg.CorrectDrift {
				what = "correcting"
			}
			for _, d := range ac.Drifted {
				say(ClusterEvent{App: ac.App, Revision: ac.Revision, Drifted: []string{d}}, fmt.Sprintf("%s: %s drifted: %s", ac.App, d, what))
			}
		default:
			current = append(current, fmt.Sprintf("%s r%d", ac.App, ac.Revision))
		}
	}
	switch {
	case doApply:
		say(ClusterEvent{}, "applying")
	case decision == DecDrifted:
		say(ClusterEvent{}, "drifted, not applied")
	default:
		say(ClusterEvent{}, fmt.Sprintf("unchanged, skipped (%s)", strings.Join(current, ", ")))
	}
}

// Applied tells m the outcome of the clusters of sub a pass applied, at
// now: each app's pass, its revision (revisions: a cluster's, by app), and
// no drift after a success.
func Applied(m Metrics, sub *rendered.Set, outcomes []runner.Outcome, revisions func(cluster string) map[string]int, now time.Time) {
	for _, oc := range outcomes {
		ok := oc.State == runner.Succeeded
		revs := revisions(oc.Cluster)
		for _, app := range sub.Apps(oc.Cluster) { // names: no render made again
			m.App(oc.Cluster, app, now, ok, revs[app])
			if ok {
				m.Drift(oc.Cluster, app, 0)
			}
		}
	}
}
