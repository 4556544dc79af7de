package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/metrics"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
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
	// ready, when set, is told the metrics server's address (tests).
	ready func(addr string)
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
(server-side apply with force on that app). Without --correct-drift, drift is
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
		out := newJSONLog(g.Out, time.Now)
		g.Out, g.ErrOut = out, out
		setupJSONLogging(g.LogLevel, out)
	}
	o.health = &metrics.Health{}
	o.metrics = metrics.NewReconcile()
	if o.MetricsAddr != "" {
		stop, err := o.serve(o.MetricsAddr)
		if err != nil {
			return err
		}
		defer stop()
	}
	defer o.health.Stop()
	for n := 1; ; n++ {
		// The pass in flight is not cancelled by a signal: it finishes.
		passDone := make(chan struct{})
		go func() {
			select {
			case <-ctx.Done():
				o.say(fmt.Sprintf("signalled: pass %d finishes, then reconcile exits (a second signal exits at once)", n))
			case <-passDone:
			}
		}()
		err := o.pass(context.WithoutCancel(ctx), n)
		close(passDone)
		if o.Once {
			var exit *ExitError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &exit):
				return &ExitError{Code: exit.Code}
			}
			return &ExitError{Code: ExitFailed}
		}
		select {
		case <-ctx.Done():
			o.say("stopping: signalled")
			return nil
		case <-time.After(o.Interval):
		}
	}
}

// say prints one line of the loop's own (not a cluster's).
func (o *ReconcileOptions) say(msg string) {
	g := o.apply.GlobalOptions
	if o.LogFormat == "json" {
		writeEvent(g.Out, LoopEvent{Type: "reconcile", Msg: msg})
		return
	}
	fmt.Fprintln(g.ErrOut, msg)
}

// LoopEvent is the JSON form of a line the loop says.
type LoopEvent struct {
	Type string `json:"type"`
	Msg  string `json:"msg"`
	Addr string `json:"addr,omitempty"`
}

// ReconcileEvent is the JSON form of what a pass found on one cluster (and
// app): decision "unchanged", "changed", "drifted" or "error", and what it
// does about it.
type ReconcileEvent struct {
	Type     string `json:"type"`
	Msg      string `json:"msg"`
	Pass     int    `json:"pass"`
	Cluster  string `json:"cluster"`
	App      string `json:"app,omitempty"`
	Decision string `json:"decision"`
	// Apply says whether the cluster is applied in this pass.
	Apply    bool     `json:"apply"`
	Revision int      `json:"revision,omitempty"`
	Drifted  []string `json:"drifted,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// PassEvent is the JSON form of a pass's end.
type PassEvent struct {
	Type      string   `json:"type"`
	Msg       string   `json:"msg"`
	Pass      int      `json:"pass"`
	Result    string   `json:"result"`
	Seconds   float64  `json:"seconds"`
	Applied   []string `json:"applied,omitempty"`
	Unchanged []string `json:"unchanged,omitempty"`
	Drifted   []string `json:"drifted,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// pass does one pass: render, check each cluster, apply those that need
// it through apply's rollout.
func (o *ReconcileOptions) pass(ctx context.Context, n int) error {
	start := time.Now()
	g := o.apply.GlobalOptions
	// Fresh clients and kubeconfigFrom every pass: credentials rotate,
	// kubeconfig files are replaced. kubeconfigFrom's temporary files go
	// at the end of the pass, not after the sleep.
	g.clients.Reset()
	g.verified.Reset()
	defer g.sources.Refresh()
	a := o.passOptions()
	started := fmt.Sprintf("pass %d started at %s", n, start.UTC().Format(time.RFC3339))
	if o.Shard.Sharded() {
		started += fmt.Sprintf(" (shard %s)", o.Shard)
	}
	o.say(started)
	r, err := a.render(ctx, a.Selection, &a.SourceOptions, true)
	if err == nil {
		err = refuseProtected(r, a.Yes)
	}
	o.health.Passed(err == nil)
	if err != nil {
		return o.end(n, start, PassEvent{}, err)
	}
	// A replica checks and applies its shard's clusters; the promotion
	// rule below still sees them all, reading the other shards' release
	// state from the clusters themselves.
	ev, toApply, drifting := o.decideAll(ctx, n, a, o.mine(r))
	if len(toApply) == 0 {
		return o.end(n, start, ev, nil)
	}
	// The promotion rule sees every selected cluster, those this pass
	// skips too: a later group waits for what they have verified.
	if err := a.promote(ctx, r); err != nil {
		return o.end(n, start, ev, err)
	}
	sub := r.Only(toApply)
	a.forceApp = func(cluster, app string) bool { return drifting[cluster+"/"+app] }
	a.onChange = o.metrics.Applied
	err = a.rollout(ctx, sub, "apply")
	now := time.Now()
	for _, oc := range a.outcomes {
		ok := oc.State == runner.Succeeded
		revs := a.tally.Revisions(oc.Cluster)
		for _, res := range sub.Of(oc.Cluster) {
			o.metrics.App(oc.Cluster, res.App, now, ok, revs[res.App])
			if ok {
				o.metrics.Drift(oc.Cluster, res.App, 0)
			}
		}
	}
	return o.end(n, start, ev, err)
}

// end says how pass n, started at start, ended, counts it in the metrics
// and returns err.
func (o *ReconcileOptions) end(n int, start time.Time, ev PassEvent, err error) error {
	g := o.apply.GlobalOptions
	ev.Type, ev.Pass, ev.Seconds = "pass", n, time.Since(start).Seconds()
	ev.Result, ev.Error = "succeeded", errString(err)
	if err != nil {
		ev.Result = "failed"
	}
	ev.Msg = fmt.Sprintf("pass %d %s in %s", n, ev.Result, time.Since(start).Round(time.Millisecond))
	o.metrics.Pass(time.Since(start), err == nil)
	if o.LogFormat == "json" {
		writeEvent(g.Out, ev)
		return err
	}
	line := ev.Msg
	for _, part := range []struct {
		what  string
		names []string
	}{{"rolled out to", ev.Applied}, {"unchanged", ev.Unchanged}, {"drifted, not corrected", ev.Drifted}} {
		if len(part.names) > 0 {
			line += fmt.Sprintf("; %s: %s", part.what, strings.Join(part.names, ", "))
		}
	}
	if err != nil {
		line += ": " + strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	fmt.Fprintln(g.ErrOut, line)
	return err
}

// decideAll checks every selected cluster, says what the pass does with
// each, and returns the pass's lists, the clusters to apply, and the
// cluster/app pairs to apply with force (--correct-drift).
func (o *ReconcileOptions) decideAll(ctx context.Context, n int, a *ApplyOptions, r *rendered.Set) (ev PassEvent, toApply, drifting map[string]bool) {
	checks := o.checkAll(ctx, a, r)
	p := a.newPrinter(r.Clusters, a.Output == "json")
	defer p.close()
	toApply, drifting = map[string]bool{}, map[string]bool{}
	now := time.Now()
	for _, c := range checks {
		decision, doApply := c.Decide(o.CorrectDrift, !a.SkipGates && !a.SkipTests)
		o.report(p, n, c, decision, doApply)
		switch {
		case doApply:
			toApply[c.Cluster] = true
			ev.Applied = append(ev.Applied, c.Cluster)
		case decision == rollout.DecDrifted:
			ev.Drifted = append(ev.Drifted, c.Cluster)
		default:
			ev.Unchanged = append(ev.Unchanged, c.Cluster)
		}
		for _, ac := range c.Apps {
			if len(ac.Drifted) > 0 && doApply && o.CorrectDrift {
				drifting[c.Cluster+"/"+ac.App] = true
			}
			if ac.Err == nil && !ac.Changed() {
				o.metrics.Drift(c.Cluster, ac.App, len(ac.Drifted))
			}
			if !doApply {
				// Checked, nothing to do: the app is as rendered, or
				// its drift is reported.
				o.metrics.App(c.Cluster, ac.App, now, true, ac.Revision)
			}
		}
	}
	o.metrics.KeepOnly(r.Results)
	return ev, toApply, drifting
}

// mine is the part of r that this replica's shard owns.
func (o *ReconcileOptions) mine(r *rendered.Set) *rendered.Set {
	if !o.Shard.Sharded() {
		return r
	}
	owned := map[string]bool{}
	for _, c := range r.Clusters {
		if o.Shard.Owns(c.Name) {
			owned[c.Name] = true
		}
	}
	return r.Only(owned)
}

// refuseProtected refuses a pass whose selection includes a protected
// group, unless --yes: reconcile has no terminal to ask on.
func refuseProtected(r *rendered.Set, yes bool) error {
	if yes {
		return nil
	}
	for _, w := range waves(r.Fleet, r.Clusters) {
		if g := r.Fleet.Group(w.Name); g != nil && g.Protected {
			return fmt.Errorf("group %s is protected (%s) and reconcile never asks: pass --yes to let it write there, or select other groups (-g)", w.Name, strings.Join(w.Clusters, ", "))
		}
	}
	return nil
}

// checkAll checks every selected cluster, --parallel at once.
func (o *ReconcileOptions) checkAll(ctx context.Context, a *ApplyOptions, r *rendered.Set) []rollout.ClusterCheck {
	names, byName := index(r.Clusters)
	checks := make([]rollout.ClusterCheck, len(names))
	var mu sync.Mutex
	runner.Run(ctx, everyCluster(names), a.Parallel, func(ctx context.Context, name string) error {
		c := rollout.ClusterCheck{Cluster: name}
		client, err := a.connect(ctx, r.Fleet, byName[name])
		if err != nil {
			c.Err = err
		} else {
			c = rollout.Check(ctx, name, rollout.KubeState{Client: client, Ignore: r.Fleet.IgnoreRules, Concurrency: a.Concurrency}, r.Of(name))
			a.idle(name)
		}
		mu.Lock()
		checks[slices.Index(names, name)] = c
		mu.Unlock()
		return nil
	})
	return checks
}

// report prints what a pass found on a cluster and what it does about it.
func (o *ReconcileOptions) report(p *printer, n int, c rollout.ClusterCheck, decision string, doApply bool) {
	w := p.cluster(c.Cluster)
	say := func(ev ReconcileEvent, line string) {
		ev.Type, ev.Pass, ev.Cluster, ev.Decision, ev.Apply = "reconcile", n, c.Cluster, decision, doApply
		if p.json {
			ev.Msg = line
			p.event(ev)
			return
		}
		fmt.Fprintln(w, line)
	}
	if c.Err != nil {
		say(ReconcileEvent{Error: c.Err.Error()}, "cannot be checked, applying: "+c.Err.Error())
		return
	}
	var current []string
	for _, ac := range c.Apps {
		ev := ReconcileEvent{App: ac.App, Revision: ac.Revision, Drifted: ac.Drifted}
		switch {
		case ac.Err != nil:
			ev.Error = ac.Err.Error()
			say(ev, fmt.Sprintf("%s: cannot be checked: %v", ac.App, ac.Err))
		case !ac.Exists:
			say(ev, fmt.Sprintf("%s: never applied", ac.App))
		case ac.Revision == 0:
			say(ev, fmt.Sprintf("%s: no revision recorded", ac.App))
		case ac.Changed():
			say(ev, fmt.Sprintf("%s: render changed (%s, current revision %d is %s)", ac.App, revision.ShortDigest(ac.Render), ac.Revision, revision.ShortDigest(ac.Current)))
		case ac.Unverified() && decision == rollout.DecUnverified:
			say(ev, fmt.Sprintf("%s: r%d %s; running its gates again", ac.App, ac.Revision, ac.Verification))
		case len(ac.Drifted) > 0:
			what := "not corrected (--correct-drift corrects it)"
			if o.CorrectDrift {
				what = "correcting"
			}
			for _, d := range ac.Drifted {
				say(ReconcileEvent{App: ac.App, Revision: ac.Revision, Drifted: []string{d}}, fmt.Sprintf("%s: %s drifted: %s", ac.App, d, what))
			}
		default:
			current = append(current, fmt.Sprintf("%s r%d", ac.App, ac.Revision))
		}
	}
	switch {
	case doApply:
		say(ReconcileEvent{}, "applying")
	case decision == rollout.DecDrifted:
		say(ReconcileEvent{}, "drifted, not applied")
	default:
		say(ReconcileEvent{}, fmt.Sprintf("unchanged, skipped (%s)", strings.Join(current, ", ")))
	}
}

// writeEvent writes v as one JSON line.
func writeEvent(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	_, _ = w.Write(append(b, '\n'))
}
