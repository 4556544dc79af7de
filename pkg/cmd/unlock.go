package cmd

import (
	"bufio"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/lock"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// UnlockOptions are the options of "kubectl fleet unlock".
type UnlockOptions struct {
	*GlobalOptions
	SelectOptions
	// Apps are --app: the apps whose locks to remove.
	Apps     []string
	Yes      bool
	Parallel int
}

// NewCmdUnlock returns the unlock command.
func NewCmdUnlock(g *GlobalOptions) *cobra.Command {
	o := &UnlockOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "unlock",
		Short: "Remove an app's stale lock from the selected clusters",
		Long: `apply, rollback and delete lock each app on each cluster they write to (a
Lease fleet-<app> in the namespace kubectl-fleet), renew the lock while they
work and remove it when they end; a run that dies leaves it to expire on its
own (--lock-duration, default 60s). Meanwhile, another run fails that app on
that cluster with "locked by USER@HOST (pid N) since TIME".

unlock shows the lock of each selected cluster (who holds it, since when,
whether it has expired), asks for confirmation on a terminal, and removes
it: only the lock shown, not one renewed or taken since. --yes skips the
question, and without a terminal --yes is required. Removing the lock of a
run that is still working lets another run write the app at the same time.

Exit codes:
  0    every selected cluster unlocked (or not locked)
  1    a cluster could not be read or unlocked, not confirmed, or an error
  130  interrupted (Ctrl-C)`,
		Example: `  kubectl fleet unlock --app web
  kubectl fleet unlock --app web --group production --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	cmd.Flags().StringSliceVar(&o.Apps, "app", nil, "the app whose lock to remove (repeatable; required)")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().IntVar(&o.Parallel, "parallel", 10, "clusters worked on at once at most")
	return cmd
}

// Validate checks the flags.
func (o *UnlockOptions) Validate() error {
	if len(o.Apps) == 0 {
		return fmt.Errorf("--app is required: the app whose lock to remove")
	}
	for _, a := range o.Apps {
		if err := validateAppName(a); err != nil {
			return fmt.Errorf("--app: %w", err)
		}
	}
	if o.Parallel < 1 {
		return fmt.Errorf("--parallel must be at least 1")
	}
	return nil
}

// Run shows the locks, asks, and removes them.
func (o *UnlockOptions) Run(ctx context.Context) error {
	f, clusters, err := o.selected(o.Selection)
	if err != nil {
		return err
	}
	if err := checkContexts(ctx, o.GlobalOptions, f, clusters); err != nil {
		return err
	}
	p := o.newPrinter(clusters, false)
	found, read := o.readLocks(ctx, f, clusters, p)
	if err := o.confirmUnlock(ctx, p, read, found); err != nil {
		return err
	}
	states, outcomes := o.removeLocks(ctx, f, clusters, read, found)
	p.close()
	fmt.Fprintln(p.out, "Summary:")
	failed := 0
	for _, oc := range outcomes {
		line := states[oc.Cluster]
		switch {
		case oc.Err != nil:
			failed++
			line = "failed: " + oc.Err.Error()
			if states[oc.Cluster] != "" {
				line = states[oc.Cluster] + "; " + line
			}
		case oc.State == runner.NotStarted:
			failed++
			line = "not started"
		}
		fmt.Fprintf(p.out, "%s%s\n", p.prefix.Prefix(oc.Cluster), line)
	}
	switch {
	case ctx.Err() != nil:
		return &ExitError{Code: ExitInterrupted}
	case failed > 0:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d of %d clusters not unlocked", failed, len(outcomes))}
	}
	return nil
}

// readLocks reads the apps' locks on every cluster and says who holds
// them: the locks found, by cluster and app, and each cluster's outcome.
func (o *UnlockOptions) readLocks(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster, p *printer) (map[string]map[string]*lock.Info, []runner.Outcome) {
	names, byName := index(clusters)
	var (
		mu    sync.Mutex
		found = map[string]map[string]*lock.Info{} // by cluster, app
	)
	now := time.Now()
	read := runner.Run(ctx, runner.Every(names), o.Parallel, func(ctx context.Context, name string) error {
		client, err := o.connect(ctx, f, byName[name])
		if err != nil {
			return err
		}
		w := p.cluster(name)
		for _, app := range o.Apps {
			info, err := lock.Get(ctx, client, app)
			if err != nil {
				return err
			}
			if info == nil {
				continue
			}
			fmt.Fprintf(w, "%s: %s\n", app, info.Describe(now))
			mu.Lock()
			if found[name] == nil {
				found[name] = map[string]*lock.Info{}
			}
			found[name][app] = info
			mu.Unlock()
		}
		return nil
	})
	return found, read
}

// confirmUnlock asks before removing the locks found, unless --yes.
func (o *UnlockOptions) confirmUnlock(ctx context.Context, p *printer, read []runner.Outcome, found map[string]map[string]*lock.Info) error {
	var locked []string
	for _, oc := range read {
		for app := range found[oc.Cluster] {
			locked = append(locked, app+" on "+oc.Cluster)
		}
	}
	sort.Strings(locked)
	if len(locked) == 0 || ctx.Err() != nil || o.Yes {
		return nil
	}
	what := "the lock of " + strings.Join(locked, ", ")
	p.close()
	if !o.stdinIsTerminal() {
		return fmt.Errorf("remove %s: pass --yes to remove locks without a terminal to confirm on", what)
	}
	return ask(ctx, o.ErrOut, bufio.NewReader(o.In), "Remove "+what+"?")
}

// removeLocks removes the locks found (only if they are still the ones
// read) and returns what each cluster's became, and its outcome.
func (o *UnlockOptions) removeLocks(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster, read []runner.Outcome, found map[string]map[string]*lock.Info) (map[string]string, []runner.Outcome) {
	names, byName := index(clusters)
	states := map[string]string{}
	var mu sync.Mutex
	outcomes := runner.Run(ctx, runner.Every(names), o.Parallel, func(ctx context.Context, name string) error {
		for _, oc := range read {
			if oc.Cluster == name && oc.Err != nil {
				return oc.Err
			}
		}
		var parts, errs []string
		for _, app := range o.Apps {
			info := found[name][app]
			state := "not locked"
			if info != nil {
				client, err := o.connect(ctx, f, byName[name])
				if err != nil {
					return err
				}
				removed, err := lock.Remove(ctx, client, app, info)
				switch {
				case err != nil:
					errs = append(errs, app+": "+err.Error())
					continue
				case removed:
					state = "unlocked"
				}
			}
			if len(o.Apps) > 1 {
				state = app + " " + state
			}
			parts = append(parts, state)
		}
		mu.Lock()
		states[name] = strings.Join(parts, ", ")
		mu.Unlock()
		if len(errs) > 0 {
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	})
	return states, outcomes
}
