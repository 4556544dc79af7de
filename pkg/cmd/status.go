package cmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/report"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/status"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// StatusOptions are the options of "kubectl fleet status".
type StatusOptions struct {
	*GlobalOptions
	SelectOptions
	SourceOptions
	Output      string
	Verbose     bool
	Parallel    int
	Concurrency int
	// Watch refreshes the report every WatchInterval until Ctrl-C.
	Watch         bool
	WatchInterval time.Duration
	ReportOptions

	// inventory: no source and no apps; report what the clusters record.
	inventory bool
}

// NewCmdStatus returns the status command.
func NewCmdStatus(g *GlobalOptions) *cobra.Command {
	o := &StatusOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every app's health and drift on every selected cluster",
		Long: `For each selected cluster and app: every object's health by kstatus rules
(Current, InProgress, Failed, NotFound, ...), whether it has drifted from the
rendered state (a dry-run apply would change it), members of the app's set
that are no longer rendered, and when the app was last applied.

By default a matrix, clusters by apps. Each cell counts objects, not pods:
the worst health and how many of the app's objects have it ("5 of 5
Current", "2 of 5 InProgress"), then how many were edited live since the
last apply ("1 drifted") and how many the render changed since ("2 out of
sync": apply rolls them out), and the current revision ("(r8 verified)");
"not deployed" for an app never applied here, "-" where the app does not
go. -v lists every object.

Exit codes:
  0  every object Current and in sync
  1  something is not (a delivered cluster's tag moved by someone else,
     its Flux objects not what bootstrap wrote), or an error
  5  as 0, but a delivered cluster no context reads is published, not
     observed: nothing says what it runs`,
		Example: `  kubectl fleet status
  kubectl fleet status -o wide -c prod-eu
  kubectl fleet status -o json
  kubectl fleet status --watch`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Output == "wide" {
				o.Output, o.Verbose = "", true // kubectl's word for more columns
			}
			if err := validateJSONOutput(o.Output); err != nil {
				return fmt.Errorf("%w or wide", err)
			}
			if err := o.SourceOptions.Validate(); err != nil {
				return err
			}
			if err := o.ReportOptions.validate(); err != nil {
				return err
			}
			if o.Watch && o.Report != "" {
				return fmt.Errorf("--report does not go with --watch, which never ends")
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.SourceOptions.addFlags(cmd, g)
	g.addSkipUnreachableFlag(cmd)
	o.ReportOptions.addFlags(cmd)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json (one object per cluster and app, per line), or wide (every object, as --verbose)")
	cmd.Flags().BoolVar(&o.Verbose, "verbose", false, "list every object (-o wide); -v is the log level, as everywhere")
	cmd.Flags().IntVar(&o.Parallel, "parallel", 10, "clusters queried at once")
	cmd.Flags().IntVar(&o.Concurrency, "concurrency", 16, "requests in flight per cluster")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "refresh the report (in place on a terminal) until Ctrl-C")
	cmd.Flags().DurationVar(&o.WatchInterval, "watch-interval", 5*time.Second, "time between refreshes with --watch")
	return cmd
}

// Run reports.
func (o *StatusOptions) Run(ctx context.Context) error {
	r, err := o.rendered(ctx)
	if err != nil {
		return err
	}
	if !o.Watch {
		return o.report(ctx, r)
	}
	if o.WatchInterval <= 0 {
		return fmt.Errorf("--watch-interval must be positive")
	}
	_, ok := output.Terminal(o.Out)
	inPlace := ok && o.Output != "json"
	out := o.Out
	defer func() { o.Out = out }()
	status.Watch(ctx, out, o.WatchInterval, inPlace, o.Output == "json", func(w io.Writer) {
		o.Out = w
		_ = o.report(ctx, r)
	})
	return &exit.Error{Code: exit.Interrupted}
}

// rendered renders the source or the fleet file's apps; with neither, the
// report comes from what each cluster's inventory records (inventory),
// and nothing is rendered.
func (o *StatusOptions) rendered(ctx context.Context) (*rendered.Set, error) {
	if _, adhoc := o.Adhoc(); !adhoc {
		f, clusters, err := o.selected(o.Selection)
		if err != nil {
			return nil, err
		}
		if len(f.Apps) == 0 {
			if err := checkContexts(ctx, o.GlobalOptions, f, clusters); err != nil {
				return nil, err
			}
			o.inventory = true
			return &rendered.Set{Fleet: f, Clusters: clusters}, nil
		}
	}
	cfg, err := o.renderConfig(o.Selection, &o.SourceOptions, true)
	if err != nil {
		return nil, err
	}
	// The clusters read later let their renders go until their read,
	// but for those the promotion notes read (rollout.Held).
	cfg.Shed = func(cs []*fleet.Cluster) map[string]bool { return rollout.Unread(cfg.Fleet, cs, o.Parallel) }
	return rendered.Render(ctx, cfg)
}

// report reads the status of every selected cluster once and prints it.
func (o *StatusOptions) report(ctx context.Context, r *rendered.Set) (err error) {
	outcomes, results, pauses := status.Fleet{Set: r, Recorded: o.inventory, Apps: o.Apps, Parallel: o.Parallel, Concurrency: o.Concurrency, Connector: connector{o.GlobalOptions}, Delivered: registry.Of(r.Fleet), Again: o.Watch}.Read(ctx)
	if !o.Watch {
		defer func() {
			err = o.finish(o.GlobalOptions, func() report.Report { return report.OfStatus(r.Fleet, outcomes, results) }, err)
		}()
	}
	rep := status.NewReport(r, outcomes, results, pauses)
	rep.Held = func() []status.Hold { return rollout.Held(context.Background(), r, rollout.StatusReader(results)) }
	if err := rep.Print(o.newPrinter(r.Clusters, o.Output == "json"), o.ErrOut, o.Verbose); err != nil {
		return err
	}
	return summary.Status(ctx, outcomes, rep.Clusters)
}
