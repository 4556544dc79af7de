package rollout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/plan"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// An apply verifies its app by itself (App.Final: the verdict written
// with the revision) only when no gate follows it in the run: a group's
// check or soak, or the app's tests, each keeps it open; so do a run
// that is not gated and tests that were skipped.
func TestAppFinal(t *testing.T) {
	groups := []fleet.Group{
		{Name: "plain"},
		{Name: "checked", Verify: []fleet.Check{{Name: "smoke", Command: []string{"true"}}}},
		{Name: "soaked", Soak: time.Minute},
		{Name: "analysed", Analysis: []fleet.Analysis{{Name: "error-rate", Count: 3}}},
		{Name: "batch-soaked", BatchSoak: time.Minute, Batches: []fleet.Batch{{Name: "canary", Selector: "canary=true"}, {Size: &fleet.Amount{N: 100, Percent: true}}}},
	}
	for _, tt := range []struct {
		name, group string
		o           Options
		tests       bool
		want        bool
	}{
		{"no gate follows", "plain", Options{}, false, true},
		{"a check follows", "checked", Options{}, false, false},
		{"a soak follows", "soaked", Options{}, false, false},
		{"an analysis follows", "analysed", Options{}, false, false},
		{"a batch's soak follows", "batch-soaked", Options{}, false, false},
		{"its tests follow", "plain", Options{}, true, false},
		{"tests skipped", "plain", Options{SkipTests: true}, true, false},
		{"gates skipped", "plain", Options{SkipGates: true}, false, false},
		{"a dry run", "plain", Options{DryRun: true}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fleet.Fleet{Groups: groups, Clusters: []fleet.Cluster{{Name: "c1", Group: tt.group, Labels: map[string]string{"canary": "true"}}, {Name: "c2", Group: tt.group}}, Apps: []fleet.App{{Name: "web"}}}
			if tt.tests {
				f.Apps[0].Tests = "tests"
			}
			r := &rendered.Set{Fleet: f, Clusters: []*fleet.Cluster{&f.Clusters[0], &f.Clusters[1]}}
			if tt.tests {
				test := render.Result{Target: render.Target{App: "web", Cluster: render.Cluster{Name: "c1"}}, Objects: objects{kubetest.Object("v1", "Pod", "default", "test")}}
				r.Tests = []render.Result{test}
			}
			e := &Engine{}
			e.begin(r, tt.o, func(Event) {})
			res := render.Result{Target: render.Target{App: "web"}}
			if got := e.runOf("c1").target.app(res, []render.Result{res}).Final; got != tt.want {
				t.Errorf("Final = %v, want %v", got, tt.want)
			}
		})
	}
}

// dirTarget is a third way to reach a cluster, a test's own: each app's
// render written to a folder per cluster, as a GitOps repository per
// cluster would be. It implements target and nothing else: the engine's
// lifecycle, waves, brakes and promotion rule work for it unchanged.
type dirTarget struct {
	dir     string
	run     *clusterRun
	results func() []render.Result
	refuse  string // an app whose write fails
}

func (d *dirTarget) path(app string) string {
	return filepath.Join(d.dir, d.run.cluster.Name, app+".yaml")
}

func (d *dirTarget) connect(ctx context.Context) (context.Context, error) {
	return ctx, os.MkdirAll(filepath.Join(d.dir, d.run.cluster.Name), 0o755)
}
func (d *dirTarget) observed() bool                                                { return true }
func (d *dirTarget) prepare(context.Context, []render.Result) error                { return nil }
func (d *dirTarget) planCheck([]render.Result) func(context.Context, string) error { return nil }
func (d *dirTarget) key(context.Context) digest.Key                                { return nil }
func (d *dirTarget) app(res render.Result, _ []render.Result) App                  { return App{Name: res.App} }
func (d *dirTarget) verdict(_ context.Context, ev *verificationEvent, _ bool, _ revision.Verification) bool {
	return true // said, recorded nowhere
}
func (d *dirTarget) diff(context.Context, DiffOptions) (diff.Summary, []plan.App, error) {
	return diff.Summary{}, nil, nil
}
func (d *dirTarget) remove(_ context.Context, apps []rendered.App) error {
	for _, a := range apps {
		if err := os.Remove(d.path(a.Name)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
func (d *dirTarget) restore(_ context.Context, err error) error { return err }

// current is what the folder holds of app: no revision is recorded
// there, so only this run's verdicts count for the promotion rule.
func (d *dirTarget) current(_ context.Context, app string) (Release, error) {
	_, err := os.Stat(d.path(app))
	return Release{Exists: err == nil}, nil
}

// pauses are a file "paused" in the cluster's folder: its reason.
func (d *dirTarget) pauses(context.Context) ([]pause.Pause, error) {
	b, err := os.ReadFile(filepath.Join(d.dir, d.run.cluster.Name, "paused"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	return []pause.Pause{{By: "alice", At: time.Now(), Reason: string(b)}}, err
}

func (d *dirTarget) approvals(context.Context, []string) (map[string]approval.Approval, []byte, string, error) {
	return nil, nil, "", nil
}
func (d *dirTarget) dependencyApplied(_ context.Context, app string) error {
	_, err := os.Stat(d.path(app))
	return err
}
func (d *dirTarget) Lock(context.Context, string) error     { return nil }
func (d *dirTarget) Remember(context.Context, string) error { return nil }
func (d *dirTarget) Test(context.Context, App) error        { return nil }
func (d *dirTarget) Apply(_ context.Context, app App) error {
	if app.Name == d.refuse {
		return errors.New("the folder refuses the write")
	}
	var b strings.Builder
	for _, res := range d.results() {
		if res.App != app.Name {
			continue
		}
		for _, o := range res.Objects {
			fmt.Fprintf(&b, "---\n%s/%s %s\n", o.GetAPIVersion(), o.GetKind(), o.GetName())
		}
	}
	return os.WriteFile(d.path(app.Name), []byte(b.String()), 0o644)
}

// A third target, added in a test alone, goes through the whole
// lifecycle: staging then production, each cluster's render where the
// target puts it; and a failure on staging holds production as on any
// cluster (its verdict failed, the promotion rule holds the next wave).
func TestThirdTarget(t *testing.T) {
	for _, tt := range []struct {
		name, refuse, paused string
		want                 map[string]string
	}{
		{"both groups", "", "", map[string]string{"stg": "succeeded in staging", "prod": "succeeded in production"}},
		{"staging fails", "web", "", map[string]string{"stg": "failed in staging", "prod": "not started in production"}},
		{"staging paused", "", "investigating", map[string]string{"stg": "succeeded in staging", "prod": "not started in production"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Nothing goes through the Connector: every read and write
			// is the target's (clusters{} has no cluster to give).
			set, _ := twoGroups(t)
			dir := t.TempDir()
			if tt.paused != "" {
				if err := os.MkdirAll(filepath.Join(dir, "stg"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "stg", "paused"), []byte(tt.paused), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			e := &Engine{Connector: clusters{}, Locks: Locks{Duration: time.Minute}}
			e.targetOf = func(run *clusterRun) target {
				name := run.cluster.Name
				return &dirTarget{dir: dir, run: run, refuse: tt.refuse, results: func() []render.Result { return set.Of(name) }}
			}
			var (
				mu    sync.Mutex
				lines []string
			)
			outcomes := e.Run(context.Background(), set, Options{Promote: set.Results, Parallel: 2, Concurrency: 4}, func(ev Event) {
				mu.Lock()
				defer mu.Unlock()
				lines = append(lines, ev.Where()+": "+ev.Text())
			})
			all := strings.Join(lines, "\n")
			if got := byCluster(outcomes); !maps.Equal(got, tt.want) {
				t.Fatalf("outcomes %v, want %v\n%s", got, tt.want, all)
			}
			if tt.paused != "" && !strings.Contains(all, "production not started: stg paused") {
				t.Errorf("the pause upstream was not said:\n%s", all)
			}
			for name, state := range tt.want {
				b, err := os.ReadFile(filepath.Join(dir, name, "web.yaml"))
				if written := err == nil && strings.Contains(string(b), "v1/ConfigMap web"); written != strings.HasPrefix(state, "succeeded") {
					t.Errorf("%s (%s): render written %v (%v)", name, state, written, err)
				}
			}
		})
	}
}
