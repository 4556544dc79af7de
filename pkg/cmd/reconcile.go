package cmd

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/logging"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/metrics"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/reconcile"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// ShardEnv is the environment variable --shard defaults to.
const ShardEnv = "KUBECTL_FLEET_SHARD"

// ReconcileOptions are the options of "kubectl fleet reconcile".
type ReconcileOptions struct {
	// apply holds apply's flags; every pass runs apply's rollout on a
	// fresh copy (passOptions).
	apply *ApplyOptions
	// Interval is the sleep between two passes; Once does one pass.
	Interval time.Duration
	Once     bool
	// CorrectDrift applies a cluster whose objects drifted, taking the
	// drifted fields back; without it drift is only reported.
	CorrectDrift bool
	// MetricsAddr, when set, serves /metrics and /healthz there.
	MetricsAddr string
	// LogFormat is text or json.
	LogFormat string
	// Shard is this replica's share of the selected clusters (--shard
	// I/N); the zero Shard owns them all.
	Shard     fleet.Shard
	shardFlag string
	// hostname is the host's name, for --shard ordinal/N (tests set it).
	hostname func() string

	metrics *metrics.Reconcile
	health  *metrics.Health
}

// NewCmdReconcile returns the reconcile command.
func NewCmdReconcile(g *GlobalOptions) *cobra.Command {
	cmd, _ := newCmdReconcile(g)
	return cmd
}

func newCmdReconcile(g *GlobalOptions) (*cobra.Command, *ReconcileOptions) {
	o := &ReconcileOptions{apply: &ApplyOptions{GlobalOptions: g}, hostname: fleet.Hostname}
	a := o.apply
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Keep the selected clusters applied: re-render, apply what changed or drifted, sleep, again",
		Long: `A long-running apply. Each pass renders again (re-reading the fleet file and
the sources), then looks at every selected cluster:

  - an app whose render digest differs from its current revision's (or that
    was never applied) makes the cluster "changed";
  - for the other apps, objects that drifted from the render (a dry-run apply
    would change them, or they are missing) are found as status finds them.

The changed clusters, and with --correct-drift the drifted ones, are applied
exactly as "kubectl fleet apply" would apply them: group by group, with the
groups' maxParallel and maxFailures, gates (tests, checks, soak), locks,
revisions and --atomic. A cluster checked as unchanged is skipped. A drifted
app applied for --correct-drift takes back the fields others changed
(server-side apply with force on that app), and so does a changed app
applied before, whose drift was not looked for. Without --correct-drift, drift is
only reported (log lines, and the kubectl_fleet_reconcile_drifted_objects
metric). A cluster that could not be checked is applied: apply says what is
wrong with it, and its failure counts against its group's maxFailures.

reconcile never asks: a selection that includes a protected group needs
--yes, or every pass is refused.

After a pass it sleeps --interval; --once does one pass and exits (for a
CronJob). SIGTERM or Ctrl-C during a pass lets the pass finish, then exits 0
(--once: the pass's exit code); during the sleep it exits 0 at once; a
second signal exits 130 at once. A failed pass is logged and counted in the
metrics, and the next pass comes after --interval.

--shard I/N splits the selected clusters between N replicas (a StatefulSet's
pods: --shard ordinal/N): each checks and applies only its share, chosen by
rendezvous hashing of the cluster names, so going from N to N+1 replicas
moves about 1/(N+1) of the clusters. Every replica still renders the whole
selection (a render error stops every replica), and a later group waits for
the earlier groups' verified releases whichever replica applied them: each
reads them from the clusters.

--metrics-addr serves Prometheus metrics on /metrics, and /healthz: 200 while
the loop runs, 503 once it stops or after 3 passes in a row failed before
reaching any cluster (fleet file, render, protected group without --yes).
--log-format json prints one JSON object per line (time, level, msg, and
the fields of apply's -o json events) for log collectors.

Exit codes (--once; the loop exits 0 when signalled):
  0    the pass went through (nothing to do counts)
  1    a cluster failed or was not started, or an error
  3    done, except for clusters --skip-unreachable skipped
  130  a second signal`,
		Example: `  kubectl fleet reconcile --interval 5m --metrics-addr :8080 --log-format json --yes
  kubectl fleet reconcile --once --correct-drift -g staging
  kubectl fleet reconcile --interval 1m -k overlays --name web
  kubectl fleet reconcile --interval 5m --yes --shard ordinal/3   # in a StatefulSet of 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(cmd); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	a.SelectOptions.addFlags(cmd, g)
	a.SourceOptions.addFlags(cmd, g)
	cmd.Flags().BoolVarP(&a.Yes, "yes", "y", false, "write to protected groups (reconcile never asks)")
	cmd.Flags().IntVar(&a.Parallel, "parallel", 10, "clusters checked and applied at once at most (a group's maxParallel may lower it)")
	g.addSkipUnreachableFlag(cmd)
	a.addRolloutFlags(cmd)
	a.addApplyFlags(cmd)
	cmd.Flags().DurationVar(&o.Interval, "interval", 5*time.Minute, "time between the end of a pass and the start of the next")
	cmd.Flags().BoolVar(&o.Once, "once", false, "do one pass and exit with its result (for a CronJob)")
	cmd.Flags().BoolVar(&o.CorrectDrift, "correct-drift", false, "apply clusters whose objects drifted, taking the drifted fields back; without it drift is only reported")
	cmd.Flags().StringVar(&o.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on /metrics and a health check on /healthz at this address, e.g. :8080")
	cmd.Flags().StringVar(&o.LogFormat, "log-format", "text", "text (lines prefixed with the cluster) or json (one JSON object per line: time, level, msg, ...)")
	cmd.Flags().StringVar(&o.shardFlag, "shard", "", "I/N: check and apply only this replica's share of the selected clusters, the I-th of N (I from 0), by consistent hashing of the cluster names; ordinal/N takes I from a StatefulSet pod's name (default: $"+ShardEnv+")")
	return cmd, o
}

// Validate checks the flags.
func (o *ReconcileOptions) Validate(cmd *cobra.Command) error {
	a := o.apply
	a.DryRun = "none"
	switch {
	case o.Once && cmd.Flags().Changed("interval"):
		return fmt.Errorf("--once does one pass; it does not go with --interval")
	case o.Interval <= 0:
		return fmt.Errorf("--interval must be positive")
	case o.LogFormat != "text" && o.LogFormat != "json":
		return fmt.Errorf("--log-format %q: want text or json", o.LogFormat)
	}
	if o.shardFlag == "" {
		o.shardFlag = os.Getenv(ShardEnv)
	}
	if o.shardFlag != "" {
		s, err := fleet.ParseShard(o.shardFlag, o.hostname())
		if err != nil {
			return fmt.Errorf("--shard: %w", err)
		}
		o.Shard = s
	}
	if o.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.MetricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr %q: want host:port or :port: %w", o.MetricsAddr, err)
		}
	}
	if _, adhoc := a.Adhoc(); adhoc && a.Manifests == "-" {
		return fmt.Errorf("-f - reads standard input once; reconcile renders again every pass: give a file or folder")
	}
	return a.Validate()
}

// passOptions is a fresh ApplyOptions for one pass with every flag given
// (ApplyFlags, copied whole): locks, revision sources, --atomic's state
// and the report's collector do not outlive a pass.
func (o *ReconcileOptions) passOptions() *ApplyOptions {
	t := o.apply
	a := &ApplyOptions{GlobalOptions: t.GlobalOptions, SelectOptions: t.SelectOptions, SourceOptions: t.SourceOptions, WriteOptions: t.WriteOptions, ApplyFlags: t.ApplyFlags}
	_ = a.runState() // validated once, by Validate
	a.SourceOptions.withTests = !a.SkipTests && !a.SkipGates
	if o.LogFormat == "json" {
		a.Output = "json"
	}
	return a
}

// Run reconciles until ctx is done (a signal), or once.
func (o *ReconcileOptions) Run(ctx context.Context) error {
	g := o.apply.GlobalOptions
	if o.LogFormat == "json" {
		// Everything, ours, apply's and client-go's, one JSON object per
		// line on standard output.
		out := reconcile.NewJSONLog(g.Out, time.Now)
		g.Out, g.ErrOut = out, out
		logging.SetupJSON(g.LogLevel, out)
	}
	o.health, o.metrics = &metrics.Health{}, metrics.NewReconcile()
	s := reconcile.Service{Interval: o.Interval, Once: o.Once, MetricsAddr: o.MetricsAddr, Metrics: o.metrics, Health: o.health, Log: o.log()}
	return s.Run(ctx, o.pass)
}

// log is where the loop says its own lines: standard error, or with
// --log-format json standard output (Run makes both the JSON log).
func (o *ReconcileOptions) log() reconcile.Log {
	return reconcile.Log{W: o.apply.ErrOut, JSON: o.LogFormat == "json"}
}

// pass does one pass (reconcile.Pass) with apply's render and rollout,
// on fresh clients and kubeconfigFrom files: credentials rotate,
// kubeconfig files are replaced, and the temporary files go at the end of
// the pass, not after the sleep.
func (o *ReconcileOptions) pass(ctx context.Context, n int) error {
	g := o.apply.GlobalOptions
	g.clusters().Reset()
	defer g.sources.Refresh()
	a := o.passOptions()
	return reconcile.Pass{
		Config: reconcile.Config{CorrectDrift: o.CorrectDrift, RerunGates: !a.SkipGates && !a.SkipTests, Parallel: a.Parallel, Concurrency: a.Concurrency,
			Delivered: func(f *fleet.Fleet, c *fleet.Cluster) (reconcile.StateReader, error) { return registry.Of(f).State(c) }},
		Shard:   o.Shard,
		Yes:     a.Yes,
		Clients: connector{g},
		Metrics: o.metrics,
		Healthy: o.health.Passed,
		Ended:   o.metrics.Pass,
		Log:     o.log(),
		Render: func(ctx context.Context) (rendered.Config, *rendered.Set, error) {
			cfg, err := a.renderConfig(a.Selection, &a.SourceOptions, true)
			if err != nil {
				return cfg, nil, err
			}
			// The pass checks every cluster, --parallel at once, and
			// applies those that changed: a cluster's render is let go
			// until it is read, and made again then, but for those the
			// promotion rule reads whole. Rendered whole, 1,000
			// clusters' renders were most of a pass's heap.
			cfg.Shed = func(cs []*fleet.Cluster) map[string]bool { return rollout.Unread(cfg.Fleet, cs, a.Parallel) }
			r, err := rendered.Render(ctx, cfg)
			return cfg, r, err // Promoted renders upstream clusters whole (no Shed)
		},
		Printer: func(clusters []*fleet.Cluster) (rollout.Sink, func()) {
			p := a.newPrinter(clusters, a.Output == "json")
			return func(ev rollout.Event) { p.Emit(ev) }, p.Close
		},
		Options: a.options(a.dryRun(), a.Parallel),
		Apply: func(ctx context.Context, sub *rendered.Set, opts rollout.Options) ([]runner.Outcome, func(string) map[string]int, error) {
			outcomes, tally, err := runRollout(ctx, g, &a.ReportOptions, rolloutRun{Engine: a.newEngine(g), Set: sub, Options: opts, Verb: "apply", JSON: a.Output == "json", OnChange: o.metrics.Applied})
			return outcomes, tally.Revisions, err
		},
	}.Run(ctx, n)
}
