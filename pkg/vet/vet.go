// Package vet is what "kubectl fleet vet" does (Run: the fleet file,
// the contexts, the render and its checks), what it finds and how it
// says it: problems in the fleet file and in each cluster's render
// (render errors, invalid objects, with --server what the server
// rejects), said once however many clusters share them, as lines or JSON
// events.
package vet

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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/analysis"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// NewOut is an Out on w: JSON lines when jsonOut.
func NewOut(w io.Writer, jsonOut bool) *Out {
	return &Out{w: w, json: jsonOut, seen: map[string]string{}}
}

// Problem is one problem vet found, a line of vet -o json
// ("type": "problem"): in the fleet file (file, line, field), or on a
// cluster (cluster; app, or the app's tests, when it is one app's).
type Problem struct {
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
func (p Problem) text() string {
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

// Cluster is a cluster vet found sound ("type": "cluster").
type Cluster struct {
	Type    string   `json:"type"`
	Cluster string   `json:"cluster"`
	Objects int      `json:"objects"`
	Apps    []string `json:"apps"`
}

// Warning is an app's render warning ("type": "warning"), said once.
type Warning struct {
	Type    string `json:"type"`
	App     string `json:"app"`
	Message string `json:"message"`
}

// Source is an app's source read from a registry ("type": "source"):
// the artifact it pins, its format, and the key its signature verified
// with ("" for none asked).
type Source struct {
	Type     string `json:"type"`
	App      string `json:"app"`
	Artifact string `json:"artifact"`
	Format   string `json:"format"`
	SignedBy string `json:"signedBy,omitempty"`
}

// Source says an app's source read from a registry.
func (v *Out) Source(s Source) {
	s.Type = "source"
	if v.json {
		v.event(s)
		return
	}
	signed := "not verified (no verify: on the app)"
	if s.SignedBy != "" {
		signed = "signed by " + s.SignedBy
	}
	fmt.Fprintf(v.w, "app %s: %s (%s artifact), %s\n", s.App, s.Artifact, s.Format, signed)
}

// Summary is vet's last line ("type": "summary"): problems counts
// each distinct problem once, however many clusters have it.
type Summary struct {
	Type     string `json:"type"`
	Clusters int    `json:"clusters"`
	Problems int    `json:"problems"`
}

// Out writes what vet finds: lines under each cluster's prefix, or
// JSON Lines. A problem a cluster shares with an earlier one (the same
// chart error everywhere) is said once, and named after for the others.
type Out struct {
	w    io.Writer
	json bool
	// Prefix is the clusters' prefixes.
	Prefix *output.Prefixer
	seen   map[string]string // a problem's text: the first cluster with it
	// Problems counts each distinct problem once.
	Problems int
}

func (v *Out) event(e any) {
	b, _ := json.Marshal(e)
	fmt.Fprintf(v.w, "%s\n", b)
}

func (v *Out) FleetProblems(list fleet.ErrorList) {
	for _, e := range list {
		v.Problem("", Problem{File: e.File, Line: e.Line, Field: e.Field, Subject: e.Subject, Message: e.Msg})
	}
}

func (v *Out) Problem(cluster string, p Problem) {
	p.Type, p.Cluster = "problem", cluster
	text := p.text()
	first, again := v.seen[text]
	if !again {
		v.seen[text] = cluster
		v.Problems++
	}
	if v.json {
		v.event(p)
		return
	}
	pre := ""
	if cluster != "" {
		pre = v.Prefix.Prefix(cluster)
	}
	if again && first != "" {
		text = strings.TrimSuffix(text, p.Message) + "the same problem as on " + first
	}
	for _, line := range strings.Split(text, "\n") {
		fmt.Fprintf(v.w, "%s%s\n", pre, line)
	}
}

func (v *Out) OK(cluster string, objects int, apps []string) {
	if v.json {
		v.event(Cluster{Type: "cluster", Cluster: cluster, Objects: objects, Apps: apps})
		return
	}
	fmt.Fprintf(v.w, "%sok: %s from %s\n", v.Prefix.Prefix(cluster), output.Plural(objects, "object"), appList(apps))
}

// Warnings says each app's render warnings once, however many clusters
// they came from.
func (v *Out) Warnings(results []render.Result) {
	seen := map[string]bool{}
	for _, r := range results {
		for _, warning := range r.Warnings {
			line := "warning: app " + r.App + ": " + warning
			if seen[line] {
				continue
			}
			seen[line] = true
			if v.json {
				v.event(Warning{Type: "warning", App: r.App, Message: warning})
			} else {
				fmt.Fprintln(v.w, line)
			}
		}
	}
}

// Step is a step of the rollout vet draws ("type": "step"): a group or
// a batch of one, its clusters, and the steps it waits for directly.
type Step struct {
	Type     string   `json:"type"`
	Name     string   `json:"name"`
	Group    string   `json:"group"`
	Batch    string   `json:"batch,omitempty"`
	Clusters []string `json:"clusters"`
	After    []string `json:"after,omitempty"`
}

// Rollout draws the fleet's rollout when it is more than its groups in
// file order (fleet.Fleet.Progressive): a line per step, in order, with
// the steps it waits for.
func (v *Out) Rollout(f *fleet.Fleet) {
	if !f.Progressive() {
		return
	}
	last := map[string]string{} // each group's last step
	for _, s := range f.Steps() {
		st := Step{Type: "step", Name: s.Name, Group: s.Group.Name, Batch: s.Batch, Clusters: s.Clusters}
		if s.N > 1 {
			st.After = []string{last[s.Group.Name]}
		} else {
			for _, g := range f.After(s.Group.Name) {
				if l, ok := last[g]; ok {
					st.After = append(st.After, l)
				}
			}
		}
		last[s.Group.Name] = s.Name
		if v.json {
			v.event(st)
			continue
		}
		line := fmt.Sprintf("rollout: %s (%s)", s.Name, output.Plural(len(s.Clusters), "cluster"))
		if len(st.After) > 0 {
			line += " after " + strings.Join(st.After, ", ")
		}
		fmt.Fprintln(v.w, line)
	}
}

// Summary is vet's last line; file names the fleet file when it could
// not be read whole.
func (v *Out) Summary(clusters int, file string) {
	switch {
	case v.json:
		v.event(Summary{Type: "summary", Clusters: clusters, Problems: v.Problems})
	case file != "":
		fmt.Fprintf(v.w, "vet: %s in %s\n", output.Plural(v.Problems, "problem"), file)
	case v.Problems > 0:
		fmt.Fprintf(v.w, "vet: %s\n", output.Plural(v.Problems, "problem"))
	default:
		fmt.Fprintf(v.w, "vet: %s ok\n", output.Plural(clusters, "cluster"))
	}
}

// renderProblem is a render error as a problem of its app.
func renderProblem(r render.Result, tests bool) Problem {
	var te *render.TargetError
	if errors.As(r.Err, &te) {
		return Problem{App: te.App, Tests: tests, Message: te.Err.Error()}
	}
	if tests {
		return Problem{Message: "tests: " + r.Err.Error()}
	}
	return Problem{Message: r.Err.Error()}
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

// ServerCheck validates a cluster's objects (those of results that go
// to c) with a server-side dry-run apply through client, and returns
// what the server rejects.
func ServerCheck(ctx context.Context, client *kube.Client, f *fleet.Fleet, c *fleet.Cluster, results []render.Result) []Problem {
	var problems []Problem
	for _, r := range results {
		if r.Cluster.Name != c.Name {
			continue
		}
		diffs, err := diff.Run(ctx, client, r.Objects, diff.Options{App: r.App, FieldManager: apply.FieldManager, Force: true, Concurrency: 16, Ignore: f.IgnoreRules(r.App)})
		if err != nil {
			problems = append(problems, Problem{App: r.App, Message: err.Error()})
			continue
		}
		for _, d := range diffs {
			if d.Err != nil {
				problems = append(problems, Problem{App: r.App, Message: fmt.Sprintf("%s: the server rejects it: %v", d.Ref, d.Err)})
			}
		}
	}
	return problems
}

// Render returns the apps rendered for a cluster and what is wrong
// with their render and their tests' (render errors, invalid objects).
// The tests of an app whose render failed are not rendered apart: a
// Helm chart's test hooks fail with the chart, and would say it twice.
func Render(cluster string, results, tests []render.Result, objects []*unstructured.Unstructured) (names []string, problems []Problem) {
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
		problems = append(problems, Problem{Message: e.Error()})
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
			problems = append(problems, Problem{App: t.App, Tests: true, Message: e.Error()})
		}
	}
	return names, problems
}

// Placeholders stand in for the attributes read from clusters, which vet
// does not contact: "<from ConfigMap kube-system/info>".
func Placeholders(f *fleet.Fleet, clusters []*fleet.Cluster) map[string]map[string]any {
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

// ByCluster gathers each cluster's objects over its apps.
func ByCluster(clusters []*fleet.Cluster, results []render.Result) map[string][]*unstructured.Unstructured {
	out := make(map[string][]*unstructured.Unstructured, len(clusters))
	for _, r := range results {
		out[r.Cluster.Name] = append(out[r.Cluster.Name], r.Objects...)
	}
	return out
}

// Deliveries says what a fleet's deliveries risk: a group or cluster
// that publishes unsigned artifacts (anyone who may push to the
// registry changes what its clusters run), or reaches a registry that is
// not on this machine over plain HTTP.
func (v *Out) Deliveries(f *fleet.Fleet, clusters []*fleet.Cluster) {
	seen, unobserved := map[*fleet.Delivery][]string{}, map[*fleet.Delivery][]string{}
	var order []*fleet.Delivery
	for _, c := range clusters {
		if d := f.DeliveryOf(c); d != nil {
			if seen[d] == nil {
				order = append(order, d)
			}
			seen[d] = append(seen[d], c.Name)
			if !c.Observed() {
				unobserved[d] = append(unobserved[d], c.Name)
			}
		}
	}
	who := func(names []string) string {
		return output.Plural(len(names), "cluster") + " (" + strings.Join(names[:min(len(names), 5)], ", ") + map[bool]string{true: ", …"}[len(names) > 5] + ")"
	}
	for _, d := range order {
		if d.Signing == nil {
			v.warn("delivery " + d.OCI + ": artifacts are published unsigned: whoever may push there changes what " + who(seen[d]) + " run; sign them (delivery.signing) and bootstrap again, so that their Flux verifies each one")
		} else if names := unobserved[d]; len(names) > 0 {
			v.warn("delivery " + d.OCI + ": Flux's check of a signature (source-controller v1.9.6, and its main branch of July 2026) does not ask which artifact it was made for: whoever may push there can move a tag to another artifact with a signature copied onto it, and no context reads " + who(names) + ", so nothing would see it there; give each a read-only context, so that status sees it and reconcile moves the tag back")
		}
		if d.Insecure && !loopback(d.OCI) {
			v.warn("delivery " + d.OCI + ": insecure: true sends artifacts and credentials over plain HTTP to a registry not on this machine")
		}
	}
	for i := range f.Apps {
		if a := &f.Apps[i]; a.Insecure && a.OCI() != "" && !loopback(a.OCI()) {
			v.warn("app " + a.Name + ": insecure: true reads " + a.OCI() + " and sends credentials over plain HTTP from a registry not on this machine")
		}
	}
}

// warn says a warning of the fleet's ("type": "warning", no app).
func (v *Out) warn(msg string) {
	if v.json {
		v.event(Warning{Type: "warning", Message: msg})
		return
	}
	fmt.Fprintln(v.w, "warning: "+msg)
}

// loopback reports whether an oci:// URL's registry is on this machine
// (publish.Loopback).
func loopback(oci string) bool {
	host, _, _ := strings.Cut(strings.TrimPrefix(oci, "oci://"), "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return publish.Loopback(host)
}

// Unpublishable are the problems of a delivered cluster's renders that
// apply would refuse to publish (publish.Refuse).
func Unpublishable(f *fleet.Fleet, c *fleet.Cluster, results []render.Result) []Problem {
	if f.DeliveryOf(c) == nil {
		return nil
	}
	var out []Problem
	for _, r := range results {
		if r.Cluster.Name != c.Name {
			continue
		}
		if err := publish.Refuse(c.Name, r.App, r.Objects, r.Decrypted); err != nil {
			out = append(out, Problem{App: r.App, Message: err.Error()})
		}
	}
	return out
}

// Check is what vet checks of a fleet's renders, after the fleet file.
type Check struct {
	Fleet    *fleet.Fleet
	Clusters []*fleet.Cluster
	// Results and Tests are the apps' renders and their tests'.
	Results, Tests []render.Result
	// Decrypted are the values decrypted from SOPS files (never to be
	// published or printed); Undecrypted the files no key here opened.
	Decrypted   []string
	Undecrypted []sopsfile.File
	// Connect, when set (--server), connects to a cluster to dry-run its
	// objects there; never to a delivered cluster, and not once a
	// problem was found.
	Connect func(ctx context.Context, c *fleet.Cluster) (*kube.Client, error)
}

// Check checks each cluster's renders, then what holds for the fleet as
// a whole (values exposed, warnings, files not decrypted, deliveries,
// rollout), and sums up: v.Problems counts what failed.
func (v *Out) Check(ctx context.Context, k Check) {
	objects := ByCluster(k.Clusters, k.Results)
	for _, c := range k.Clusters {
		names, problems := Render(c.Name, k.Results, k.Tests, objects[c.Name])
		problems = append(problems, Unpublishable(k.Fleet, c, k.Results)...)
		if k.Connect != nil && len(problems) == 0 && v.Problems == 0 && k.Fleet.DeliveryOf(c) == nil {
			problems = append(problems, serverCheck(ctx, k, c)...)
		}
		if k.Connect != nil && len(problems) == 0 {
			problems = append(problems, Analyses(ctx, k.Fleet, c, k.Results)...)
		}
		if len(problems) == 0 {
			v.OK(c.Name, len(objects[c.Name]), names)
		}
		for _, pr := range problems {
			v.Problem(c.Name, pr)
		}
	}
	Exposed(k.Results, k.Decrypted)
	v.Warnings(k.Results)
	v.Encrypted(k.Undecrypted)
	v.Deliveries(k.Fleet, k.Clusters)
	v.Rollout(k.Fleet)
	v.Summary(len(k.Clusters), "")
}

// serverCheck is ServerCheck on c, once connected to.
func serverCheck(ctx context.Context, k Check, c *fleet.Cluster) []Problem {
	client, err := k.Connect(ctx, c)
	if err != nil {
		return []Problem{{Message: err.Error()}}
	}
	return ServerCheck(ctx, client, k.Fleet, c, k.Results)
}

// Analyses asks each analysis of c's group (and its batches) whether
// its provider takes the query as c's attributes expand it (a
// Prometheus parses it): a problem at the query's line for each that
// does not, or whose credentials are not where auth says.
func Analyses(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster, results []render.Result) []Problem {
	i := slices.IndexFunc(f.Groups, func(g fleet.Group) bool { return g.Name == c.Group })
	if i < 0 {
		return nil
	}
	cluster := render.ClusterIn(f, c, results)
	vars := render.VariablesOf(&cluster).Text
	g := &f.Groups[i]
	var out []Problem
	check := func(field string, a fleet.Analysis) {
		p, err := analysis.ProviderOf(a, vars, f.Dir, os.Getenv, nil)
		if err == nil {
			err = analysis.Check(ctx, p)
		}
		if err != nil {
			fe := f.FieldError(field, "analysis %s: %v", a.Name, err)
			out = append(out, Problem{File: fe.File, Line: fe.Line, Field: fe.Field, Subject: fe.Subject, Cluster: c.Name, Message: fe.Msg})
		}
	}
	for j, a := range g.Analysis {
		check(fmt.Sprintf("groups[%d].analysis[%d]", i, j), a)
	}
	for b, batch := range g.Batches {
		for j, a := range batch.Analysis {
			check(fmt.Sprintf("groups[%d].batches[%d].analysis[%d]", i, b, j), a)
		}
	}
	return out
}
