package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output/progress"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// DeleteOptions are the options of "kubectl fleet delete".
type DeleteOptions struct {
	*GlobalOptions
	SelectOptions
	SourceOptions
	WriteOptions
	// locks are --lock-duration and --lock-timeout, and the locks taken.
	locks rollout.Locks
}

// NewCmdDelete returns the delete command.
func NewCmdDelete(g *GlobalOptions) *cobra.Command {
	o := &DeleteOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete apps from the selected clusters",
		Long: `Delete every object of the selected apps (the fleet file's, or the ad hoc
source's by --name or base name) from each selected cluster: exactly the
members of the app's ApplySet, in reverse dependency order (Namespaces and
CRDs last), then the set's parent. Nothing is rendered, and nothing outside
the set is touched. Clusters go group by group as apply does, each group's
maxParallel and maxFailures applying, identity pins verified first.

It asks once for confirmation on a terminal; --yes skips the question, and
without a terminal --yes is required.

Exit codes:
  0  deleted everywhere (or nothing to delete)
  1  a cluster failed or was not started, or an error`,
		Example: `  kubectl fleet delete --app web --group staging
  kubectl fleet delete -k overlays --yes
  kubectl fleet delete --dry-run=server`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.WriteOptions.validate(); err != nil {
				return err
			}
			if err := o.SourceOptions.validate(); err != nil {
				return err
			}
			if err := validateLocks(&o.locks); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.SourceOptions.addFlags(cmd, g)
	o.WriteOptions.addFlags(cmd, "delete", "do not ask for confirmation", "clusters worked on at once at most")
	g.addSkipUnreachableFlag(cmd)
	addLockFlags(cmd, &o.locks.Duration, &o.locks.Timeout)
	return cmd
}

// Run deletes.
func (o *DeleteOptions) Run(ctx context.Context) error {
	f, clusters, err := o.selected(o.Selection)
	if err != nil {
		return err
	}
	apps, err := o.SourceOptions.Resolve(f, clusters, o.namespace())
	if err != nil {
		return err
	}
	if err := checkContexts(ctx, o.GlobalOptions, f, clusters); err != nil {
		return err
	}
	dryRun := o.dryRun()
	if !dryRun && !o.Yes {
		if err := o.confirm(ctx, apps, clusters); err != nil {
			return err
		}
	}
	p := o.newPrinter(clusters, o.Output == "json")
	pr := o.newProgress(clusters, p.json)
	p.out = output.NewSyncWriter(pr.Writer(o.Out))
	_, byName := index(clusters)
	var tally summary.Tally
	defer o.locks.Release(ctx, o.ErrOut)
	// The engine's waves, without a promotion rule: deleting waits for
	// no verification.
	del := o.explained(func(ctx context.Context, name string) error {
		return o.deleteCluster(ctx, f, byName[name], apps, p, pr, &tally, dryRun)
	})
	outcomes := rollout.Run(ctx, rollout.Schedule{Waves: waves(f, clusters), Parallel: o.Parallel}, func(ctx context.Context, name string) error {
		err := del(ctx, name)
		pr.End(name, err)
		return err
	})
	pr.Finish()
	return finishRollout(ctx, p, outcomes, &tally, byName, dryRun, "delete")
}

func (o *DeleteOptions) deleteCluster(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster, apps []rendered.App, p *printer, pr *progress.Display, tally *summary.Tally, dryRun bool) error {
	name := c.Name
	pr.Stage(name, "connecting")
	client, err := o.connect(ctx, f, c)
	if err != nil {
		return err
	}
	w := p.cluster(name)
	ctx, lost, stopped, done := rollout.StopOnLostLock(ctx)
	defer done()
	var errs []error
	// Dependents go before what they depend on.
	for _, a := range reverseDependencyOrder(f, apps) {
		if !a.GoesTo(c) {
			continue
		}
		if !dryRun {
			if err := acquire(ctx, &o.locks, client, name, a.Name, p, true, true, lost); err != nil {
				errs = append(errs, fmt.Errorf("app %s: %w", a.Name, err))
				continue
			}
		}
		pr.Stage(name, "deleting %s", a.Name)
		found, err := apply.Delete(ctx, client, f.Metadata.Name, a.Name, dryRun, consumers{p: p, tally: tally, pr: pr}.objects(name, a.Name, a.Name, dryRun))
		if err != nil {
			errs = append(errs, fmt.Errorf("app %s: %w", a.Name, err))
		} else if !found && !p.json {
			fmt.Fprintf(w, "%s: nothing to delete (never applied here)\n", a.Name)
		}
	}
	if err := stopped(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

func (o *DeleteOptions) confirm(ctx context.Context, apps []rendered.App, clusters []*fleet.Cluster) error {
	names, _ := index(clusters)
	appNames := make([]string, len(apps))
	for i, a := range apps {
		appNames[i] = a.Name
	}
	what := fmt.Sprintf("app %s from %s", strings.Join(appNames, ", "), strings.Join(names, ", "))
	if !o.stdinIsTerminal() {
		return fmt.Errorf("delete %s: pass --yes to delete without a terminal to confirm on", what)
	}
	return ask(ctx, o.ErrOut, bufio.NewReader(o.In), "Delete "+what+"?")
}

// reverseDependencyOrder orders apps so that each comes before the apps it
// depends on: the order to delete them in.
func reverseDependencyOrder(f *fleet.Fleet, apps []rendered.App) []rendered.App {
	names := make([]string, len(apps))
	byName := map[string]rendered.App{}
	for i, a := range apps {
		names[i] = a.Name
		byName[a.Name] = a
	}
	order := f.DependencyOrder(names)
	slices.Reverse(order)
	out := make([]rendered.App, len(order))
	for i, n := range order {
		out[i] = byName[n]
	}
	return out
}
