// Package sinks are where a command sends the rollout engine's events:
// the printer (text or -o json), the live display, the summary's tally,
// the report's collector and reconcile's metrics, fed from one Sink
// (Set.Emit).
package sinks

import (
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output/progress"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/report"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// Set is what a rollout's events feed: the printer (text or
// JSON), the summary's tally, the live progress, the CI report's
// collector and, for reconcile, the metrics. Any of them but the printer
// may be nil.
type Set struct {
	Printer  *output.Printer
	Tally    *summary.Tally
	Progress *progress.Display
	Report   *report.Collector
	// onChange is told every object's change (reconcile's metrics).
	OnChange func(cluster, app, action string)
	// diffs is how --diff's diffs are printed.
	Diffs diff.Style
	// DiffApps records each DiffEvent's app in Report with its counts
	// (report.DiffApp), as diff's report lists them; Unmasked leaves the
	// diffs themselves out of Report (--show-secrets).
	DiffApps, Unmasked bool
	// External, when set, gathers every diff for the external diff
	// program ($KUBECTL_EXTERNAL_DIFF).
	External *diff.External
}

// Emit hands an event to every consumer.
func (c Set) Emit(ev rollout.Event) {
	switch ev := ev.(type) {
	case rollout.ObjectEvent:
		c.object(ev)
	case rollout.DiffEvent:
		c.diff(ev)
		return
	case rollout.AppEvent: // the report's only
		c.Report.App(ev.Cluster, report.Outcome(ev.App, ev.Err))
		return
	case rollout.EndEvent: // the live display's, and the end of the cluster's output
		c.Progress.End(ev.Cluster, ev.Err)
		c.Printer.Done(ev.Cluster)
		return
	case rollout.OutputEvent: // a check's output: text only
		if c.Printer.JSON {
			return
		}
	case rollout.StageEvent: // the live display's only
		if c.Progress != nil {
			if ev.Objects > 0 {
				c.Progress.Expect(ev.Cluster, ev.Objects)
			}
			c.Progress.Stage(ev.Cluster, "%s", ev.Stage)
		}
		return
	case rollout.TestsEvent: // the summary's only
		if c.Tally != nil {
			c.Tally.AddGate(ev.Cluster, ev.Text())
		}
		return
	case rollout.RevisionEvent:
		if c.Tally != nil && ev.Error == "" {
			c.Tally.SetRevision(ev.Cluster, ev.App, ev.Revision)
		}
		if c.Tally != nil && ev.Source != "" {
			c.Tally.SetSource(ev.Cluster, ev.App, ev.Source)
		}
	case rollout.PublishEvent:
		if c.Tally != nil {
			c.Tally.SetPublished(ev.Cluster, ev.App, ev.Digest)
		}
	case rollout.FluxEvent:
		if c.Tally != nil {
			c.Tally.AddGate(ev.Cluster, "Flux applied "+ev.App)
		}
	case rollout.CheckEvent:
		if c.Tally != nil {
			c.Tally.AddGate(ev.Cluster, "check "+ev.Check+" "+ev.State)
		}
	case rollout.MeasurementEvent:
		c.Report.Measured(ev.Cluster, ev.Text())
	case rollout.SoakEvent:
		if c.Tally != nil && (ev.State == "passed" || ev.State == "failed") {
			c.Tally.AddGate(ev.Cluster, "soak "+ev.State)
		}
	case rollout.WaveEvent:
		if ev.Progress() && !c.Printer.JSON {
			return // the summary says it, in text
		}
		if !c.Printer.JSON { // said once, under the summary's heading
			note := ev.Text()
			if hint := ev.Hint(); hint != "" {
				note += " (" + hint + ")"
			}
			c.Printer.Note(note)
			return
		}
	}
	c.Printer.Emit(ev)
}

// object counts an object's change for the summary, the progress, the
// report's failures and the metrics.
func (c Set) object(ev rollout.ObjectEvent) {
	if ev.Restore {
		return // said, not counted
	}
	word := ev.Word()
	if c.Tally != nil {
		c.Tally.Add(ev.Cluster, word)
	}
	if ev.Test {
		return // said and counted, not the app's progress or failures
	}
	switch ev.Action {
	case change.Created, change.Configured, change.Adopted, change.Unchanged, change.Replaced, change.AfterCRD, change.Failed, change.Skipped:
		if c.Progress != nil && ev.Health == "" {
			c.Progress.Did(ev.Cluster)
		}
	}
	if ev.Error != "" {
		c.Report.Failed(ev.Cluster, ev.App, ev.Object+": "+ev.Error)
	}
	if c.OnChange != nil {
		c.OnChange(ev.Cluster, ev.App, word)
	}
}

// diff prints an app's diffs on a cluster (JSON events, or the unified
// diffs on the cluster's prefixed writer), keeps them for the report
// (with the app, DiffApps) and gives them to the external diff program.
func (c Set) diff(ev rollout.DiffEvent) {
	if c.DiffApps {
		c.Report.App(ev.Cluster, report.DiffApp(ev.App, ev.Diffs))
	}
	c.External.Gather(ev.Cluster, ev.Diffs)
	w := c.Printer.Cluster(ev.Cluster)
	for _, d := range ev.Diffs {
		if c.Printer.JSON {
			c.Printer.EventOf(ev.Cluster, diff.EventOf(ev.Cluster, ev.App, d))
			continue
		}
		diff.Print(w, d, c.Diffs)
	}
	if !c.Unmasked {
		c.Report.Diffs(ev.Cluster, ev.Diffs)
	}
}
