package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/schema"
)

// InitOptions are the options of "kubectl fleet init".
type InitOptions struct {
	*GlobalOptions
	// Contexts are the contexts to take (names or globs); every one when
	// empty.
	Contexts []string
	// Groups are --group NAME=GLOB[,GLOB…], in rollout order.
	Groups []string
	// Name is the fleet's metadata.name.
	Name string
	// App is the example app's name; "" for none.
	App string
	// Schema is the yaml-language-server $schema line's target.
	Schema string
	// Force overwrites an existing fleet file.
	Force bool
}

// NewCmdInit returns the init command.
func NewCmdInit(g *GlobalOptions) *cobra.Command {
	o := &InitOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a fleet file from the kubeconfig's contexts",
		Long: `Write a fleet file (-F, default ./fleet.yaml) with one cluster per context of
the kubeconfig (--contexts narrows them), in the groups --group gives, in
rollout order. Without --group, the groups are guessed from the context
names: a context named like dev, test, qa, stage or staging goes to staging,
the others to production (a protected group: apply asks first, or --yes).
Each guess is marked in the file: check them.

An example app (--app, "" for none) is written under apps/ unless its
folder exists. The file starts with the yaml-language-server line that
points editors at the fleet file's JSON Schema (--schema).

The file is checked as vet checks it (its contexts, the example app's
render) before it is written; nothing is written when a check fails, or
when the fleet file exists (--force overwrites it).`,
		Example: `  # Every context, groups guessed from their names
  kubectl fleet init
  # Two groups, the contexts by glob
  kubectl fleet init --group staging=kind-stg --group production='prod-*'
  # Some contexts only, into a file of another name
  kubectl fleet init --contexts 'kind-*' -F kind.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd)
		},
	}
	cmd.Flags().StringSliceVar(&o.Contexts, "contexts", nil, "the contexts to take, names or globs (default every context of the kubeconfig)")
	cmd.Flags().StringArrayVar(&o.Groups, "group", nil, "a group and its contexts, NAME=GLOB[,GLOB...], repeated in rollout order (default: guessed from the context names)")
	cmd.Flags().StringVar(&o.Name, "name", "", "the fleet's name (default the fleet file's folder)")
	cmd.Flags().StringVar(&o.App, "app", "hello", `the example app's name; "" writes none`)
	cmd.Flags().StringVar(&o.Schema, "schema", schema.ID, "the JSON Schema editors are pointed at (a URL, or a path relative to the fleet file)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "overwrite an existing fleet file")
	return cmd
}

// initCluster is a cluster init writes: a context, its name and group,
// and whether the group is a guess.
type initCluster struct {
	Name, Context, Group string
	Guessed              bool
}

// Run writes the fleet file.
func (o *InitOptions) Run(cmd *cobra.Command) error {
	file := fleet.Locate(o.FleetFile)
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	if _, err := os.Stat(file); err == nil && !o.Force {
		return fmt.Errorf("%s exists: kubectl fleet init does not overwrite it without --force", file)
	}
	raw, err := o.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	var contexts []string
	for name := range raw.Contexts {
		if len(o.Contexts) == 0 || matchAny(o.Contexts, name) {
			contexts = append(contexts, name)
		}
	}
	slices.Sort(contexts)
	if len(contexts) == 0 {
		return fmt.Errorf("no context to take: the kubeconfig has %s (--kubeconfig, --contexts)", contextNames(raw.Contexts))
	}
	groups, clusters, err := o.place(contexts)
	if err != nil {
		return err
	}
	dir := filepath.Dir(file)
	name := o.Name
	if name == "" {
		name = dnsLabel(filepath.Base(dir))
	}
	var made []string // the example app's files, removed if a check fails
	if o.App != "" {
		if made, err = writeExampleApp(dir, o.App); err != nil {
			unmake(made)
			return err
		}
	}
	content := initFile(name, o.Schema, o.kubeconfigField(dir), groups, clusters, o.App)
	if err := o.checkAndWrite(cmd, file, content); err != nil {
		unmake(made)
		return err
	}
	o.said(file, groups, clusters, made)
	return nil
}

// place puts each context in a group: --group's, or a guess from its
// name. It returns the groups in rollout order and the clusters.
func (o *InitOptions) place(contexts []string) ([]string, []initCluster, error) {
	type rule struct {
		group string
		globs []string
	}
	var rules []rule
	for _, g := range o.Groups {
		name, globs, ok := strings.Cut(g, "=")
		if !ok || dnsLabel(name) != name || globs == "" {
			return nil, nil, fmt.Errorf("--group %q: want NAME=GLOB[,GLOB...], NAME a DNS label, as in staging=kind-stg", g)
		}
		rules = append(rules, rule{name, strings.Split(globs, ",")})
	}
	taken := map[string]bool{}
	var clusters []initCluster
	var unplaced []string
	for _, ctx := range contexts {
		c := initCluster{Name: uniqueName(clusterName(ctx), taken), Context: ctx}
		for _, r := range rules {
			if matchAny(r.globs, ctx) {
				c.Group = r.group
				break
			}
		}
		switch {
		case len(rules) == 0:
			c.Group, c.Guessed = guessGroup(ctx), true
		case c.Group == "":
			unplaced = append(unplaced, ctx)
			continue
		}
		clusters = append(clusters, c)
	}
	if len(unplaced) > 0 {
		return nil, nil, fmt.Errorf("no --group takes the contexts %s: add them to a group, or leave them out with --contexts", strings.Join(unplaced, ", "))
	}
	var groups []string
	for _, r := range rules {
		groups = append(groups, r.group)
	}
	if len(rules) == 0 {
		groups = []string{"staging", "production"}
	}
	// A group no cluster is in is left out; the clusters are listed by
	// group, in rollout order.
	groups = slices.DeleteFunc(groups, func(g string) bool {
		return !slices.ContainsFunc(clusters, func(c initCluster) bool { return c.Group == g })
	})
	slices.SortStableFunc(clusters, func(a, b initCluster) int {
		return slices.Index(groups, a.Group) - slices.Index(groups, b.Group)
	})
	return groups, clusters, nil
}

// stagingName is a context name that says it is not production.
var stagingName = regexp.MustCompile(`(^|[^a-z])(dev|develop|development|test|testing|qa|uat|sandbox|stage|stg|staging|preprod|nonprod|kind|minikube|k3d|docker-desktop)([^a-z]|$)`)

// guessGroup guesses a context's group from its name.
func guessGroup(context string) string {
	if stagingName.MatchString(strings.ToLower(context)) {
		return "staging"
	}
	return "production"
}

// clusterName is a context's name as a cluster's: the last part of an
// ARN or path ("arn:aws:eks:…:cluster/prod" is prod), as a DNS label.
func clusterName(context string) string {
	name := context
	if i := strings.LastIndexAny(name, "/"); i >= 0 && i < len(name)-1 {
		name = name[i+1:]
	}
	if l := dnsLabel(name); l != "" {
		return l
	}
	return "cluster"
}

var notLabel = regexp.MustCompile(`[^a-z0-9]+`)

// dnsLabel makes s a DNS label: lowercase letters, digits and dashes, at
// most 63, starting and ending with a letter or digit.
func dnsLabel(s string) string {
	s = strings.Trim(notLabel.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	return s
}

// uniqueName is name, or name-2, name-3… when taken.
func uniqueName(name string, taken map[string]bool) string {
	out := name
	for i := 2; taken[out]; i++ {
		out = fmt.Sprintf("%s-%d", strings.TrimRight(name[:min(len(name), 60)], "-"), i)
	}
	taken[out] = true
	return out
}

// matchAny reports whether name matches one of the globs: * is any
// text, slashes and colons of ARNs included, ? any one character.
func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(strings.TrimSpace(g))) + "$"
		if ok, _ := regexp.MatchString(re, name); ok {
			return true
		}
	}
	return false
}

// contextNames lists a kubeconfig's contexts for an error.
func contextNames[V any](m map[string]V) string {
	if len(m) == 0 {
		return "no contexts"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return "the contexts " + strings.Join(names, ", ")
}

// kubeconfigField is the defaults.kubeconfig init writes: the
// --kubeconfig given (relative to the fleet file's folder when it can
// be), so that later commands find the same contexts; "" for kubectl's
// own.
func (o *InitOptions) kubeconfigField(dir string) string {
	if o.ConfigFlags.KubeConfig == nil || *o.ConfigFlags.KubeConfig == "" {
		return ""
	}
	kc, err := filepath.Abs(*o.ConfigFlags.KubeConfig)
	if err != nil {
		return *o.ConfigFlags.KubeConfig
	}
	if rel, err := filepath.Rel(dir, kc); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return kc
}

var plainScalar = regexp.MustCompile(`^[A-Za-z0-9./][A-Za-z0-9._/-]*$`)

// yamlString writes s as a YAML scalar: plain when that reads back as
// the same string (not 001, a number; not yes, a bool to some), else
// double-quoted (JSON's quoting is YAML's).
func yamlString(s string) string {
	var v any
	if plainScalar.MatchString(s) && yaml.Unmarshal([]byte(s), &v) == nil && v == s && !slices.Contains([]string{"yes", "no", "on", "off", "y", "n"}, strings.ToLower(s)) {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// initFile is the fleet file init writes, comments included.
func initFile(name, schema, kubeconfig string, groups []string, clusters []initCluster, app string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# yaml-language-server: $schema=%s\n", schema)
	b.WriteString("# A fleet file, written by kubectl fleet init from the kubeconfig's\n# contexts. Reference: docs/fleet-file.md; check it with kubectl fleet vet.\n")
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n", fleet.APIVersion, fleet.Kind, yamlString(name))
	if kubeconfig != "" || app != "" {
		b.WriteString("defaults:\n")
	}
	if kubeconfig != "" {
		fmt.Fprintf(&b, "  kubeconfig: %s\n", yamlString(kubeconfig))
	}
	if app != "" {
		b.WriteString("  attributes:                 # every cluster's values: ${greeting} in the apps\n    greeting: hello\n")
	}
	b.WriteString("# Rolled out in this order: a group starts once the one before it\n# verified the release.\ngroups:\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "  - name: %s\n", g)
		if g == "production" {
			b.WriteString("    protected: true             # apply asks before writing here (or --yes)\n    maxParallel: 1              # one cluster at a time\n")
		}
	}
	b.WriteString("clusters:\n")
	for _, c := range clusters {
		fmt.Fprintf(&b, "  - name: %s\n", c.Name)
		if c.Guessed {
			fmt.Fprintf(&b, "    group: %-22s # guessed from the context's name: check it\n", c.Group)
		} else {
			fmt.Fprintf(&b, "    group: %s\n", c.Group)
		}
		fmt.Fprintf(&b, "    context: %s\n", yamlString(c.Context))
	}
	if app != "" {
		fmt.Fprintf(&b, "apps:\n  - name: %s                 # an example: edit or replace it\n    manifests: apps/%s\n    namespace: %s\n    createNamespace: true\n", app, app, app)
	}
	return b.Bytes()
}

// writeExampleApp writes apps/<app>/<app>.yaml under dir, unless the
// app's folder exists; it returns what it made, folders first.
func writeExampleApp(dir, app string) ([]string, error) {
	if dnsLabel(app) != app {
		return nil, fmt.Errorf("--app %q: an app's name is a DNS label, such as hello", app)
	}
	folder := filepath.Join(dir, "apps", app)
	if _, err := os.Stat(folder); err == nil {
		return nil, nil // the user's: kept as it is
	}
	var made []string
	for _, d := range []string{filepath.Dir(folder), folder} {
		if _, err := os.Stat(d); err == nil {
			continue
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return made, err
		}
		made = append(made, d)
	}
	file := filepath.Join(folder, app+".yaml")
	content := fmt.Sprintf(`# An example app: one ConfigMap per cluster, its values from the fleet
# file. kubectl fleet render shows what each cluster gets.
apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
data:
  cluster: ${FLEET_CLUSTER_NAME}
  group: ${FLEET_CLUSTER_GROUP}
  greeting: ${greeting}
`, app)
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		return made, err
	}
	return append(made, file), nil
}

// unmake removes what writeExampleApp made, the file then its folders.
func unmake(made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		_ = os.Remove(made[i])
	}
}

// checkAndWrite vets content as the fleet file (its contexts, its apps'
// render) from a temporary file beside it, then puts it in place: a
// fleet file that fails is never written.
func (o *InitOptions) checkAndWrite(cmd *cobra.Command, file string, content []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".fleet-init-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	var out bytes.Buffer
	// The kubeconfig of --kubeconfig, written in the file.
	g := GlobalOptions{IOStreams: o.IOStreams, FleetFile: tmp.Name(), NoColor: true, ConfigFlags: kube.NewConfigFlags(), LogLevel: o.LogLevel}
	g.Out = &out
	defer g.sources.Cleanup()
	f, err := g.loadFleet()
	var all []*fleet.Cluster
	if err == nil {
		all, err = f.Select(fleet.Selection{})
	}
	if err == nil && len(f.Apps) == 0 {
		err = checkContexts(cmd.Context(), &g, f, all) // no app to render
	} else if err == nil {
		err = (&VetOptions{GlobalOptions: &g}).Run(cmd.Context())
	}
	if err != nil {
		fmt.Fprint(o.ErrOut, strings.ReplaceAll(out.String(), tmp.Name(), file))
		if exit := (*ExitError)(nil); errors.As(err, &exit) && exit.Err == nil {
			return fmt.Errorf("the fleet file init made fails vet (above): nothing written")
		}
		return fmt.Errorf("the fleet file init made fails vet, nothing written: %s", strings.ReplaceAll(err.Error(), tmp.Name(), file))
	}
	return os.Rename(tmp.Name(), file)
}

// said tells what init wrote, and what to do next.
func (o *InitOptions) said(file string, groups []string, clusters []initCluster, made []string) {
	w := o.Out
	fmt.Fprintf(w, "Wrote %s: %d clusters, checked by vet.\n", displayPath(file), len(clusters))
	guessed := false
	for _, g := range groups {
		var names []string
		for _, c := range clusters {
			if c.Group == g {
				names = append(names, fmt.Sprintf("%s (%s)", c.Name, c.Context))
				guessed = guessed || c.Guessed
			}
		}
		fmt.Fprintf(w, "  %s: %s\n", g, strings.Join(names, ", "))
	}
	if guessed {
		fmt.Fprintln(w, "The groups are guessed from the context names: check them (or run again with --group).")
	}
	if len(made) > 0 {
		fmt.Fprintf(w, "Wrote %s, an example app.\n", displayPath(made[len(made)-1]))
	}
	fmt.Fprintln(w, "Next: kubectl fleet diff, then kubectl fleet apply.")
}

// displayPath is path relative to the working folder when it is under
// it.
func displayPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return p
}
