package cmd

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollback"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// HistoryOptions are the options of "kubectl fleet history".
type HistoryOptions struct {
	*GlobalOptions
	SelectOptions
	// Apps are --app; none: every app with revisions on each cluster.
	Apps     []string
	Output   string
	Parallel int
}

// NewCmdHistory returns the history command.
func NewCmdHistory(g *GlobalOptions) *cobra.Command {
	o := &HistoryOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List the revisions of apps on the selected clusters",
		Long: `List, per cluster and app, the revisions kept in the cluster: every apply
that changed the render recorded one (number, time, who applied it as the
cluster authenticated them, the source's git commit with -dirty when it had
changes not committed, how many objects, the render's digest, and what made
it: apply, or rollback to N). The current revision is marked.

Revisions live in the cluster, as Secrets of type fleet.kubectl.io/revision
in the kubectl-fleet namespace; apply --history-limit bounds them.

Exit codes:
  0  every selected cluster answered
  1  a cluster could not be read, or an error`,
		Example: `  kubectl fleet history
  kubectl fleet history --app web --group production
  kubectl fleet history -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseSet(cmd, "does not apply to history, which lists revisions, not objects", "namespace"); err != nil {
				return err
			}
			if o.Output != "" && o.Output != "json" && o.Output != "yaml" {
				return fmt.Errorf("--output %q: want json or yaml", o.Output)
			}
			for _, a := range o.Apps {
				if err := validateAppName(a); err != nil {
					return fmt.Errorf("--app: %w", err)
				}
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	cmd.Flags().StringSliceVar(&o.Apps, "app", nil, "only this app (repeatable)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json (JSON Lines: one object per revision and line) or yaml (a list)")
	cmd.Flags().IntVar(&o.Parallel, "parallel", 10, "clusters queried at once")
	return cmd
}

// HistoryEntry is the JSON and YAML form of one revision of an app on a
// cluster.
type HistoryEntry struct {
	Type    string `json:"type"`
	Cluster string `json:"cluster"`
	Group   string `json:"group"`
	Current bool   `json:"current"`
	revision.Revision
}

// Run lists.
func (o *HistoryOptions) Run(ctx context.Context) error {
	f, clusters, err := o.selected(o.Selection)
	if err != nil {
		return err
	}
	if err := checkContexts(ctx, o.GlobalOptions, f, clusters); err != nil {
		return err
	}
	var (
		mu      sync.Mutex
		entries = map[string][]HistoryEntry{}
	)
	names, byName := index(clusters)
	outcomes := runner.Run(ctx, runner.Every(names), o.Parallel, func(ctx context.Context, name string) error {
		c := byName[name]
		client, err := o.connect(ctx, f, c)
		if err != nil {
			return err
		}
		sets, err := rollback.AppSets(ctx, client, f.Metadata.Name, o.Apps)
		if err != nil {
			return err
		}
		for _, set := range sets {
			list, err := revision.List(ctx, client, set.App)
			if err != nil {
				return err
			}
			mu.Lock()
			for _, r := range list {
				if set.Revision > 0 && r.Number > set.Revision {
					// Stored while its objects were applied, never named
					// current: whatever it carries, it is no release.
					r.Verification = revision.Verification{State: revision.Unverified, Reason: "its apply did not finish"}
				}
				entries[name] = append(entries[name], HistoryEntry{Type: "revision", Cluster: name, Group: c.Group, Current: r.Number == set.Revision, Revision: r})
			}
			mu.Unlock()
		}
		return nil
	})
	var all []HistoryEntry
	failed := false
	for _, oc := range outcomes {
		if oc.Err != nil {
			failed = true
			fmt.Fprintf(o.ErrOut, "error: %s: %v\n", oc.Cluster, oc.Err)
		}
		all = append(all, entries[oc.Cluster]...)
	}
	switch o.Output {
	case "json":
		p := o.newPrinter(clusters, true)
		for _, e := range all {
			p.Event(e)
		}
	case "yaml":
		b, err := yaml.Marshal(all)
		if err != nil {
			return err
		}
		if _, err := o.Out.Write(b); err != nil {
			return err
		}
	default:
		if err := o.printTable(all); err != nil {
			return err
		}
	}
	switch {
	case ctx.Err() != nil:
		return &ExitError{Code: ExitInterrupted}
	case failed:
		return &ExitError{Code: ExitFailed}
	}
	return nil
}

func (o *HistoryOptions) printTable(all []HistoryEntry) error {
	if len(all) == 0 {
		fmt.Fprintln(o.ErrOut, "No revisions found.")
		return nil
	}
	w := printers.GetNewTabWriter(o.Out)
	// A CHART column when a revision came from a Helm chart.
	charts := slices.ContainsFunc(all, func(e HistoryEntry) bool { return e.Chart != "" })
	chart := func(e HistoryEntry) string {
		if !charts {
			return ""
		}
		return dash(e.Chart) + "\t"
	}
	header := "CLUSTER\tAPP\tREVISION\tSTATE\tUPDATED\tBY\tSOURCE\tOBJECTS\tDIGEST\tDESCRIPTION"
	if charts {
		header = strings.Replace(header, "SOURCE\t", "SOURCE\tCHART\t", 1)
	}
	fmt.Fprintln(w, header)
	for _, e := range all {
		n := strconv.Itoa(e.Number)
		if e.Current {
			n += " (current)"
		}
		objects := strconv.Itoa(e.Objects)
		if e.NotStored != "" {
			objects += " (not stored)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\t%s\t%s\n", e.Cluster, e.App, n, e.Verification, e.Time.Local().Format(time.DateTime), dash(e.User), dash(e.Source.String()), chart(e), objects, revision.ShortDigest(e.Digest), e.Description)
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
