// Package roster is the fleet's clusters as "kubectl fleet clusters"
// lists them: a row per cluster (group, context, server, labels, pins)
// and, with --check, what probing it found; and the pins --pin records.
package roster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// Row is one cluster of the listing, and its JSON form.
type Row struct {
	// Type is "cluster" in -o json, as every JSON line says what it is.
	Type  string `json:"type,omitempty"`
	Name  string `json:"name"`
	Group string `json:"group"`
	// Batch is the cluster's batch of its group (groups[].batches).
	Batch      string            `json:"batch,omitempty"`
	Context    string            `json:"context"`
	Kubeconfig string            `json:"kubeconfig,omitempty"`
	Server     string            `json:"server"`
	Labels     map[string]string `json:"labels,omitempty"`
	Attributes map[string]any    `json:"attributes,omitempty"`
	PinServer  string            `json:"pinnedServer,omitempty"`
	PinUID     string            `json:"pinnedUID,omitempty"`
	// Delivery is the registry a delivered cluster's renders are
	// published to (delivery.oci).
	Delivery string `json:"delivery,omitempty"`
	// Check is what --check found (nil for a cluster no context reads:
	// published, not observed).
	Check *kube.Probe `json:"check,omitempty"`

	// unread says the kubeconfig (a kubeconfigFrom) was not read.
	unread bool
}

// List is the rows of clusters, and the kubeconfigs it read. A
// kubeconfigFrom not resolved yet is named, not read; read are the
// clusters whose kubeconfig was.
func List(cf *genericclioptions.ConfigFlags, f *fleet.Fleet, clusters []*fleet.Cluster) (rows []Row, kcs *kube.Kubeconfigs, read []*fleet.Cluster) {
	kcs = &kube.Kubeconfigs{}
	rows = make([]Row, len(clusters))
	batch := f.BatchOf()
	for i, c := range clusters {
		rows[i] = Row{Name: c.Name, Group: c.Group, Batch: batch[c.Name], Context: c.Context, Kubeconfig: kube.KubeconfigSource(cf, f, c), Labels: c.Labels, Attributes: f.Attributes(c), PinServer: c.Server, PinUID: c.UID}
		if d := f.DeliveryOf(c); d != nil {
			rows[i].Delivery = d.OCI
		}
		if !c.Observed() {
			continue // no kubeconfig to read
		}
		if _, from := f.KubeconfigOf(c); from != nil && c.ResolvedKubeconfig == "" {
			rows[i].unread = true
			continue
		}
		read = append(read, c)
		if cfg, err := kcs.Load(kube.KubeconfigPath(cf, f, c)); err == nil {
			rows[i].Server = kube.Server(cfg, c.Context)
		}
	}
	return rows, kcs, read
}

// Check probes the clusters of rows (kube.ProbeFleet), parallel at once,
// into rows. It returns the pins of the clusters that passed and how
// many failed.
func Check(ctx context.Context, cf *genericclioptions.ConfigFlags, f *fleet.Fleet, clusters []*fleet.Cluster, rows []Row, parallel int) (pins map[string]fleet.Pin, failed int) {
	pins = map[string]fleet.Pin{}
	var observed []*fleet.Cluster
	var at []int
	for i, c := range clusters {
		if c.Observed() {
			observed, at = append(observed, c), append(at, i)
		}
	}
	for k, p := range kube.ProbeFleet(ctx, cf, f, observed, parallel) {
		i := at[k]
		rows[i].Check = &p
		if !p.OK() {
			failed++
		} else {
			pins[clusters[i].Name] = fleet.Pin{Server: p.Server, UID: p.UID}
		}
	}
	return pins, failed
}

// notObserved is what the listing says of a cluster no context reads.
const notObserved = "published, not observed"

// Write prints rows as format says: "json" (JSON Lines), "yaml", or a
// table ("" ), with the check's columns when checked.
func Write(w io.Writer, rows []Row, format string, checked bool) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		for _, r := range rows {
			r.Type = "cluster"
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	case "yaml":
		b, err := yaml.Marshal(rows)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	tw := printers.GetNewTabWriter(w)
	if checked {
		fmt.Fprintln(tw, "NAME\tGROUP\tCONTEXT\tSERVER\tVERSION\tUID\tSTATUS")
		for _, r := range rows {
			if r.Check == nil {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Group, "<none>", r.Delivery, "<none>", "<none>", notObserved)
				continue
			}
			status := "ok"
			if len(r.Check.Problems) > 0 {
				status = strings.Join(r.Check.Problems, "; ")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Group, r.Context, r.Server, orNone(r.Check.Version), orNone(r.Check.UID), status)
		}
		return tw.Flush()
	}
	batches := slices.ContainsFunc(rows, func(r Row) bool { return r.Batch != "" })
	if batches {
		fmt.Fprintln(tw, "NAME\tGROUP\tBATCH\tCONTEXT\tSERVER\tLABELS")
	} else {
		fmt.Fprintln(tw, "NAME\tGROUP\tCONTEXT\tSERVER\tLABELS")
	}
	for _, r := range rows {
		server, context := r.Server, r.Context
		switch {
		case context == "" && r.Delivery != "":
			context, server = "<none>", r.Delivery+" ("+notObserved+")"
		case r.unread:
			server = "<kubeconfigFrom " + r.Kubeconfig + ">"
		case server == "":
			server = "<context not found>"
		}
		group := r.Group
		if batches {
			group += "\t" + orNone(r.Batch)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, group, context, server, labelString(r.Labels))
	}
	return tw.Flush()
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

// Pin records pins in the fleet file (fleet.Repin; only printed with
// dryRun): the change as a diff on out, what became of the file on
// errOut.
func Pin(out, errOut io.Writer, f *fleet.Fleet, pins map[string]fleet.Pin, dryRun bool) error {
	before, after, err := fleet.Repin(f.Path, pins, !dryRun)
	if err != nil {
		return err
	}
	change := diff.Unified(f.Path, f.Path, string(before), string(after), 3)
	switch {
	case change == "":
		fmt.Fprintf(errOut, "%s: pins already up to date\n", f.Path)
		return nil
	case dryRun:
		fmt.Fprint(out, change)
		fmt.Fprintf(errOut, "%s: not written (--dry-run)\n", f.Path)
		return nil
	}
	fmt.Fprint(out, change)
	fmt.Fprintf(errOut, "%s: pinned %d clusters\n", f.Path, len(pins))
	return nil
}
