package rollout

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// kubeTarget is a cluster the run writes to: its apps applied by
// server-side apply under their locks (KubeApps, its appOps), their
// revisions and verdicts recorded in the cluster, and with --atomic a
// failed cluster put back by re-applying what it ran (restore.go).
type kubeTarget struct {
	*kubeApps // once connected
	e         *Engine
	run       *clusterRun
	client    *kube.Client
}

var _ target = (*kubeTarget)(nil)

// connect connects to the cluster; a lock lost while held stops the
// cluster's writes, those in flight too, to the end of its work (its
// soak, verdicts and --atomic restore): another run may be writing
// there now. Nothing is recorded or restored then.
func (k *kubeTarget) connect(ctx context.Context) (context.Context, error) {
	c := k.run.cluster
	k.e.emit(StageEvent{Cluster: c.Name, Stage: "connecting"})
	client, err := k.e.Connector.Connect(ctx, k.e.r.Fleet, c)
	if err != nil {
		return ctx, err
	}
	k.client = client
	k.kubeApps = k.e.kubeApps(k.run, client, k.e.r.Of(c.Name))
	return k.e.Locks.Writes(ctx, c.Name), nil
}

func (k *kubeTarget) observed() bool { return true }

// prepare says, with Diff, each app's diff before the first write. The
// plan is checked once the locks are taken (planCheck).
func (k *kubeTarget) prepare(ctx context.Context, results []render.Result) error {
	if !k.e.o.Diff {
		return nil
	}
	cluster := k.run.cluster.Name
	for _, res := range results {
		diffs, err := k.e.diffApp(ctx, k.client, cluster, res, results, DiffOptions{ForceConflicts: k.e.o.ForceConflicts, Concurrency: k.e.o.Concurrency})
		if err != nil {
			return fmt.Errorf("app %s: diff: %w", res.App, err)
		}
		k.e.emit(DiffEvent{Cluster: cluster, App: res.App, Diffs: diffs})
	}
	return nil
}

// planCheck checks every app before anything is written, under its
// lock: what was reviewed cannot change before it is applied.
func (k *kubeTarget) planCheck(results []render.Result) func(ctx context.Context, app string) error {
	p, cluster := k.e.o.Plan, k.run.cluster.Name
	if p == nil {
		return nil
	}
	return func(ctx context.Context, app string) error {
		k.e.emit(StageEvent{Cluster: cluster, Stage: "checking the plan"})
		planned, res := p.Cluster(cluster).App(app), resultOf(results, app)
		if err := plan.CheckArtifact(planned, res.Source.Artifact); err != nil {
			return err
		}
		return plan.Check(ctx, k.client, planned, res.Objects, k.e.o.Concurrency)
	}
}

// app is how res's app goes on the cluster: its dependencies, whether
// it is waited for and tested, and whether its apply alone verifies it.
func (k *kubeTarget) app(res render.Result, results []render.Result) App {
	e, c := k.e, k.run.cluster
	o, f := e.o, e.r.Fleet
	a := App{Name: res.App}
	if fa := f.App(res.App); fa != nil {
		a.DependsOn = fa.DependsOn
		switch {
		case fa.Tests == "":
		case o.SkipGates:
			a.SkippedTests = "--skip-gates"
		case o.SkipTests:
			a.SkippedTests = "--skip-tests"
		}
	}
	tests := len(e.r.TestsOf(c.Name, res.App)) > 0
	a.Tests = tests && !o.DryRun
	// An app others depend on, or with tests, is waited for, --wait or
	// not.
	switch dependent := dependedOn(f, res.App, results); {
	case o.Wait:
		a.WaitWhy = "--wait"
	case dependent != "":
		a.WaitWhy = "app " + dependent + " depends on it"
	case tests:
		a.WaitWhy = "its tests run once it is"
	}
	a.Wait = a.WaitWhy != ""
	a.Final = e.gated() && a.SkippedTests == "" && len(e.gatesAfter(c, a)) == 0
	return a
}

// key is the cluster's digest key, read by the apply already.
func (k *kubeTarget) key(ctx context.Context) digest.Key {
	if k.client == nil {
		return nil
	}
	key, _ := digest.KeyOf(ctx, k.client)
	return key
}

// verdict writes v on the revision the run recorded (ev says it),
// unless it was written with it (App.Final).
func (k *kubeTarget) verdict(ctx context.Context, ev *verificationEvent, recorded bool, v revision.Verification) bool {
	if !recorded {
		return false // not applied in this run, or no revision recorded
	}
	if !k.run.gates.Recorded(ev.App, v) {
		ev.Error = errString(writeVerdict(ctx, k.client, ev.App, ev.Revision, v))
	}
	return true
}

// reach is the cluster's client for a read, which may come before its
// turn or without one (a cluster upstream); its errors are said as
// Explain says them.
func (k *kubeTarget) reach(ctx context.Context) (*kube.Client, error) {
	client, err := k.e.Connector.Connect(ctx, k.e.r.Fleet, k.run.cluster)
	return client, k.explain(ctx, err)
}

func (k *kubeTarget) explain(ctx context.Context, err error) error {
	return kube.Explained(ctx, k.e.Connector, k.run.cluster.Name, err)
}

// current reads what the cluster runs of app: the app's ApplySet parent
// names the current revision and its digest, the revision's Secret its
// verification.
func (k *kubeTarget) current(ctx context.Context, app string) (Release, error) {
	client, err := k.reach(ctx)
	if err != nil {
		return Release{}, err
	}
	r, err := releaseOf(ctx, client, app)
	return r, k.explain(ctx, err)
}

// pauses reads the fleet's pause ConfigMap on the cluster.
func (k *kubeTarget) pauses(ctx context.Context) ([]pause.Pause, error) {
	client, err := k.reach(ctx)
	if err != nil {
		return nil, err
	}
	pauses, err := pause.Read(ctx, client, k.e.r.Fleet.Metadata.Name)
	return pauses, k.explain(ctx, err)
}

// approvals reads the fleet's approval ConfigMap on the cluster, given
// under the cluster's digest key.
func (k *kubeTarget) approvals(ctx context.Context, _ []string) (map[string]approval.Approval, []byte, string, error) {
	client, err := k.reach(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	key, err := digest.KeyOf(ctx, client)
	if err != nil {
		return nil, nil, "", k.explain(ctx, err)
	}
	found, err := approval.Read(ctx, client, k.e.r.Fleet.Metadata.Name)
	if err != nil {
		return nil, nil, "", k.explain(ctx, err)
	}
	return found, key, k.e.Locks.User(client, k.run.cluster.Name)(ctx), nil
}

// kubeApps are a cluster's appOps for this run.
func (e *Engine) kubeApps(run *clusterRun, client *kube.Client, results []render.Result) *kubeApps {
	o, f, c := e.o, e.r.Fleet, run.cluster
	ops := &kubeApps{
		Fleet: f.Metadata.Name, Cluster: c.Name, Client: client, Results: results, Locks: &e.Locks, Emit: e.emit, Gates: &run.gates,
		Pauses: o.Rollback == nil,
		Config: applyConfig{DryRun: o.DryRun, ForceConflicts: o.ForceConflicts, Prune: o.Prune || o.Rollback != nil, AllowEmpty: o.AllowEmpty || o.Rollback != nil, KeepTests: o.KeepTests, Timeout: o.Timeout, Concurrency: o.Concurrency},
		Tests:  func(app string) []*unstructured.Unstructured { return e.r.TestsOf(c.Name, app) },
		Ignore: f.IgnoreRules,
		Record: func(ctx context.Context, res render.Result, label string) *apply.Record {
			return e.recorded(e.record(ctx, c.Name, res), c.Name, res.App, label)
		},
		Namespace: func(app string) string {
			rolledBack, _ := o.Rollback.Record(c.Name, app) // where objects without a namespace went then
			return rolledBack.Namespace
		},
	}
	if o.Force != nil {
		ops.Force = func(app string) bool { return o.Force(c.Name, app) }
	}
	return ops
}
