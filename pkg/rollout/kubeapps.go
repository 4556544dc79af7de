package rollout

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/version"
)

// kubeApps are a cluster's appOps on a real cluster: what apply does
// there. Everything it does is said as events to Emit.
type kubeApps struct {
	// Fleet is the fleet's name: the apps' sets on the cluster are its.
	Fleet   string
	Cluster string
	Client  *kube.Client
	// Results are the cluster's renders, an app each.
	Results []render.Result
	// Pauses stops an app's apply before its first write when the app is
	// paused on the cluster (holdPaused); a rollback is not held.
	Pauses bool
	Config applyConfig
	Locks  *Locks
	Emit   Sink
	// Tests are an app's rendered tests, Ignore its ignoreDifferences.
	Tests  func(app string) []*unstructured.Unstructured
	Ignore func(app string) []object.IgnoreRule
	// Record says how an app's apply is recorded in its history (not
	// asked on a dry run), the revision said after label as a
	// RevisionEvent.
	Record func(ctx context.Context, res render.Result, label string) *apply.Record
	// Namespace is where an app's objects without one go ("": the
	// context's); Force whether its apply takes fields over (nil: no).
	Namespace func(app string) string
	Force     func(app string) bool
	// Gates are told the verdict a Final app's revision is recorded with.
	Gates *gateSet
	// Before are the apps' sets as they were before their apply
	// (Remember), for --atomic to put back.
	Before []*inventory.Set
}

// applyConfig are the flags every app's apply takes.
type applyConfig struct {
	DryRun, ForceConflicts, Prune, AllowEmpty, KeepTests bool
	Timeout                                              time.Duration
	Concurrency                                          int
}

var _ appOps = (*kubeApps)(nil)

// labelOf is what a cluster's lines about app start with: the app, when the
// cluster gets several.
func labelOf(app string, several bool) string {
	if several {
		return app
	}
	return ""
}

func (k *kubeApps) label(app string) string { return labelOf(app, len(k.Results) > 1) }

func (k *kubeApps) stage(format string, args ...any) {
	k.Emit(StageEvent{Cluster: k.Cluster, Stage: fmt.Sprintf(format, args...)})
}

// dependencyApplied refuses a dependency outside the run that was never
// applied to the cluster.
func (k *kubeApps) dependencyApplied(ctx context.Context, app string) error {
	set, err := inventory.Load(ctx, k.Client, app)
	switch {
	case err != nil:
		return fmt.Errorf("not started: dependency %s: %w", app, err)
	case !set.Exists:
		return fmt.Errorf("not started: dependency %s was never applied to this cluster (select it too: --app %s)", app, app)
	}
	return nil
}

// Lock takes the app's lock, held until the cluster's work ends: an
// --atomic rollback or a soak after it is covered too.
func (k *kubeApps) Lock(ctx context.Context, app string) error {
	return k.Locks.Acquire(ctx, k.Client, k.Cluster, app, k.label(app), false, k.Emit, nil) // a lost lock ends the cluster's Writes (Locks.Writes)
}

// Remember keeps the app's set as it is.
func (k *kubeApps) Remember(ctx context.Context, app string) error {
	set, err := inventory.Load(ctx, k.Client, app)
	if err == nil {
		k.Before = append(k.Before, set)
	}
	return err
}

// Apply applies one app's objects, recorded as a revision.
func (k *kubeApps) Apply(ctx context.Context, app App) error {
	res := k.result(app.Name)
	label, dryRun := k.label(app.Name), k.Config.DryRun
	k.Emit(StageEvent{Cluster: k.Cluster, Stage: "applying " + app.Name, Objects: len(res.Objects)})
	var record *apply.Record
	if !dryRun {
		record = k.Record(ctx, res, label)
		record.User = k.Locks.User(k.Client, k.Cluster)
		if app.Final && !app.Wait {
			k.verdictWith(record, app)
		}
	}
	cfg := apply.Config{
		App: app.Name, Version: version.Get(), Objects: res.Objects, DryRun: dryRun, Force: k.Config.ForceConflicts || k.Force != nil && k.Force(app.Name),
		Prune: k.Config.Prune, AllowEmpty: k.Config.AllowEmpty, Ignore: k.Ignore(app.Name), Wait: app.Wait, WaitWhy: app.WaitWhy, Timeout: k.Config.Timeout, Concurrency: k.Config.Concurrency,
		Report:  func(ch apply.Change) { k.Emit(objectChanged(k.Cluster, app.Name, label, ch, dryRun)) },
		OnStage: func(stage string) { k.stage("%s: %s", app.Name, stage) },
		OnPhase: func(phase, objects int) {
			k.stage("applying %s, phase %d", app.Name, phase)
			k.Emit(phaseEvent{Type: typePhase, Cluster: k.Cluster, App: app.Name, Phase: phase, Objects: objects, DryRun: dryRun, Label: label})
		},
		Record: record, Fleet: k.Fleet, Others: othersOf(k.Results, app.Name),
	}
	if k.Namespace != nil {
		cfg.Namespace = k.Namespace(app.Name)
	}
	if !dryRun && k.Pauses {
		cfg.Hold = holdPaused(k.Cluster, k.Fleet, app.Name, k.Client)
		cfg.Held = pausedNow(k.Cluster, k.Fleet, app.Name, k.Client)
	}
	return apply.Run(ctx, k.Client, cfg)
}

// verdictWith makes a Final app's new revision carry its verdict,
// verified through the gates an apply passes (written with the parent,
// once the objects are applied: apply.Record.Verified), and tells Gates
// once it is recorded. A failure after it (the parent's write) fails the
// app, and its verdict is written then. An app that waits until healthy
// is not verified so: its health comes after the parent.
func (k *kubeApps) verdictWith(record *apply.Record, app App) {
	record.Revision.Verification = revision.Verification{State: revision.Verified, Gates: onApply(app)}
	record.Verified = func(v revision.Verification) {
		if k.Gates != nil {
			k.Gates.Stored(app.Name, v)
		}
	}
}

// Test runs the app's tests.
func (k *kubeApps) Test(ctx context.Context, app App) error {
	k.stage("testing %s", app.Name)
	label, dryRun := k.label(app.Name), k.Config.DryRun
	report := func(ch apply.Change) {
		ch.Ref = "test " + ch.Ref
		ev := objectChanged(k.Cluster, app.Name, label, ch, dryRun)
		ev.Test = true
		k.Emit(ev)
	}
	err := apply.Test(ctx, k.Client, apply.TestConfig{App: app.Name, Objects: k.Tests(app.Name), Timeout: k.Config.Timeout, Keep: k.Config.KeepTests, Report: report})
	k.Emit(TestsEvent{Cluster: k.Cluster, App: app.Name, Err: err})
	return err
}

// result is the render of one app for the cluster.
func (k *kubeApps) result(app string) render.Result { return resultOf(k.Results, app) }

// resultOf is the render of app among a cluster's results.
func resultOf(results []render.Result, app string) render.Result {
	for _, res := range results {
		if res.App == app {
			return res
		}
	}
	return render.Result{}
}

// othersOf are the renders among a cluster's results of the apps but
// app, by app: what apply and diff hand over rather than prune.
func othersOf(results []render.Result, app string) map[string][]*unstructured.Unstructured {
	out := map[string][]*unstructured.Unstructured{}
	for _, res := range results {
		if res.App != app {
			out[res.App] = res.Objects
		}
	}
	return out
}
