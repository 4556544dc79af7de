package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// ClusterInfo is one row of "kubectl fleet clusters", and its JSON form.
type ClusterInfo struct {
	// Type is "cluster" in -o json, as every JSON line says what it is.
	Type       string            `json:"type,omitempty"`
	Name       string            `json:"name"`
	Group      string            `json:"group"`
	Context    string            `json:"context"`
	Kubeconfig string            `json:"kubeconfig,omitempty"`
	Server     string            `json:"server"`
	Labels     map[string]string `json:"labels,omitempty"`
	Attributes map[string]any    `json:"attributes,omitempty"`
	PinServer  string            `json:"pinnedServer,omitempty"`
	PinUID     string            `json:"pinnedUID,omitempty"`
	// Check is what --check found.
	Check *kube.Probe `json:"check,omitempty"`

	// unread says the kubeconfig (a kubeconfigFrom) was not read.
	unread bool
}

// ClustersOptions are the options of "kubectl fleet clusters".
type ClustersOptions struct {
	*GlobalOptions
	SelectOptions
	Output   string
	Check    bool
	Pin      bool
	DryRun   bool
	Parallel int
}

// NewCmdClusters returns the clusters command.
func NewCmdClusters(g *GlobalOptions) *cobra.Command {
	o := &ClustersOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"ls"},
		Short:   "List the selected clusters with their group, context and server",
		Long: `List the selected clusters of the fleet file: group, kubeconfig context, the
API server the context points at, and labels. Nothing is sent to any cluster.

A context missing from its kubeconfig is listed as such and makes the
command exit 1. A kubeconfigFrom (a secret in an environment variable or
printed by a command) is only read by --check; the listing names it
instead of the server.

--check probes every selected cluster in parallel: reachable or not (and
why), server version, the cluster's identity (the kube-system namespace UID),
and whether the fleet file's server/uid pins match. Each request is bounded
by --request-timeout (10s when it is not set).

--check --pin records the server and uid of every selected cluster that
passed the check into the fleet file (comments and order kept; indentation
becomes two spaces) and prints the change as a diff; --dry-run only prints
it. A cluster that fails the check is not pinned: fix or remove its old pin
by hand.

Exit codes:
  0  every cluster listed (with --check: reachable and matching its pins)
  1  a context is missing, or (--check) a cluster is unreachable or mismatched`,
		Example: `  kubectl fleet clusters
  kubectl fleet ls --group production -o json
  kubectl fleet clusters -l region=eu
  kubectl fleet clusters --check`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := refuseSet(cmd, "does not apply to clusters, which lists clusters, not objects", "namespace"); err != nil {
				return err
			}
			if err := refuseSet(cmd, "does not apply to clusters, which caches no discovery", "cache-dir"); err != nil {
				return err
			}
			if !o.Check {
				if err := refuseSet(cmd, "only works with --check: without it no cluster is contacted", connectionFlags...); err != nil {
					return err
				}
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json (JSON Lines: one object per line; jq -s . makes one array) or yaml")
	cmd.Flags().BoolVar(&o.Check, "check", false, "probe each cluster: reachable, version, identity, pins")
	cmd.Flags().IntVar(&o.Parallel, "parallel", 10, "clusters probed at once by --check")
	cmd.Flags().BoolVar(&o.Pin, "pin", false, "with --check: record each cluster's server and uid in the fleet file")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "with --pin: print the change to the fleet file, do not write it")
	return cmd
}

// Validate checks the flags.
func (o *ClustersOptions) Validate() error {
	if o.Parallel < 1 {
		return fmt.Errorf("--parallel must be at least 1")
	}
	if o.Pin && !o.Check {
		return fmt.Errorf("--pin only works with --check")
	}
	if o.DryRun && !o.Pin {
		return fmt.Errorf("--dry-run only works with --pin")
	}
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q: want json or yaml", o.Output)
}

// Run lists the clusters.
func (o *ClustersOptions) Run(ctx context.Context) error {
	f, clusters, err := o.selected(o.Selection)
	if err != nil {
		return err
	}
	// Only --check reads kubeconfigFrom sources (runs their commands); a
	// listing names the source, and does not check its contexts.
	if o.Check {
		if err := o.resolveKubeconfigs(ctx, f, clusters); err != nil {
			return err
		}
	}
	kcs := &kube.Kubeconfigs{}
	infos := make([]ClusterInfo, len(clusters))
	var files []*fleet.Cluster
	for i, c := range clusters {
		infos[i] = ClusterInfo{Name: c.Name, Group: c.Group, Context: c.Context, Kubeconfig: kube.KubeconfigSource(o.ConfigFlags, f, c), Labels: c.Labels, Attributes: f.Attributes(c), PinServer: c.Server, PinUID: c.UID}
		if _, from := f.KubeconfigOf(c); from != nil && c.ResolvedKubeconfig == "" {
			infos[i].unread = true
			continue
		}
		files = append(files, c)
		if cfg, err := kcs.Load(kube.KubeconfigPath(o.ConfigFlags, f, c)); err == nil {
			infos[i].Server = kube.Server(cfg, c.Context)
		}
	}
	if o.Check {
		return o.check(ctx, f, clusters, kcs, infos)
	}
	if err := o.print(infos); err != nil {
		return err
	}
	return kube.CheckContexts(o.ConfigFlags, kcs, f, files)
}

// check probes the clusters; a missing context stops it before any request.
func (o *ClustersOptions) check(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster, kcs *kube.Kubeconfigs, infos []ClusterInfo) error {
	if err := kube.CheckContexts(o.ConfigFlags, kcs, f, clusters); err != nil {
		return err
	}
	failed := 0
	record := map[string]fleet.Pin{}
	for i, p := range kube.ProbeFleet(ctx, o.ConfigFlags, f, clusters, o.Parallel) {
		infos[i].Check = &p
		if !p.OK() {
			failed++
		} else {
			record[clusters[i].Name] = fleet.Pin{Server: p.Server, UID: p.UID}
		}
	}
	if err := o.print(infos); err != nil {
		return err
	}
	if o.Pin && len(record) > 0 {
		if err := o.writePins(f, record); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d clusters failed the check", failed, len(clusters))
	}
	return nil
}

func (o *ClustersOptions) print(infos []ClusterInfo) error {
	switch o.Output {
	case "json":
		enc := json.NewEncoder(o.Out)
		for _, info := range infos {
			info.Type = "cluster"
			if err := enc.Encode(info); err != nil {
				return err
			}
		}
		return nil
	case "yaml":
		b, err := yaml.Marshal(infos)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(b)
		return err
	}
	w := printers.GetNewTabWriter(o.Out)
	if o.Check {
		fmt.Fprintln(w, "NAME\tGROUP\tCONTEXT\tSERVER\tVERSION\tUID\tSTATUS")
		for _, c := range infos {
			status := "ok"
			if len(c.Check.Problems) > 0 {
				status = strings.Join(c.Check.Problems, "; ")
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Group, c.Context, c.Server, orNone(c.Check.Version), orNone(c.Check.UID), status)
		}
		return w.Flush()
	}
	fmt.Fprintln(w, "NAME\tGROUP\tCONTEXT\tSERVER\tLABELS")
	for _, c := range infos {
		server := c.Server
		switch {
		case c.unread:
			server = "<kubeconfigFrom " + c.Kubeconfig + ">"
		case server == "":
			server = "<context not found>"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.Group, c.Context, server, labelString(c.Labels))
	}
	return w.Flush()
}

// labelString prints labels as kubectl does: sorted k=v pairs, or <none>.
func labelString(labels map[string]string) string {
	if len(labels) == 0 {
		return "<none>"
	}
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// writePins records pins in the fleet file (fleet.Repin, unless
// --dry-run) and prints the change.
func (o *ClustersOptions) writePins(f *fleet.Fleet, pins map[string]fleet.Pin) error {
	before, after, err := fleet.Repin(f.Path, pins, !o.DryRun)
	if err != nil {
		return err
	}
	change := diff.Unified(f.Path, f.Path, string(before), string(after), 3)
	switch {
	case change == "":
		fmt.Fprintf(o.ErrOut, "%s: pins already up to date\n", f.Path)
		return nil
	case o.DryRun:
		fmt.Fprint(o.Out, change)
		fmt.Fprintf(o.ErrOut, "%s: not written (--dry-run)\n", f.Path)
		return nil
	}
	fmt.Fprint(o.Out, change)
	fmt.Fprintf(o.ErrOut, "%s: pinned %d clusters\n", f.Path, len(pins))
	return nil
}
