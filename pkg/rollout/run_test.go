package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// fakeFleet is three groups of clusters without an API server: what each
// cluster runs is kept in memory (as revisions keep it in a cluster), so
// that one run's verdicts are what the next run reads.
type fakeFleet struct {
	mu sync.Mutex
	// runs is what each cluster runs of the app "web", by cluster.
	runs map[string]Release
	// render is the digest of the current render, the same everywhere
	// for simplicity.
	render string
	// failCheck names the clusters whose check fails; unhealthy those
	// whose objects go away during a soak.
	failCheck, unhealthy map[string]bool
	// failTests names the clusters whose tests of web fail.
	failTests map[string]bool
	// failAfter, when set, holds a failing test back until that cluster
	// applied: the runner starts no cluster once the wave is over its
	// budget, so a test that expects both clusters ran waits for both.
	failAfter  chan struct{}
	waitFor    string
	applied    []string
	rolledBack []string
	// dir holds the check, smoke.sh: it exits with its argument.
	dir string
}

// fleetOps apply to a fake cluster: web's apply makes a new revision
// when the render changed, its tests fail where told.
type fleetOps struct {
	f       *fakeFleet
	cluster string
}

func (o *fleetOps) dependencyApplied(context.Context, string) error { return nil }
func (o *fleetOps) Lock(context.Context, string) error              { return nil }
func (o *fleetOps) Remember(context.Context, string) error          { return nil }
func (o *fleetOps) Apply(_ context.Context, app App) error {
	o.f.mu.Lock()
	defer o.f.mu.Unlock()
	if app.Name != "web" {
		return nil
	}
	r := o.f.runs[o.cluster]
	if r.Digest != o.f.render {
		r = Release{Exists: true, Revision: r.Revision + 1, Digest: o.f.render}
	}
	o.f.runs[o.cluster] = r
	o.f.applied = append(o.f.applied, o.cluster)
	if o.cluster == o.f.waitFor && o.f.failAfter != nil {
		close(o.f.failAfter)
		o.f.failAfter = nil
	}
	return nil
}
func (o *fleetOps) Test(ctx context.Context, _ App) error {
	o.f.mu.Lock()
	fail, wait := o.f.failTests[o.cluster], o.f.failAfter
	o.f.mu.Unlock()
	if fail {
		if wait != nil {
			select {
			case <-wait:
			case <-ctx.Done():
			}
		}
		return errors.New("job.batch/smoke failed")
	}
	return nil
}

func (f *fakeFleet) Release(_ context.Context, cluster, _ string) (Release, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[cluster], nil
}

var groups = []struct {
	name        string
	clusters    []string
	maxFailures int
}{
	{"staging", []string{"stg-eu", "stg-us"}, 0},
	{"production", []string{"prod-eu", "prod-us"}, 0},
	{"edge", []string{"edge-1"}, 0},
}

// run rolls the selected groups out the way apply does: per cluster the
// app is applied (a new revision when the render changed), its group's
// check runs, and the verdict is recorded (after the soak where the
// group soaks); a failed soak rolls the cluster back (--atomic).
func (f *fakeFleet) run(t *testing.T, selected ...string) ([]runner.Outcome, []string) {
	t.Helper()
	var (
		ev    events
		mu    sync.Mutex
		gates = map[string]*gateSet{}
	)
	gatesOf := func(c string) *gateSet {
		mu.Lock()
		defer mu.Unlock()
		if gates[c] == nil {
			gates[c] = &gateSet{}
		}
		return gates[c]
	}
	p := &promotion{Reader: f}
	plan := schedule{Parallel: 4, Brakes: map[string][]Brake{}, Soaks: map[string]soakRun{}}
	for _, g := range groups {
		rg := unit{Name: g.name, MaxFailures: g.maxFailures, Clusters: g.clusters, Renders: map[string]map[string]Render{}}
		for _, c := range g.clusters {
			rg.Renders[c] = map[string]Render{"web": renderDigest(f.render)}
		}
		p.Units = append(p.Units, rg)
		if slices.Contains(selected, g.name) {
			plan.Waves = append(plan.Waves, runner.Wave{Name: g.name, Clusters: g.clusters, MaxFailures: g.maxFailures})
			plan.Brakes[g.name] = []Brake{p.Brake(g.name, []string{"web"}, ev.sink)}
		}
	}
	settle := func(c string) {
		v := gatesOf(c).Verdict("web")
		f.mu.Lock()
		r := f.runs[c]
		r.Verification = v
		f.runs[c] = r
		f.mu.Unlock()
		p.Note(c, "web", r)
		ev.sink(verdictOf(c, "web", "", r.Revision, v, nil))
	}
	plan.Soaks["edge"] = soakRun{
		Duration: 100 * time.Millisecond, Interval: 10 * time.Millisecond, Gates: gatesOf, Emit: ev.sink,
		Health: func(_ context.Context, c string) error {
			if f.unhealthy[c] {
				return errors.New("deployment.apps/web is gone")
			}
			return nil
		},
		Ended: func(_ context.Context, c string, err error) error {
			settle(c)
			if err != nil {
				f.mu.Lock()
				f.rolledBack = append(f.rolledBack, c)
				f.mu.Unlock()
				return fmt.Errorf("%w (rolled back)", err)
			}
			return nil
		},
	}
	outcomes := runWaves(context.Background(), plan, func(ctx context.Context, c string) error {
		ops := &fleetOps{f: f, cluster: c}
		run := appsRun{Cluster: c, Ops: ops, Gates: gatesOf(c), Write: true, Atomic: true, Apps: []App{
			{Name: "web", Wait: true, Tests: true},
			{Name: "docs", DependsOn: []string{"web"}},
		}}
		errs, failed := run.Run(ctx)
		if len(failed) == 0 {
			fail := "0"
			if f.failCheck[c] {
				fail = "1"
			}
			checks := checkRun{Dir: f.dir, Checks: []fleet.Check{{Name: "smoke", Command: []string{"./smoke.sh", fail}}}, Out: io.Discard, Emit: ev.sink, Gates: gatesOf(c)}
			if err := checks.Run(ctx, c); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 || !strings.HasPrefix(c, "edge") {
			settle(c) // else after the soak
		}
		return errors.Join(errs...)
	})
	return outcomes, ev.lines()
}

func states(outcomes []runner.Outcome) string {
	var s []string
	for _, o := range outcomes {
		s = append(s, o.Cluster+"="+string(o.State))
	}
	return strings.Join(s, " ")
}

// A whole multi-group rollout, run after run, without an API server: per
// cluster two apps in dependency order with tests (appsRun), the
// group's check (Checks, a real command), the last group's soak (Soak,
// --atomic's rollback in Ended), and the promotion rule over what the
// runs recorded. A failed check on staging stops production in that run
// and in the next, even when only production is selected; fixed, the
// release goes through staging and production, and the soak on the last
// group catches an object going away and rolls that cluster back; a
// failed test fails its cluster and keeps its dependent app from
// starting.
func TestRolloutAcrossRuns(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the check is a shell script")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "smoke.sh"), []byte("#!/bin/sh\nexit $1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fakeFleet{runs: map[string]Release{}, render: "sha256:v1", failCheck: map[string]bool{"stg-us": true}, unhealthy: map[string]bool{}, failTests: map[string]bool{}, dir: dir}

	outcomes, lines := f.run(t, "staging", "production", "edge")
	if got := states(outcomes); got != "stg-eu=succeeded stg-us=failed prod-eu=not started prod-us=not started edge-1=not started" {
		t.Errorf("run 1: %s", got)
	}
	if !slices.Contains(lines, "stg-us revision 1 failed: check smoke: exit status 1") || !slices.Contains(lines, "stg-eu revision 1 verified") {
		t.Errorf("run 1 said:\n%s", strings.Join(lines, "\n"))
	}

	// Production alone: staging is read, not run, and holds it back.
	f.applied = nil
	outcomes, lines = f.run(t, "production")
	if got := states(outcomes); got != "prod-eu=not started prod-us=not started" {
		t.Errorf("run 2: %s", got)
	}
	if len(f.applied) != 0 {
		t.Errorf("run 2 applied %v", f.applied)
	}
	if want := " production not started: stg-us runs web r1, not verified (failed: check smoke: exit status 1)"; !slices.Contains(lines, want) {
		t.Errorf("run 2 said:\n%s\nwant %q", strings.Join(lines, "\n"), want)
	}
	var blocked *BlockedError
	if !errors.As(outcomes[0].Err, &blocked) {
		t.Errorf("run 2: production's error %v is not a *BlockedError", outcomes[0].Err)
	}

	// Fixed: the same render goes through; edge's soak fails.
	f.failCheck["stg-us"] = false
	f.unhealthy["edge-1"] = true
	outcomes, lines = f.run(t, "staging", "production", "edge")
	if got := states(outcomes); got != "stg-eu=succeeded stg-us=succeeded prod-eu=succeeded prod-us=succeeded edge-1=failed" {
		t.Errorf("run 3: %s\n%s", got, strings.Join(lines, "\n"))
	}
	if f.runs["stg-us"].Revision != 1 || f.runs["stg-us"].Verification.State != revision.Verified {
		t.Errorf("stg-us after run 3: %+v", f.runs["stg-us"])
	}
	if e := f.runs["edge-1"].Verification; e.State != revision.Failed || e.Reason != "soak: deployment.apps/web is gone" {
		t.Errorf("edge-1's verdict: %+v", e)
	}
	if !slices.Equal(f.rolledBack, []string{"edge-1"}) || !strings.Contains(outcomes[4].Err.Error(), "(rolled back)") {
		t.Errorf("rolled back %v; edge-1: %v", f.rolledBack, outcomes[4].Err)
	}
	if !slices.Contains(lines, "edge-1 soak started: watching for 0s") {
		t.Errorf("run 3 said:\n%s", strings.Join(lines, "\n"))
	}

	// A failing test on production's first cluster: its dependent app
	// does not start, the cluster fails, edge does not start.
	f.failTests["prod-eu"] = true
	f.failAfter, f.waitFor = make(chan struct{}), "prod-us"
	f.unhealthy["edge-1"] = false
	outcomes, lines = f.run(t, "production", "edge")
	if got := states(outcomes); got != "prod-eu=failed prod-us=succeeded edge-1=not started" {
		t.Errorf("run 3b: %s", got)
	}
	if !strings.Contains(outcomes[0].Err.Error(), "app docs: not started: dependency web failed") {
		t.Errorf("prod-eu: %v", outcomes[0].Err)
	}
	if v := f.runs["prod-eu"].Verification; v.State != revision.Failed || v.Reason != "tests: job.batch/smoke failed" {
		t.Errorf("prod-eu's verdict: %+v\n%s", v, strings.Join(lines, "\n"))
	}
	f.failTests["prod-eu"] = false

	// A new render: production waits until staging verified it, in the
	// same run.
	f.render = "sha256:v2"
	f.unhealthy["edge-1"] = false
	outcomes, _ = f.run(t, "staging", "production", "edge")
	if got := states(outcomes); got != "stg-eu=succeeded stg-us=succeeded prod-eu=succeeded prod-us=succeeded edge-1=succeeded" {
		t.Errorf("run 4: %s", got)
	}
	if r := f.runs["edge-1"]; r.Revision != 2 || r.Verification.State != revision.Verified || !slices.Contains(r.Verification.Gates, "soak 100ms") {
		t.Errorf("edge-1 after run 4: %+v", r)
	}
}
