package rollout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// App is one app of a cluster's rollout.
type App struct {
	Name string
	// DependsOn are the apps it needs applied (and healthy) first.
	DependsOn []string
	// Wait: its objects are waited for until healthy (--wait, an app
	// others depend on, an app with tests), WaitWhy says which.
	Wait    bool
	WaitWhy string
	// Tests: its tests run after its apply.
	Tests bool
	// SkippedTests is the flag that skipped the tests it has
	// (--skip-tests, --skip-gates), so that it cannot be verified; "" for
	// none.
	SkippedTests string
	// Final: no gate follows its apply (no tests, and its cluster's group
	// has no check or soak), so the verdict of a successful apply is
	// known when its revision is recorded (onApply), and is written with
	// it.
	Final bool
	// Published: a delivered cluster's app, whose Ops.Apply passes its
	// gates itself, as the cluster's Flux says (publishApp).
	Published bool
}

// onApply is the gates a successful apply of app passes: applied, and
// healthy when waited for.
func onApply(app App) []string {
	if app.Wait {
		return []string{applied, "healthy"}
	}
	return []string{applied}
}

// appOps is what a cluster's rollout does to the cluster, app by app:
// kubectl fleet's own on real clusters, fakes in tests.
type appOps interface {
	// dependencyApplied returns why app, a dependency that is not part of
	// the run, is not there (never applied), or nil.
	dependencyApplied(ctx context.Context, app string) error
	// Lock takes app's lock on the cluster, held until the command ends.
	Lock(ctx context.Context, app string) error
	// Remember keeps what the cluster runs of app before its apply, for
	// --atomic to put back.
	Remember(ctx context.Context, app string) error
	// Apply applies app (waiting when app.Wait), Test runs its tests.
	Apply(ctx context.Context, app App) error
	Test(ctx context.Context, app App) error
}

// appsRun is one cluster's apps, applied one after the other in
// dependency order: an app whose dependency failed is not started, and
// what each app's apply, health and tests say goes into Gates.
type appsRun struct {
	Cluster string
	// Apps are the cluster's apps, in dependency order.
	Apps  []App
	Ops   appOps
	Gates *gateSet
	// Write: not a dry run, so every app is locked before anything is
	// checked or written. Atomic: each app's state is remembered before
	// its apply.
	Write, Atomic bool
	// Check, when set, is asked of every app once the locks are taken
	// and before anything is written (a reviewed plan still holds): its
	// error fails the cluster as it is, with nothing written.
	Check func(ctx context.Context, app string) error
	// Done, if set, is told each started app's outcome (for reports).
	Done func(app string, err error)
}

// Run applies the apps and returns their errors ("app web: …") and the
// apps that failed. The locks come first, then Check, so that what is
// checked cannot change under another writer before it is applied. Once
// ctx is cancelled, or an app's state cannot be remembered for --atomic,
// no further app starts.
func (c appsRun) Run(ctx context.Context) ([]error, map[string]bool) {
	var errs []error
	failed := map[string]bool{}
	fail := func(app string, err error) {
		failed[app] = true
		errs = append(errs, fmt.Errorf("app %s: %w", app, err))
	}
	for _, app := range c.Apps {
		if !c.Write {
			break
		}
		if err := c.Ops.Lock(ctx, app.Name); err != nil {
			fail(app.Name, err)
			c.done(app.Name, err)
		}
	}
	if err := c.check(ctx, failed); err != nil {
		for _, app := range c.Apps {
			failed[app.Name] = true
		}
		return []error{err}, failed
	}
	for _, app := range c.Apps {
		if failed[app.Name] {
			continue // its lock is another's
		}
		if err := c.dependencies(ctx, app, failed); err != nil {
			fail(app.Name, err)
			continue
		}
		if c.Atomic && c.Write {
			if err := c.Ops.Remember(ctx, app.Name); err != nil {
				fail(app.Name, err)
				break
			}
		}
		err := c.apply(ctx, app)
		c.done(app.Name, err)
		if err != nil {
			fail(app.Name, err)
			if errors.Is(err, context.Canceled) {
				break
			}
		}
	}
	if len(failed) > 0 {
		c.Gates.Unverified("", "gates not run: "+strings.Join(slices.Sorted(maps.Keys(failed)), ", ")+" failed")
	}
	return errs, failed
}

// check asks Check of every app whose lock was taken.
func (c appsRun) check(ctx context.Context, failed map[string]bool) error {
	if c.Check == nil {
		return nil
	}
	for _, app := range c.Apps {
		if failed[app.Name] {
			continue
		}
		if err := c.Check(ctx, app.Name); err != nil {
			return err
		}
	}
	return nil
}

// dependencies refuses to start an app whose dependency failed in this
// run, or, when the dependency is not part of the run, is not there.
func (c appsRun) dependencies(ctx context.Context, app App, failed map[string]bool) error {
	for _, d := range app.DependsOn {
		switch {
		case failed[d]:
			return fmt.Errorf("not started: dependency %s failed", d)
		case slices.ContainsFunc(c.Apps, func(a App) bool { return a.Name == d }):
		default:
			if err := c.Ops.dependencyApplied(ctx, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// apply applies one app, then runs its tests, and tells its gates.
func (c appsRun) apply(ctx context.Context, app App) error {
	if err := c.Ops.Apply(ctx, app); err != nil {
		c.Gates.Fail(app.Name, "apply: "+oneLine(err))
		return err
	}
	if !app.Published { // else Ops.Apply passed them
		for _, gate := range onApply(app) {
			c.Gates.Pass(app.Name, gate)
		}
	}
	if app.SkippedTests != "" {
		c.Gates.Unverified(app.Name, "tests skipped ("+app.SkippedTests+")")
	}
	if !app.Tests {
		return nil
	}
	if err := c.Ops.Test(ctx, app); err != nil {
		c.Gates.Fail(app.Name, "tests: "+oneLine(err))
		return err
	}
	c.Gates.Pass(app.Name, "tests")
	return nil
}

func (c appsRun) done(app string, err error) {
	if c.Done != nil {
		c.Done(app, err)
	}
}

// oneLine is an error in one line of at most 200 characters, for a
// verdict's reason.
func oneLine(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", "; ")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}
