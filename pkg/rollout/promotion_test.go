package rollout

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// fakeReader serves releases from a map, and counts the reads.
type fakeReader struct {
	mu       sync.Mutex
	releases map[string]Release
	errs     map[string]error
	reads    int
}

func (f *fakeReader) Release(_ context.Context, cluster, app string) (Release, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if err := f.errs[cluster]; err != nil {
		return Release{}, err
	}
	return f.releases[cluster+"/"+app], nil
}

var (
	verified   = revision.Verification{State: revision.Verified}
	checkFails = revision.Verification{State: revision.Failed, Reason: "check smoke failed"}
)

// notObserved is prod-eu's release, published and never read.
var notObserved = Release{Exists: true, Revision: 5, Digest: "sha256:p-eu", Verification: revision.Verification{State: revision.Unverified, Reason: NotObserved + ": no context reads cluster prod-eu"}}

func fleetOf(stagingBudget int) []unit {
	return []unit{
		{Name: "staging", MaxFailures: stagingBudget, Clusters: []string{"staging-eu", "staging-us"}, Renders: map[string]map[string]Render{
			"staging-eu": {"web": renderDigest("sha256:s-eu"), "db": renderDigest("sha256:db-eu")},
			"staging-us": {"web": renderDigest("sha256:s-us")},
		}},
		{Name: "production", Clusters: []string{"prod-eu"}, Renders: map[string]map[string]Render{"prod-eu": {"web": renderDigest("sha256:p-eu")}}},
		{Name: "edge", Clusters: []string{"edge-1"}, Renders: map[string]map[string]Render{"edge-1": {"web": renderDigest("sha256:e-1")}}},
	}
}

func TestPromotionCheck(t *testing.T) {
	good := map[string]Release{
		"staging-eu/web": {Exists: true, Revision: 8, Digest: "sha256:s-eu", Verification: verified},
		"staging-eu/db":  {Exists: true, Revision: 2, Digest: "sha256:db-eu", Verification: verified},
		"staging-us/web": {Exists: true, Revision: 3, Digest: "sha256:s-us", Verification: verified},
		"prod-eu/web":    {Exists: true, Revision: 5, Digest: "sha256:p-eu", Verification: verified},
	}
	with := func(key string, r Release) map[string]Release {
		m := map[string]Release{}
		for k, v := range good {
			m[k] = v
		}
		m[key] = r
		return m
	}
	tests := []struct {
		name     string
		releases map[string]Release
		errs     map[string]error
		budget   int
		wave     string
		apps     []string
		vouched  bool   // the wave needs an approval
		want     string // "" : may start
	}{
		{name: "all verified", releases: good, wave: "production", apps: []string{"web"}},
		{name: "the first group always starts", releases: map[string]Release{}, wave: "staging", apps: []string{"web"}},
		{name: "a failed check holds production", releases: with("staging-eu/web", Release{Exists: true, Revision: 8, Digest: "sha256:s-eu", Verification: checkFails}), wave: "production", apps: []string{"web"},
			want: "production not started: staging-eu runs web r8, not verified (failed: check smoke failed)"},
		{name: "unverified holds production", releases: with("staging-us/web", Release{Exists: true, Revision: 3, Digest: "sha256:s-us", Verification: revision.Verification{State: revision.Unverified}}), wave: "production", apps: []string{"web"},
			want: "production not started: staging-us runs web r3, not verified (its gates have not passed)"},
		{name: "an older render holds production", releases: with("staging-us/web", Release{Exists: true, Revision: 2, Digest: "sha256:old", Verification: verified}), wave: "production", apps: []string{"web"},
			want: "staging-us runs web r2, not this render"},
		{name: "never applied", releases: with("staging-us/web", Release{}), wave: "production", apps: []string{"web"},
			want: "staging-us does not run web yet"},
		{name: "within the budget", releases: with("staging-us/web", Release{}), budget: 1, wave: "production", apps: []string{"web"}},
		{name: "an unreadable cluster counts", releases: good, errs: map[string]error{"staging-us": errors.New("connection refused")}, wave: "production", apps: []string{"web"},
			want: "staging-us: web cannot be read: connection refused"},
		{name: "a skipped cluster does not count", releases: good, errs: map[string]error{"staging-us": &runner.SkipError{Reason: "unreachable", Unreachable: true}}, wave: "production", apps: []string{"web"}},
		{name: "an app the wave does not deploy does not hold it", releases: with("staging-eu/db", Release{Exists: true, Revision: 2, Digest: "sha256:db-eu", Verification: checkFails}), wave: "production", apps: []string{"web"}},
		{name: "every earlier group counts", releases: with("prod-eu/web", Release{Exists: true, Revision: 5, Digest: "sha256:p-eu", Verification: checkFails}), wave: "edge", apps: []string{"web"},
			want: "edge not started: prod-eu runs web r5, not verified (failed: check smoke failed)"},
		{name: "published, not observed, holds the next group", releases: with("prod-eu/web", notObserved), wave: "edge", apps: []string{"web"},
			want: "edge not started: prod-eu runs web r5, not verified (unverified: published, not observed"},
		{name: "published, not observed, and vouched for", releases: with("prod-eu/web", notObserved), vouched: true, wave: "edge", apps: []string{"web"}},
		{name: "vouched for is not verified otherwise", releases: with("prod-eu/web", Release{Exists: true, Revision: 5, Digest: "sha256:p-eu", Verification: checkFails}), vouched: true, wave: "edge", apps: []string{"web"},
			want: "edge not started: prod-eu runs web r5, not verified (failed"},
		{name: "vouched for is not another render", releases: with("prod-eu/web", Release{Exists: true, Revision: 4, Digest: "sha256:old", Verification: notObserved.Verification}), vouched: true, wave: "edge", apps: []string{"web"},
			want: "prod-eu runs web r4, not this render"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &promotion{Units: fleetOf(tt.budget), Reader: &fakeReader{releases: tt.releases, errs: tt.errs}}
			if tt.vouched {
				p.Vouched = func(wave string) bool { return wave == tt.wave }
			}
			err := p.Check(context.Background(), tt.wave, tt.apps)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("blocked: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("started; want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("got %q, want %q in it", err, tt.want)
			}
			var blocked *BlockedError
			if err != nil && !errors.As(err, &blocked) {
				t.Errorf("%T is not a *BlockedError", err)
			}
		})
	}
}

// What this run noted wins over what the cluster says, and is not read.
func TestPromotionNote(t *testing.T) {
	reader := &fakeReader{releases: map[string]Release{}}
	p := &promotion{Units: fleetOf(0), Reader: reader}
	for _, c := range []string{"staging-eu", "staging-us"} {
		p.Note(c, "web", Release{Exists: true, Digest: "sha256:" + map[string]string{"staging-eu": "s-eu", "staging-us": "s-us"}[c], Verification: verified})
	}
	if err := p.Check(context.Background(), "production", []string{"web"}); err != nil {
		t.Fatal(err)
	}
	if reader.reads != 0 {
		t.Errorf("%d reads; the run knew every release", reader.reads)
	}
	// A release read is read once, however many waves ask.
	reader.releases["prod-eu/web"] = Release{Exists: true, Revision: 5, Digest: "sha256:p-eu", Verification: verified}
	for range 2 {
		if err := p.Check(context.Background(), "edge", []string{"web"}); err != nil {
			t.Fatal(err)
		}
	}
	if reader.reads != 1 {
		t.Errorf("prod-eu read %d times for two waves", reader.reads)
	}
	p.Note("staging-us", "web", Release{Exists: true, Revision: 4, Digest: "sha256:s-us", Verification: checkFails})
	if err := p.Check(context.Background(), "production", []string{"web"}); err == nil {
		t.Fatal("a failure noted in this run did not hold production")
	}
}

func TestGatesVerdict(t *testing.T) {
	tests := []struct {
		name  string
		build func(g *gateSet)
		app   string
		want  revision.State
		why   string
	}{
		{name: "applied, tested, checked", build: func(g *gateSet) {
			g.Pass("web", applied)
			g.Pass("web", "tests")
			g.Pass("", "check smoke")
		}, app: "web", want: revision.Verified},
		{name: "a failed check fails every app", build: func(g *gateSet) {
			g.Pass("web", applied)
			g.Fail("", "check smoke failed")
		}, app: "web", want: revision.Failed, why: "check smoke failed"},
		{name: "own tests failed", build: func(g *gateSet) {
			g.Pass("web", applied)
			g.Fail("web", "tests failed")
			g.Fail("web", "later")
		}, app: "web", want: revision.Failed, why: "tests failed"},
		{name: "another app failed first", build: func(g *gateSet) {
			g.Pass("web", applied)
			g.Fail("db", "apply failed")
			g.Unverified("", "gates not run: db failed")
		}, app: "web", want: revision.Unverified, why: "gates not run: db failed"},
		{name: "skipped gates", build: func(g *gateSet) {
			g.Pass("web", applied)
			g.Unverified("", "gates skipped (--skip-gates)")
		}, app: "web", want: revision.Unverified, why: "--skip-gates"},
		{name: "own tests skipped", build: func(g *gateSet) {
			g.Pass("web", applied)
			g.Pass("db", applied)
			g.Unverified("web", "tests skipped (--skip-tests)")
		}, app: "web", want: revision.Unverified, why: "--skip-tests"},
		{name: "another app's tests skipped", build: func(g *gateSet) {
			g.Pass("web", applied)
			g.Pass("db", applied)
			g.Unverified("web", "tests skipped (--skip-tests)")
		}, app: "db", want: revision.Verified},
		{name: "not applied", build: func(g *gateSet) { g.Pass("", "check smoke") }, app: "web", want: revision.Unverified, why: "not applied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g gateSet
			tt.build(&g)
			v := g.Verdict(tt.app)
			if v.State != tt.want || !strings.Contains(v.Reason, tt.why) {
				t.Errorf("got %s (%s), want %s (%s)", v.State, v.Reason, tt.want, tt.why)
			}
		})
	}
}
