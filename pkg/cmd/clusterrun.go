package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output/progress"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/report"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
	"golang.org/x/term"
)

func (g *GlobalOptions) newPrinter(clusters []*fleet.Cluster, jsonOut bool) *printer {
	return output.NewPrinter(g.Out, jsonOut, g.prefixer(clusters), g.manyClusters())
}

// printer is the output of commands that work on clusters.
type printer = output.Printer

// consumers are what a rollout's events feed: the printer (text or
// JSON), the summary's tally, the live progress, the CI report's
// collector and, for reconcile, the metrics. Any of them but the printer
// may be nil.
type consumers struct {
	p         *printer
	tally     *summary.Tally
	pr        *progress.Display
	collected *report.Collector
	// onChange is told every object's change (reconcile's metrics).
	onChange func(cluster, app string, action apply.Action)
	// diffs is how --diff's diffs are printed.
	diffs diff.Style
}

// emit hands an event to every consumer.
func (c consumers) emit(ev rollout.Event) {
	switch ev := ev.(type) {
	case rollout.ObjectEvent:
		c.object(ev)
	case rollout.DiffEvent:
		c.diff(ev)
		return
	case rollout.AppEvent: // the report's only
		c.collected.App(ev.Cluster, report.Outcome(ev.App, ev.Err))
		return
	case rollout.EndEvent: // the live display's only
		c.pr.End(ev.Cluster, ev.Err)
		return
	case rollout.OutputEvent: // a check's output: text only
		if c.p.JSON {
			return
		}
	case rollout.StageEvent: // the live display's only
		if c.pr != nil {
			if ev.Objects > 0 {
				c.pr.Expect(ev.Cluster, ev.Objects)
			}
			c.pr.Stage(ev.Cluster, "%s", ev.Stage)
		}
		return
	case rollout.TestsEvent: // the summary's only
		if c.tally != nil {
			c.tally.AddGate(ev.Cluster, ev.Text())
		}
		return
	case rollout.RevisionEvent:
		if c.tally != nil && ev.Error == "" {
			c.tally.SetRevision(ev.Cluster, ev.App, ev.Revision)
		}
	case rollout.CheckEvent:
		if c.tally != nil {
			c.tally.AddGate(ev.Cluster, "check "+ev.Check+" "+ev.State)
		}
	case rollout.SoakEvent:
		if c.tally != nil && (ev.State == "passed" || ev.State == "failed") {
			c.tally.AddGate(ev.Cluster, "soak "+ev.State)
		}
	case rollout.WaveEvent:
		if !c.p.JSON { // said once, under the summary's heading
			c.p.Note(ev.Text() + " (--skip-gates promotes anyway)")
			return
		}
	}
	c.p.Emit(ev)
}

// object counts an object's change for the summary, the progress, the
// report's failures and the metrics.
func (c consumers) object(ev rollout.ObjectEvent) {
	if ev.Restore {
		return // said, not counted
	}
	action := apply.Action(ev.Action)
	if c.tally != nil {
		c.tally.Add(ev.Cluster, action)
	}
	if ev.Test {
		return // said and counted, not the app's progress or failures
	}
	switch action {
	case apply.Created, apply.Configured, apply.Adopted, apply.Unchanged, apply.Replaced, apply.Failed, apply.Skipped:
		if c.pr != nil {
			c.pr.Did(ev.Cluster)
		}
	}
	if ev.Error != "" {
		c.collected.Failed(ev.Cluster, ev.App, ev.Object+": "+ev.Error)
	}
	if c.onChange != nil {
		c.onChange(ev.Cluster, ev.App, action)
	}
}

// diff prints an app's diffs on a cluster (JSON events, or the unified
// diffs on the cluster's prefixed writer), and keeps them for the report.
func (c consumers) diff(ev rollout.DiffEvent) {
	w := c.p.Cluster(ev.Cluster)
	for _, d := range ev.Diffs {
		if c.p.JSON {
			c.p.EventOf(ev.Cluster, diff.EventOf(ev.Cluster, ev.App, d))
			continue
		}
		diff.Print(w, d, c.diffs)
	}
	c.collected.Diffs(ev.Cluster, ev.Diffs)
}

// objects says each object's change of app on a cluster (after label,
// when not empty) to the consumers.
func (c consumers) objects(cluster, app, label string, dryRun bool) func(apply.Change) {
	return func(ch apply.Change) { c.emit(rollout.ObjectChanged(cluster, app, label, ch, dryRun)) }
}

// client connects to one cluster with its own ConfigFlags, once per
// command: reading attributes from the cluster and then diffing or applying
// share one REST mapper and discovery cache.
func (g *GlobalOptions) client(f *fleet.Fleet, c *fleet.Cluster) (*kube.Client, error) {
	return g.clients.Do(c.Name, func() (*kube.Client, error) {
		return kube.NewClient(kube.ForCluster(g.ConfigFlags, f, c))
	})
}

// idle closes the idle connections of a cluster whose work is over
// (kube.Client.CloseIdleConnections); a cluster never connected to has
// none.
func (g *GlobalOptions) idle(cluster string) {
	if c, ok := g.clients.Peek(cluster); ok && c != nil {
		c.CloseIdleConnections()
	}
}

// unreachableError is a cluster's failure because it could not be
// asked, said so, with the way out.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string {
	return fmt.Sprintf("cluster unreachable (%s): %v; --skip-unreachable reports such a cluster as skipped", kube.WhyUnreachable(e.err), e.err)
}

func (e *unreachableError) Unwrap() error { return e.err }

// explained runs fn for a cluster, and says so when its error is the
// cluster not answering (explain).
func (g *GlobalOptions) explained(fn func(ctx context.Context, cluster string) error) func(ctx context.Context, cluster string) error {
	return func(ctx context.Context, cluster string) error { return g.explain(ctx, cluster, fn(ctx, cluster)) }
}

// explain says so when a cluster's error is the cluster not answering
// (refused, no such host, timed out) before it answered anything: not a
// client library's message ("taking lease …: Post …: connection
// refused") alone. One that stopped answering during the run says so
// itself ("the cluster stopped answering, …").
func (g *GlobalOptions) explain(ctx context.Context, cluster string, err error) error {
	var skip *runner.SkipError
	var already *unreachableError
	if !kube.IsUnreachable(err) || errors.As(err, &skip) || errors.As(err, &already) || ctx.Err() != nil {
		return err
	}
	if c, ok := g.verified.Peek(cluster); ok && c.Slowest() > 0 {
		return err // it answered before
	}
	return &unreachableError{err: err}
}

// connect returns a cluster's client once the cluster's identity pins
// (server, uid) are verified. Every command that reads or writes a
// cluster's state goes through here: reading the wrong cluster is as
// misleading as writing to it. Both happen once per command; requests
// already sent finish (or time out) after Ctrl-C.
func (g *GlobalOptions) connect(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster) (*kube.Client, error) {
	return g.verified.Do(c.Name, func() (*kube.Client, error) {
		client, err := g.client(f, c)
		if err != nil {
			return nil, err
		}
		if g.SkipUnreachable {
			if err := client.Reachable(); kube.IsUnreachable(err) {
				return nil, &runner.SkipError{Reason: "unreachable: " + err.Error(), Unreachable: true}
			}
		}
		if err := client.VerifyIdentity(context.WithoutCancel(ctx), c.Server, c.UID); err != nil {
			return nil, err
		}
		return client, nil
	})
}

// checkContexts materializes the clusters' kubeconfigFrom, then verifies,
// before any request, that every cluster's context exists in its
// kubeconfig.
func checkContexts(ctx context.Context, g *GlobalOptions, f *fleet.Fleet, clusters []*fleet.Cluster) error {
	if err := g.resolveKubeconfigs(ctx, f, clusters); err != nil {
		return err
	}
	return kube.CheckContexts(g.ConfigFlags, &kube.Kubeconfigs{}, f, clusters)
}

// stdinIsTerminal reports whether confirmation can be asked for.
func (g *GlobalOptions) stdinIsTerminal() bool {
	f, ok := g.In.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
