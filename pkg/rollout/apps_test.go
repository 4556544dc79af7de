package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// fakeOps records what a cluster's rollout does, and fails where told.
type fakeOps struct {
	did []string
	// fail maps "apply db", "test web", "lock web", "remember web",
	// "dependency db" to the error that step returns.
	fail map[string]error
}

func (f *fakeOps) step(what, app string) error {
	f.did = append(f.did, what+" "+app)
	return f.fail[what+" "+app]
}

func (f *fakeOps) dependencyApplied(_ context.Context, app string) error {
	return f.step("dependency", app)
}
func (f *fakeOps) Lock(_ context.Context, app string) error     { return f.step("lock", app) }
func (f *fakeOps) Remember(_ context.Context, app string) error { return f.step("remember", app) }
func (f *fakeOps) Apply(_ context.Context, app App) error {
	w := ""
	if app.Wait {
		w = " (wait)"
	}
	return f.step("apply", app.Name+w)
}
func (f *fakeOps) Test(_ context.Context, app App) error { return f.step("test", app.Name) }

func TestClusterRun(t *testing.T) {
	apps := []App{
		{Name: "db", Wait: true},
		{Name: "web", DependsOn: []string{"db", "crds"}, Wait: true, Tests: true},
		{Name: "dash", DependsOn: []string{"web"}},
		{Name: "docs", SkippedTests: "--skip-gates"},
	}
	tests := []struct {
		name     string
		fail     map[string]error
		atomic   bool
		write    bool
		check    bool
		did      string
		errs     string
		verdicts map[string]string // app: state (reason)
	}{
		{name: "everything passes", write: true,
			did:      "lock db|lock web|lock dash|lock docs|apply db (wait)|dependency crds|apply web (wait)|test web|apply dash|apply docs",
			verdicts: map[string]string{"db": "verified", "web": "verified", "dash": "verified", "docs": "unverified: tests skipped (--skip-gates)"}},
		{name: "a dry run takes no lock",
			did: "apply db (wait)|dependency crds|apply web (wait)|test web|apply dash|apply docs"},
		{name: "a failed dependency fails its dependents", write: true, fail: map[string]error{"apply db (wait)": errors.New("deployment.apps/db not healthy after 5m")},
			did:      "lock db|lock web|lock dash|lock docs|apply db (wait)|apply docs",
			errs:     "app db: deployment.apps/db not healthy after 5m|app web: not started: dependency db failed|app dash: not started: dependency web failed",
			verdicts: map[string]string{"db": "failed: apply: deployment.apps/db not healthy after 5m", "web": "unverified: not applied in this run", "docs": "unverified: tests skipped (--skip-gates)"}},
		{name: "a dependency outside the run is not there", write: true, fail: map[string]error{"dependency crds": errors.New("not started: dependency crds was never applied to this cluster")},
			did:      "lock db|lock web|lock dash|lock docs|apply db (wait)|dependency crds|apply docs",
			errs:     "app web: not started: dependency crds was never applied to this cluster|app dash: not started: dependency web failed",
			verdicts: map[string]string{"db": "unverified: gates not run: dash, web failed"}},
		{name: "failed tests", write: true, fail: map[string]error{"test web": errors.New("job.batch/smoke failed")},
			did:      "lock db|lock web|lock dash|lock docs|apply db (wait)|dependency crds|apply web (wait)|test web|apply docs",
			errs:     "app web: job.batch/smoke failed|app dash: not started: dependency web failed",
			verdicts: map[string]string{"web": "failed: tests: job.batch/smoke failed"}},
		{name: "a lock held elsewhere", write: true, fail: map[string]error{"lock db": errors.New("locked by alice")},
			did:  "lock db|lock web|lock dash|lock docs|apply docs",
			errs: "app db: locked by alice|app web: not started: dependency db failed|app dash: not started: dependency web failed"},
		{name: "--atomic remembers each app before its apply", write: true, atomic: true, fail: map[string]error{"remember web": errors.New("forbidden")},
			did:  "lock db|lock web|lock dash|lock docs|remember db|apply db (wait)|dependency crds|remember web",
			errs: "app web: forbidden"},
		{name: "a stale plan: nothing written, the error as it is", write: true, check: true, fail: map[string]error{"check web": errors.New("plan is stale: configmap/a changed since the plan")},
			did:  "lock db|lock web|lock dash|lock docs|check db|check web",
			errs: "plan is stale: configmap/a changed since the plan"},
		{name: "a plan is checked after the locks, before any write", write: true, check: true,
			did: "lock db|lock web|lock dash|lock docs|check db|check web|check dash|check docs|apply db (wait)|dependency crds|apply web (wait)|test web|apply dash|apply docs"},
		{name: "Ctrl-C stops the next apps", write: true, fail: map[string]error{"apply db (wait)": fmt.Errorf("applying: %w", context.Canceled)},
			did:  "lock db|lock web|lock dash|lock docs|apply db (wait)",
			errs: "app db: applying: context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := &fakeOps{fail: tt.fail}
			var g gateSet
			var done []string
			run := appsRun{Cluster: "eu", Apps: apps, Ops: ops, Gates: &g, Write: tt.write, Atomic: tt.atomic,
				Done: func(app string, err error) { done = append(done, app) }}
			if tt.check {
				run.Check = func(_ context.Context, app string) error { return ops.step("check", app) }
			}
			errs, failed := run.Run(context.Background())
			if got := strings.Join(ops.did, "|"); got != tt.did {
				t.Errorf("did\n %s\nwant\n %s", got, tt.did)
			}
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			if strings.Join(got, "|") != tt.errs {
				t.Errorf("errors\n %s\nwant\n %s", strings.Join(got, "|"), tt.errs)
			}
			if len(failed) != len(errs) && !tt.check {
				t.Errorf("failed %v for %d errors", failed, len(errs))
			}
			for app, want := range tt.verdicts {
				if v := g.Verdict(app); v.String() != want {
					t.Errorf("%s: %s, want %s", app, v, want)
				}
			}
			if tt.errs == "" && slices.ContainsFunc(apps, func(a App) bool { return g.Verdict(a.Name).State == revision.Failed }) {
				t.Error("an app failed in a run without errors")
			}
			for _, app := range done {
				if !slices.ContainsFunc(ops.did, func(s string) bool { return strings.HasPrefix(s, "lock "+app) || strings.HasPrefix(s, "apply "+app) }) {
					t.Errorf("Done(%s) for an app never started", app)
				}
			}
		})
	}
}
