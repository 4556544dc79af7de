// Package scaffold makes a first fleet file from a kubeconfig's contexts
// (kubectl fleet init): a cluster per context named as a DNS label, its
// group given by globs or guessed from its name, the file with comments
// and the yaml-language-server line, and an example app.
package scaffold

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// Cluster is a cluster to write: a context, its name and group, and
// whether the group is a guess.
type Cluster struct {
	Name, Context, Group string
	Guessed              bool
}

// Place puts each context in a group: one of groups (NAME=GLOB[,GLOB…],
// in rollout order), or, with none, a guess from its name. It returns the
// groups in rollout order, each with a cluster, and the clusters by group.
func Place(contexts, groups []string) ([]string, []Cluster, error) {
	type rule struct {
		group string
		globs []string
	}
	var rules []rule
	for _, g := range groups {
		name, globs, ok := strings.Cut(g, "=")
		if !ok || DNSLabel(name) != name || globs == "" {
			return nil, nil, fmt.Errorf("--group %q: want NAME=GLOB[,GLOB...], NAME a DNS label, as in staging=kind-stg", g)
		}
		rules = append(rules, rule{name, strings.Split(globs, ",")})
	}
	taken := map[string]bool{}
	var clusters []Cluster
	var unplaced []string
	for _, ctx := range contexts {
		c := Cluster{Name: uniqueName(clusterName(ctx), taken), Context: ctx}
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
	groups = nil
	for _, r := range rules {
		groups = append(groups, r.group)
	}
	if len(rules) == 0 {
		groups = []string{"staging", "production"}
	}
	// A group no cluster is in is left out; the clusters are listed by
	// group, in rollout order.
	groups = slices.DeleteFunc(groups, func(g string) bool {
		return !slices.ContainsFunc(clusters, func(c Cluster) bool { return c.Group == g })
	})
	slices.SortStableFunc(clusters, func(a, b Cluster) int {
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
	if l := DNSLabel(name); l != "" {
		return l
	}
	return "cluster"
}

var notLabel = regexp.MustCompile(`[^a-z0-9]+`)

// DNSLabel makes s a DNS label: lowercase letters, digits and dashes, at
// most 63, starting and ending with a letter or digit.
func DNSLabel(s string) string {
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

// Contexts are the names of the contexts that match one of globs (every
// one when there is none), sorted; none is an error that names the
// contexts there are.
func Contexts(contexts map[string]*clientcmdapi.Context, globs []string) ([]string, error) {
	var names []string
	for name := range contexts {
		if len(globs) == 0 || matchAny(globs, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("no context to take: the kubeconfig has %s (--kubeconfig, --contexts)", kube.ContextList(contexts))
	}
	return names, nil
}

// OneEach keeps, of names (sorted contexts of cfg), the first context of
// each API server: two entries of one server would share every app's
// records there, and a fleet file refuses them. It returns the contexts
// kept, and a line for each left out ("prod-admin: the API server of
// prod-eu").
func OneEach(cfg *clientcmdapi.Config, names []string) (kept, left []string) {
	first := map[string]string{}
	for _, name := range names {
		server := ""
		if ctx := cfg.Contexts[name]; ctx != nil && cfg.Clusters[ctx.Cluster] != nil {
			server = fleet.ServerKey(cfg.Clusters[ctx.Cluster].Server)
		}
		if other, ok := first[server]; ok && server != "" {
			left = append(left, fmt.Sprintf("%s: the API server of %s", name, other))
			continue
		}
		first[server] = name
		kept = append(kept, name)
	}
	return kept, left
}

// KubeconfigField is the defaults.kubeconfig of a fleet file in dir for
// the kubeconfig given (--kubeconfig; relative to dir when it can be),
// so that later commands find the same contexts; "" for kubectl's own.
func KubeconfigField(kubeconfig, dir string) string {
	if kubeconfig == "" {
		return ""
	}
	kc, err := filepath.Abs(kubeconfig)
	if err != nil {
		return kubeconfig
	}
	if rel, err := filepath.Rel(dir, kc); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return kc
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

// Fleet is a fleet file to write.
type Fleet struct {
	Name string
	// Schema is the JSON Schema of the yaml-language-server line.
	Schema string
	// Kubeconfig is defaults.kubeconfig; "" for kubectl's own.
	Kubeconfig string
	Groups     []string
	Clusters   []Cluster
	// App is the example app's name (WriteApp); "" for none.
	App string
}

// YAML is the fleet file, comments included.
func (f Fleet) YAML() []byte {
	name, schema, kubeconfig, groups, clusters, app := f.Name, f.Schema, f.Kubeconfig, f.Groups, f.Clusters, f.App
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

// WriteApp writes apps/<app>/<app>.yaml under dir, unless the
// app's folder exists; it returns what it made, folders first.
func WriteApp(dir, app string) ([]string, error) {
	if DNSLabel(app) != app {
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

// Unmake removes what WriteApp made, the file then its folders.
func Unmake(made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		_ = os.Remove(made[i])
	}
}
