package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
)

// VetOptions are the options of "kubectl fleet vet".
type VetOptions struct {
	*GlobalOptions
	SelectOptions
	SourceOptions
	// NoKubeconfig skips the check that each context exists.
	NoKubeconfig bool
	// Server also validates every object with a server-side dry run.
	Server bool
	// Output is -o: "" or json.
	Output string
}

// NewCmdVet returns the vet command.
func NewCmdVet(g *GlobalOptions) *cobra.Command {
	o := &VetOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "vet",
		Short: "Check the fleet file and render every selected cluster",
		Long: `Check the fleet file, check that every selected cluster's context exists in
its kubeconfig, render every selected cluster (all apps, or the given
source) and validate the rendered objects: names, namespaces, labels,
annotations, and objects rendered twice. Nothing is sent to any cluster,
unless --server: then each object is also validated by its cluster with a
server-side dry-run apply (attributes from clusters are read for real).

Every problem is reported, not only the first.

Exit codes:
  0  no problem found
  1  problems found, or an error`,
		Example: `  kubectl fleet vet
  kubectl fleet vet -k overlays --group staging
  # In CI, without credentials
  kubectl fleet vet --no-kubeconfig
  # Each problem as JSON, with its file, line and field or its cluster
  kubectl fleet vet -o json | jq -c 'select(.type=="problem")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Server && o.NoKubeconfig {
				return fmt.Errorf("--server needs the kubeconfig; it does not go with --no-kubeconfig")
			}
			if o.NoKubeconfig {
				if err := refuseSet(cmd, "does not go with --no-kubeconfig", "kubeconfig"); err != nil {
					return err
				}
			}
			if !o.Server {
				if err := refuseSet(cmd, "only works with --server: without it nothing is sent to any cluster", connectionFlags...); err != nil {
					return err
				}
			}
			if err := validateJSONOutput(o.Output); err != nil {
				return err
			}
			if err := o.SourceOptions.validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.SourceOptions.addFlags(cmd, g)
	cmd.Flags().BoolVar(&o.NoKubeconfig, "no-kubeconfig", false, "skip the check that each cluster's context exists (CI without credentials)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: json (JSON Lines: one object per problem, cluster found sound, warning, and a summary)")
	cmd.Flags().BoolVar(&o.Server, "server", false, "also validate every object on its cluster with a server-side dry-run apply (reads attributesFrom for real)")
	return cmd
}

// Run vets and reports.
func (o *VetOptions) Run(ctx context.Context) error {
	v := &vetOut{w: o.Out, json: o.Output == "json", seen: map[string]string{}}
	f, err := o.loadFleet()
	if err != nil {
		var list fleet.ErrorList
		if !errors.As(err, &list) {
			return err
		}
		v.fleetProblems(list)
		v.summary(0, fleet.Locate(o.FleetFile))
		return &ExitError{Code: ExitFailed}
	}
	clusters, err := f.Select(o.Selection)
	if err != nil {
		return err
	}
	if !o.NoKubeconfig {
		if err := checkContexts(ctx, o.GlobalOptions, f, clusters); err != nil {
			// Missing contexts, or kubeconfigFrom sources that failed.
			var list fleet.ErrorList
			if errors.As(err, &list) {
				v.fleetProblems(list)
			} else {
				for _, l := range strings.Split(err.Error(), "\n") {
					v.problem("", VetProblem{Message: l})
				}
			}
		}
	}
	apps, err := o.SourceOptions.Resolve(f, clusters, o.namespace())
	if err != nil {
		return err
	}
	attrs := placeholders(f, clusters)
	if o.Server && v.problems == 0 {
		if attrs, err = rendered.LiveAttributes(ctx, connector{o.GlobalOptions}, f, clusters, apps); err != nil {
			return err
		}
	}
	pl := rendered.Request{Fleet: f, Clusters: clusters, Apps: apps, Live: attrs}
	engine := o.engine()
	results := pl.Render(ctx, engine)
	// The apps' tests are rendered and checked too (not sent to a server).
	tests := engine.Render(ctx, pl.Targets(true))
	objects := byCluster(clusters, results)
	v.prefix = o.prefixer(clusters)
	for _, c := range clusters {
		names, problems := vetRender(c.Name, results, tests, objects[c.Name])
		if o.Server && len(problems) == 0 && v.problems == 0 {
			problems = append(problems, o.serverCheck(ctx, f, c, results)...)
		}
		if len(problems) == 0 {
			v.ok(c.Name, len(objects[c.Name]), names)
		}
		for _, pr := range problems {
			v.problem(c.Name, pr)
		}
	}
	v.warnings(results)
	v.summary(len(clusters), "")
	if v.problems > 0 {
		return &ExitError{Code: ExitFailed}
	}
	return nil
}

// VetProblem is one problem vet found, a line of vet -o json
// ("type": "problem"): in the fleet file (file, line, field), or on a
// cluster (cluster; app, or the app's tests, when it is one app's).
type VetProblem struct {
	Type  string `json:"type"`
	File  string `json:"file,omitempty"`
	Line  int    `json:"line,omitempty"`
	Field string `json:"field,omitempty"`
	// Subject names the cluster, group or app of Field ("app web").
	Subject string `json:"subject,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	App     string `json:"app,omitempty"`
	Tests   bool   `json:"tests,omitempty"`
	Message string `json:"message"`
}

// text is the problem as vet prints it under its cluster's prefix.
func (p VetProblem) text() string {
	switch {
	case p.File != "":
		return (&fleet.FieldError{File: p.File, Line: p.Line, Field: p.Field, Subject: p.Subject, Msg: p.Message}).Error()
	case p.Tests:
		return "tests of app " + p.App + ": " + p.Message
	case p.App != "":
		return "app " + p.App + ": " + p.Message
	}
	return p.Message
}

// VetCluster is a cluster vet found sound ("type": "cluster").
type VetCluster struct {
	Type    string   `json:"type"`
	Cluster string   `json:"cluster"`
	Objects int      `json:"objects"`
	Apps    []string `json:"apps"`
}

// VetWarning is an app's render warning ("type": "warning"), said once.
type VetWarning struct {
	Type    string `json:"type"`
	App     string `json:"app"`
	Message string `json:"message"`
}

// VetSummary is vet's last line ("type": "summary"): problems counts
// each distinct problem once, however many clusters have it.
type VetSummary struct {
	Type     string `json:"type"`
	Clusters int    `json:"clusters"`
	Problems int    `json:"problems"`
}

// vetOut writes what vet finds: lines under each cluster's prefix, or
// JSON Lines. A problem a cluster shares with an earlier one (the same
// chart error everywhere) is said once, and named after for the others.
type vetOut struct {
	w        io.Writer
	json     bool
	prefix   *output.Prefixer
	seen     map[string]string // a problem's text: the first cluster with it
	problems int
}

func (v *vetOut) event(e any) {
	b, _ := json.Marshal(e)
	fmt.Fprintf(v.w, "%s\n", b)
}

func (v *vetOut) fleetProblems(list fleet.ErrorList) {
	for _, e := range list {
		v.problem("", VetProblem{File: e.File, Line: e.Line, Field: e.Field, Subject: e.Subject, Message: e.Msg})
	}
}

func (v *vetOut) problem(cluster string, p VetProblem) {
	p.Type, p.Cluster = "problem", cluster
	text := p.text()
	first, again := v.seen[text]
	if !again {
		v.seen[text] = cluster
		v.problems++
	}
	if v.json {
		v.event(p)
		return
	}
	pre := ""
	if cluster != "" {
		pre = v.prefix.Prefix(cluster)
	}
	if again && first != "" {
		text = strings.TrimSuffix(text, p.Message) + "the same problem as on " + first
	}
	for _, line := range strings.Split(text, "\n") {
		fmt.Fprintf(v.w, "%s%s\n", pre, line)
	}
}

func (v *vetOut) ok(cluster string, objects int, apps []string) {
	if v.json {
		v.event(VetCluster{Type: "cluster", Cluster: cluster, Objects: objects, Apps: apps})
		return
	}
	fmt.Fprintf(v.w, "%sok: %s from %s\n", v.prefix.Prefix(cluster), output.Plural(objects, "object"), appList(apps))
}

// warnings says each app's render warnings once, however many clusters
// they came from.
func (v *vetOut) warnings(results []render.Result) {
	seen := map[string]bool{}
	for _, r := range results {
		for _, warning := range r.Warnings {
			line := "warning: app " + r.App + ": " + warning
			if seen[line] {
				continue
			}
			seen[line] = true
			if v.json {
				v.event(VetWarning{Type: "warning", App: r.App, Message: warning})
			} else {
				fmt.Fprintln(v.w, line)
			}
		}
	}
}

// summary is vet's last line; file names the fleet file when it could
// not be read whole.
func (v *vetOut) summary(clusters int, file string) {
	switch {
	case v.json:
		v.event(VetSummary{Type: "summary", Clusters: clusters, Problems: v.problems})
	case file != "":
		fmt.Fprintf(v.w, "vet: %s in %s\n", output.Plural(v.problems, "problem"), file)
	case v.problems > 0:
		fmt.Fprintf(v.w, "vet: %s\n", output.Plural(v.problems, "problem"))
	default:
		fmt.Fprintf(v.w, "vet: %s ok\n", output.Plural(clusters, "cluster"))
	}
}

// renderProblem is a render error as a problem of its app.
func renderProblem(r render.Result, tests bool) VetProblem {
	var te *render.TargetError
	if errors.As(r.Err, &te) {
		return VetProblem{App: te.App, Tests: tests, Message: te.Err.Error()}
	}
	if tests {
		return VetProblem{Message: "tests: " + r.Err.Error()}
	}
	return VetProblem{Message: r.Err.Error()}
}

func appList(names []string) string {
	switch len(names) {
	case 0:
		return "no app (none targets this cluster)"
	case 1:
		return "app " + names[0]
	}
	return "apps " + strings.Join(names, ", ")
}

// serverCheck validates a cluster's objects with a server-side dry-run
// apply and returns what the server rejects.
func (o *VetOptions) serverCheck(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster, results []render.Result) []VetProblem {
	client, err := o.connect(ctx, f, c)
	if err != nil {
		return []VetProblem{{Message: err.Error()}}
	}
	var problems []VetProblem
	for _, r := range results {
		if r.Cluster.Name != c.Name {
			continue
		}
		diffs, err := diff.Run(ctx, client, r.Objects, diff.Options{App: r.App, FieldManager: apply.FieldManager, Force: true, Concurrency: 16, Ignore: f.IgnoreRules(r.App)})
		if err != nil {
			problems = append(problems, VetProblem{App: r.App, Message: err.Error()})
			continue
		}
		for _, d := range diffs {
			if d.Err != nil {
				problems = append(problems, VetProblem{App: r.App, Message: fmt.Sprintf("%s: the server rejects it: %v", d.Ref, d.Err)})
			}
		}
	}
	return problems
}

// vetRender returns the apps rendered for a cluster and what is wrong
// with their render and their tests' (render errors, invalid objects).
// The tests of an app whose render failed are not rendered apart: a
// Helm chart's test hooks fail with the chart, and would say it twice.
func vetRender(cluster string, results, tests []render.Result, objects []*unstructured.Unstructured) (names []string, problems []VetProblem) {
	failed := map[string]bool{}
	for _, r := range results {
		if r.Cluster.Name != cluster {
			continue
		}
		names = append(names, r.App)
		if r.Err != nil {
			failed[r.App] = true
			problems = append(problems, renderProblem(r, false))
		}
	}
	for _, e := range render.Validate(objects) {
		problems = append(problems, VetProblem{Message: e.Error()})
	}
	for _, t := range tests {
		if t.Cluster.Name != cluster || failed[t.App] {
			continue
		}
		if t.Err != nil {
			problems = append(problems, renderProblem(t, true))
			continue
		}
		for _, e := range render.Validate(t.Objects) {
			problems = append(problems, VetProblem{App: t.App, Tests: true, Message: e.Error()})
		}
	}
	return names, problems
}

// placeholders stand in for the attributes read from clusters, which vet
// does not contact: "<from ConfigMap kube-system/info>".
func placeholders(f *fleet.Fleet, clusters []*fleet.Cluster) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, c := range clusters {
		for _, a := range f.AttributesFrom(c) {
			if out[c.Name] == nil {
				out[c.Name] = map[string]any{}
			}
			ref := a.Name
			if a.Namespace != "" {
				ref = a.Namespace + "/" + a.Name
			}
			for name := range a.Attributes {
				out[c.Name][name] = fmt.Sprintf("<from %s %s>", a.Kind, ref)
			}
		}
	}
	return out
}

// byCluster gathers each cluster's objects over its apps.
func byCluster(clusters []*fleet.Cluster, results []render.Result) map[string][]*unstructured.Unstructured {
	out := make(map[string][]*unstructured.Unstructured, len(clusters))
	for _, r := range results {
		out[r.Cluster.Name] = append(out[r.Cluster.Name], r.Objects...)
	}
	return out
}
