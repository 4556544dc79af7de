package cmd

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// ClusterInfo is one row of "kubectl fleet clusters", and its JSON form.
type ClusterInfo struct {
	Name       string            `json:"name"`
	Group      string            `json:"group"`
	Context    string            `json:"context"`
	Kubeconfig string            `json:"kubeconfig,omitempty"`
	Server     string            `json:"server"`
	Labels     map[string]string `json:"labels,omitempty"`
	Attributes map[string]any    `json:"attributes,omitempty"`
	PinServer  string            `json:"pinnedServer,omitempty"`
	PinUID     string            `json:"pinnedUID,omitempty"`
}

// ClustersOptions are the options of "kubectl fleet clusters".
type ClustersOptions struct {
	*GlobalOptions
	SelectOptions
	Output string
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
command exit 1.`,
		Example: `  kubectl fleet clusters
  kubectl fleet ls --group production -o json
  kubectl fleet clusters -l region=eu`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json (one object per line) or yaml")
	return cmd
}

// Validate checks the flags.
func (o *ClustersOptions) Validate() error {
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q: want json or yaml", o.Output)
}

// Run lists the clusters.
func (o *ClustersOptions) Run() error {
	f, err := o.loadFleet()
	if err != nil {
		return err
	}
	clusters, err := f.Select(o.Selection)
	if err != nil {
		return err
	}
	kcs := &kube.Kubeconfigs{}
	infos := make([]ClusterInfo, len(clusters))
	for i, c := range clusters {
		infos[i] = ClusterInfo{Name: c.Name, Group: c.Group, Context: c.Context, Kubeconfig: kube.KubeconfigPath(o.ConfigFlags, f, c), Labels: c.Labels, Attributes: f.Attributes(c), PinServer: c.Server, PinUID: c.UID}
		if cfg, err := kcs.Load(infos[i].Kubeconfig); err == nil {
			infos[i].Server = kube.Server(cfg, c.Context)
		}
	}
	if err := o.print(infos); err != nil {
		return err
	}
	return kube.CheckContexts(o.ConfigFlags, kcs, f, clusters)
}

func (o *ClustersOptions) print(infos []ClusterInfo) error {
	switch o.Output {
	case "json":
		enc := json.NewEncoder(o.Out)
		for _, info := range infos {
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
	fmt.Fprintln(w, "NAME\tGROUP\tCONTEXT\tSERVER\tLABELS")
	for _, c := range infos {
		server := c.Server
		if server == "" {
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
