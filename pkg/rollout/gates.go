package rollout

import (
	"slices"
	"sync"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// gateSet collects what one cluster's gates said during a run, app by app,
// until the cluster's verdict is known: its apps' applies, health waits
// and tests, then the group's checks and soak, which vouch for every app
// of the cluster. The zero value is ready to use; it is safe for
// concurrent use.
type gateSet struct {
	mu sync.Mutex
	// passed are the gates each app went through; "" holds the
	// cluster's (checks, soak).
	passed map[string][]string
	// failed is why an app failed; "" holds the cluster's failure, which
	// fails every app.
	failed map[string]string
	// unverified says why the gates of an app did not (all) run; ""
	// holds the cluster's reason, for every app.
	unverified map[string]string
	// stored are the verdicts recorded with a revision this run created.
	stored map[string]revision.Verification
}

// Stored records that the revision this run recorded for app carries v
// already (App.Final).
func (g *gateSet) Stored(app string, v revision.Verification) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stored == nil {
		g.stored = map[string]revision.Verification{}
	}
	g.stored[app] = v
}

// Recorded reports whether v is what the revision this run recorded for
// app carries already, so that it need not be written again.
func (g *gateSet) Recorded(app string, v revision.Verification) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.stored[app]
	return ok && s.State == v.State && s.Reason == v.Reason && slices.Equal(s.Gates, v.Gates)
}

// Pass records that a gate passed for app ("" for the whole cluster):
// "applied", "healthy", "tests", "check smoke", "soak 20s".
func (g *gateSet) Pass(app, gate string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.passed == nil {
		g.passed = map[string][]string{}
	}
	g.passed[app] = append(g.passed[app], gate)
}

// Fail records why app ("" for the whole cluster) failed: "check smoke
// failed", "tests failed". The first failure of each is kept.
func (g *gateSet) Fail(app, reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failed == nil {
		g.failed = map[string]string{}
	}
	if _, ok := g.failed[app]; !ok {
		g.failed[app] = reason
	}
}

// Unverified records why the gates of app ("" for the whole cluster) did
// not all run ("gates skipped (--skip-gates)", "gates not run: db
// failed"); an app that did not fail is then unverified, not verified.
// The first reason of each is kept.
func (g *gateSet) Unverified(app, reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unverified == nil {
		g.unverified = map[string]string{}
	}
	if _, ok := g.unverified[app]; !ok {
		g.unverified[app] = reason
	}
}

// Verdict is app's verification from what was recorded: failed when it or
// the cluster failed, unverified when it was never applied in this run or
// a gate did not run, verified otherwise.
func (g *gateSet) Verdict(app string) revision.Verification {
	g.mu.Lock()
	defer g.mu.Unlock()
	gates := slices.Concat(g.passed[app], g.passed[""])
	switch {
	case g.failed[app] != "":
		return revision.Verification{State: revision.Failed, Reason: g.failed[app], Gates: gates}
	case g.failed[""] != "":
		return revision.Verification{State: revision.Failed, Reason: g.failed[""], Gates: gates}
	case !slices.Contains(g.passed[app], applied) && g.unverified[app] != "":
		return revision.Verification{State: revision.Unverified, Reason: g.unverified[app], Gates: gates} // published, not observed
	case !slices.Contains(g.passed[app], applied):
		return revision.Verification{State: revision.Unverified, Reason: "not applied in this run", Gates: gates}
	case g.unverified[app] != "":
		return revision.Verification{State: revision.Unverified, Reason: g.unverified[app], Gates: gates}
	case g.unverified[""] != "":
		return revision.Verification{State: revision.Unverified, Reason: g.unverified[""], Gates: gates}
	}
	return revision.Verification{State: revision.Verified, Gates: gates}
}

// applied is the gate every verified release went through: its objects
// were applied without an error.
const applied = "applied"
