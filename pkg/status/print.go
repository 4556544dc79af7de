package status

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Cluster is what a status read found on one cluster: its apps' status,
// or why there is none.
type Cluster struct {
	Name  string
	Group string
	// Batch is the cluster's batch of its group, if it has batches.
	Batch string
	// Skipped: the cluster was left out (unreachable, say); Err says why.
	Skipped bool
	// Err is why the cluster could not be read, or not whole.
	Err  error
	Apps []App
}

// Line is the JSON form of one app on one cluster ("type": "app"), or
// of a cluster that could not be read ("type": "cluster").
type Line struct {
	Type    string `json:"type"`
	Cluster string `json:"cluster"`
	Group   string `json:"group"`
	// Batch is the cluster's batch of its group, if it has batches.
	Batch string `json:"batch,omitempty"`
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	App
}

// Lines are the clusters' JSON lines: for each, a line if it could not
// be read (whole), then a line per app.
func Lines(clusters []Cluster) []Line {
	var out []Line
	for _, c := range clusters {
		if c.Err != nil {
			out = append(out, Line{Type: "cluster", Cluster: c.Name, Group: c.Group, Batch: c.Batch, State: "Error", Error: c.Err.Error()})
		}
		for _, a := range c.Apps {
			state, _ := a.Summary()
			out = append(out, Line{Type: "app", Cluster: c.Name, Group: c.Group, Batch: c.Batch, State: state, App: a})
		}
	}
	return out
}

// Healthy reports whether every cluster was read (or skipped) and every
// app on it is OK.
func Healthy(outcomes []runner.Outcome, clusters []Cluster) bool {
	for _, oc := range outcomes {
		if oc.State != runner.Succeeded && oc.State != runner.Skipped {
			return false
		}
	}
	for _, c := range clusters {
		for _, a := range c.Apps {
			if !a.OK() && !a.Unobserved() {
				return false
			}
		}
	}
	return true
}

// Unobserved reports whether any app is published to a cluster no
// context reads (App.Unobserved).
func Unobserved(clusters []Cluster) bool {
	for _, c := range clusters {
		for _, a := range c.Apps {
			if a.Unobserved() {
				return true
			}
		}
	}
	return false
}

// WriteMatrix writes the clusters by apps to out, a table: each cell is
// the app's Cell and revision, "-" where the app does not go, "Skipped"
// or "Error" on a cluster that was not read. The columns are apps, then
// any app found on a cluster that is not among them. Why clusters were
// not read follows on errOut, after the table.
func WriteMatrix(out, errOut io.Writer, apps []string, clusters []Cluster) error {
	apps = slices.Clone(apps)
	for _, c := range clusters {
		for _, a := range c.Apps {
			if !slices.Contains(apps, a.App) {
				apps = append(apps, a.App)
			}
		}
	}
	if len(apps) == 0 {
		fmt.Fprintln(errOut, "No apps found.")
	}
	w := printers.GetNewTabWriter(out)
	fmt.Fprintf(w, "CLUSTER\tGROUP\t%s\n", strings.ToUpper(strings.Join(apps, "\t")))
	var errs []string
	for _, c := range clusters {
		cells := make([]string, len(apps))
		for i, name := range apps {
			cells[i] = c.cell(name)
		}
		switch {
		case c.Skipped:
			errs = append(errs, fmt.Sprintf("skipped: %s: %v", c.Name, c.Err))
		case c.Err != nil:
			errs = append(errs, fmt.Sprintf("error: %s: %v", c.Name, c.Err))
		}
		group := c.Group
		if c.Batch != "" {
			group += "/" + c.Batch
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", c.Name, group, strings.Join(cells, "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	legend(out, clusters)
	for _, e := range errs {
		fmt.Fprintln(errOut, e)
	}
	return nil
}

// legend says, under the matrix, what its words for differences mean,
// those it used.
func legend(out io.Writer, clusters []Cluster) {
	used := map[string]bool{}
	for _, c := range clusters {
		for _, a := range c.Apps {
			for _, o := range a.Objects {
				if !a.NotDeployed {
					used[o.sync()] = true
				}
			}
		}
	}
	if used[Drifted] {
		fmt.Fprintln(out, "drifted: edited live since the last apply (apply puts it back; status -o wide names the objects)")
	}
	if used[OutOfSync] {
		fmt.Fprintln(out, "out of sync: the render is not what the last apply sent (a change not applied yet, or a rollback; apply rolls it out)")
	}
}

// cell is the matrix's cell of an app on c.
func (c Cluster) cell(app string) string {
	switch {
	case c.Skipped:
		return "Skipped"
	case c.Err != nil:
		return "Error"
	}
	cell := "-"
	for _, a := range c.Apps {
		if a.App == app {
			cell = a.CellWithRevision()
		}
	}
	return cell
}

// CellWithRevision is the app's Cell, then its RevisionLabel when a
// revision is recorded: "5 of 5 Current (r8 verified)", as the matrix
// and reports show the app.
func (a App) CellWithRevision() string {
	if a.Revision > 0 {
		return a.Cell() + " (" + a.RevisionLabel() + ")"
	}
	return a.Cell()
}

// Skew is a group whose clusters run different revisions of an app (by
// number or source commit): version skew is what people look for first
// in a fleet. It is a line of status -o json ("type": "skew").
type Skew struct {
	Type  string `json:"type"`
	Group string `json:"group"`
	App   string `json:"app"`
	// Clusters are the group's clusters in order, each with what it runs
	// ("r8 (3f2a9c1)", or "none").
	Clusters []ClusterRevision `json:"clusters"`
}

// ClusterRevision is what revision of an app a cluster runs.
type ClusterRevision struct {
	Cluster  string `json:"cluster"`
	Revision string `json:"revision"`
}

// Text is the skew as status prints it under the matrix.
func (s Skew) Text() string {
	runs := make([]string, len(s.Clusters))
	for i, c := range s.Clusters {
		runs[i] = c.Cluster + " " + c.Revision
	}
	return fmt.Sprintf("Skew: app %s differs within group %s: %s", s.App, s.Group, strings.Join(runs, ", "))
}

// Skews finds, for each group and app, the clusters that run different
// revisions of it.
func Skews(clusters []Cluster) []Skew {
	type key struct{ group, app string }
	seen := map[key][]ClusterRevision{}
	versions := map[key]map[string]bool{}
	var order []key
	for _, c := range clusters {
		for _, a := range c.Apps {
			k := key{c.Group, a.App}
			if versions[k] == nil {
				versions[k] = map[string]bool{}
				order = append(order, k)
			}
			v := "none"
			if a.Revision > 0 {
				v = fmt.Sprintf("r%d", a.Revision)
				if a.Source != "" {
					v += " (" + a.Source + ")"
				}
			}
			versions[k][v] = true
			seen[k] = append(seen[k], ClusterRevision{Cluster: c.Name, Revision: v})
		}
	}
	var out []Skew
	for _, k := range order {
		if len(versions[k]) > 1 {
			out = append(out, Skew{Type: "skew", Group: k.group, App: k.app, Clusters: seen[k]})
		}
	}
	return out
}

// WriteDetails writes each cluster's apps, a line each, and their objects
// under them, to the cluster's writer; a cluster not read says why.
func WriteDetails(writer func(cluster string) io.Writer, clusters []Cluster) {
	for _, c := range clusters {
		w := writer(c.Name)
		if c.Err != nil {
			fmt.Fprintf(w, "error: %v\n", c.Err)
			continue
		}
		for _, a := range c.Apps {
			fmt.Fprintf(w, "%s: %s, %s, last applied %s\n", a.App, a.Cell(), a.revisionLine(), cmp.Or(a.LastApplied, "never"))
			for _, obj := range a.Objects {
				fmt.Fprintln(w, "  "+obj.line())
			}
		}
	}
}

// revisionLine is the app's revision as WriteDetails says it: "revision
// 8 verified from abc1234", "no revision".
func (a App) revisionLine() string {
	if a.Revision <= 0 {
		return "no revision"
	}
	rev := fmt.Sprintf("revision %d", a.Revision)
	if v := a.Verification; v != nil {
		rev += " " + v.String()
	}
	if a.Source != "" {
		rev += " from " + a.Source
	}
	if a.RolledBack != "" {
		rev += " (" + a.RolledBack + ")"
	}
	return rev
}

// line is the object as WriteDetails says it: its health, why when it is
// not Current, and whether it drifted, is no longer rendered or failed.
func (o Object) line() string {
	line := fmt.Sprintf("%s %s", o.Ref, o.Health)
	if o.Message != "" && o.Health != Current {
		line += ": " + o.Message
	}
	switch {
	case o.Orphaned:
		line += " (out of sync: no longer rendered; apply --prune deletes it)"
	case o.sync() == OutOfSync:
		line += " (out of sync: not what the last apply sent)"
	case o.Drifted:
		line += " (drifted: edited live since the last apply)"
	}
	if o.Error != "" {
		line += " error: " + o.Error
	}
	return line
}
