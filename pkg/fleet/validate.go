package fleet

import (
	"cmp"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/jsonpath"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

// validate checks everything that can be checked without a cluster and
// fills defaults. Every problem is added to e.
func (f *Fleet) validate(e *errs) {
	if f.APIVersion != APIVersion {
		e.add("apiVersion", "want %q, got %q", APIVersion, f.APIVersion)
	}
	if f.Kind != Kind {
		e.add("kind", "want %q, got %q", Kind, f.Kind)
	}
	if f.Metadata.Name == "" {
		e.add("metadata.name", "required")
	} else if msgs := validation.IsDNS1123Label(f.Metadata.Name); len(msgs) > 0 {
		e.add("metadata.name", "%q is not a valid name: %s", f.Metadata.Name, strings.Join(msgs, "; "))
	}
	validateAttributesFrom(e, "defaults.attributesFrom", f.Defaults.AttributesFrom)
	validateKubeconfig(e, "defaults", f.Defaults.Kubeconfig, f.Defaults.KubeconfigFrom)
	validateOnFailure(e, "onFailure", f.OnFailure)

	groups := f.validateGroups(e)
	f.validateClusters(e, groups)
	f.validateBatchSelectors(e)
	validateIgnoreRules(e, "ignoreDifferences", f.IgnoreDifferences)
	f.validateApprovers(e)
	f.validateNotify(e, "notify", f.Notify)
	apps := map[string]bool{}
	for i := range f.Apps {
		a := &f.Apps[i]
		p := fmt.Sprintf("apps[%d]", i)
		validateName(e, p+".name", a.Name)
		if apps[a.Name] && a.Name != "" {
			e.add(p+".name", "duplicate app name %q", a.Name)
		}
		apps[a.Name] = true
		f.validateApp(e, p, a, groups)
	}
	f.validateDependencies(e)
}

// validateGroups checks the groups and returns their names.
func (f *Fleet) validateGroups(e *errs) map[string]bool {
	groups := map[string]bool{}
	for i, g := range f.Groups {
		p := fmt.Sprintf("groups[%d]", i)
		validateName(e, p+".name", g.Name)
		if groups[g.Name] && g.Name != "" {
			e.add(p+".name", "duplicate group name %q", g.Name)
		}
		groups[g.Name] = true
		validateAmount(e, p+".maxParallel", g.MaxParallel)
		validateAmount(e, p+".maxFailures", g.MaxFailures)
		validateBatches(e, p, g)
		validateWindows(e, p, g.Windows)
		switch a := g.Approval; {
		case a.Expires < 0:
			e.add(p+".approval.expires", "must not be negative, got %s", a.Expires)
		case a.Expires > 0 && !a.Required:
			e.add(p+".approval.expires", "an expiry without required: true approves nothing: say required: true, or leave expires out")
		}
		validateAttributesFrom(e, p+".attributesFrom", g.AttributesFrom)
		f.validateNotify(e, p+".notify", g.Notify)
		if g.Soak < 0 {
			e.add(p+".soak", "must not be negative, got %s", g.Soak)
		}
		if g.BatchSoak < 0 {
			e.add(p+".batchSoak", "must not be negative, got %s", g.BatchSoak)
		}
		f.validateChecks(e, p+".verify", g.Verify)
		f.validateAnalyses(e, p, g)
		validateOnFailure(e, p+".onFailure", g.OnFailure)
		f.validateDelivery(e, p+".delivery", g.Delivery)
	}
	f.validateAfter(e, groups)
	return groups
}

// validateAmount checks a number of clusters or a percentage.
func validateAmount(e *errs, p string, a Amount) {
	switch {
	case a.N < 0:
		e.add(p, "must not be negative, got %s", a)
	case a.Percent && a.N > 100:
		e.add(p, "a percentage of the group's clusters is at most 100%%, got %s", a)
	}
}

// validateBatches checks a group's batches: each a selector or a size,
// names unique.
func validateBatches(e *errs, p string, g Group) {
	names := map[string]bool{}
	for i, b := range g.Batches {
		bp := fmt.Sprintf("%s.batches[%d]", p, i)
		switch {
		case (b.Selector == "") == (b.Size == nil):
			e.add(bp, "give a batch either a selector (canary=true) or a size (1, 10%%)")
		case b.Selector != "":
			if _, err := labels.Parse(b.Selector); err != nil {
				e.add(bp+".selector", "%v", err)
			}
		case e.has(bp + ".size"):
			// said when it was read
		case b.Size.N < 1:
			e.add(bp+".size", "must be at least 1 (or 1%%), got %s", b.Size)
		default:
			validateAmount(e, bp+".size", *b.Size)
		}
		if b.Name != "" {
			validateName(e, bp+".name", b.Name)
		}
		if n := batchName(b, i); names[n] {
			e.add(bp+".name", "duplicate batch name %q", n)
		} else {
			names[n] = true
		}
	}
}

// validateBatchSelectors refuses a selector batch that matches none of
// its group's clusters unless it is optional: "canary=ture" would drop
// the canary, and the rollout would go on without it.
func (f *Fleet) validateBatchSelectors(e *errs) {
	for i := range f.Groups {
		g := &f.Groups[i]
		members := f.groupClusters(g)
		for j, b := range g.Batches {
			bp := fmt.Sprintf("groups[%d].batches[%d]", i, j)
			if b.Selector == "" || b.Size != nil || b.Optional || e.has(bp+".selector") {
				continue
			}
			sel, err := labels.Parse(b.Selector)
			if err != nil {
				continue
			}
			if slices.ContainsFunc(members, func(c *Cluster) bool { return sel.Matches(labels.Set(c.Labels)) }) {
				continue
			}
			e.add(bp+".selector", "%q matches none of group %s's %d clusters (their labels: %s): a typo? Say optional: true if the batch may be empty", b.Selector, g.Name, len(members), labelsOf(members))
		}
	}
}

// labelsOf lists the labels clusters carry, "canary=true, region=eu",
// sorted, at most ten.
func labelsOf(clusters []*Cluster) string {
	var all []string
	for _, c := range clusters {
		for k, v := range c.Labels {
			if l := k + "=" + v; !slices.Contains(all, l) {
				all = append(all, l)
			}
		}
	}
	if len(all) == 0 {
		return "none"
	}
	slices.Sort(all)
	if len(all) > 10 {
		all = append(all[:10], "…")
	}
	return strings.Join(all, ", ")
}

// validateAfter checks that every group's after: names groups, not the
// group itself, and that no group waits for itself through others.
func (f *Fleet) validateAfter(e *errs, groups map[string]bool) {
	for i, g := range f.Groups {
		if g.After == nil {
			continue
		}
		for j, a := range *g.After {
			ap := fmt.Sprintf("groups[%d].after[%d]", i, j)
			switch {
			case a == g.Name:
				e.add(ap, "group %s cannot wait for itself", a)
			case !groups[a]:
				e.add(ap, "no group %q (groups: %s)", a, strings.Join(f.groupNames(), ", "))
			}
		}
	}
	for i := range f.Groups {
		if c := f.cycle(i); c != nil && len(c) > 2 {
			e.add(fmt.Sprintf("groups[%d].after", i), "groups wait for each other (after:) in a cycle: %s", strings.Join(c, " → "))
			return // one cycle said once, not by each of its groups
		}
	}
}

// validateClusters checks the clusters (and numbers them), their groups
// among groups.
func (f *Fleet) validateClusters(e *errs, groups map[string]bool) {
	clusters := map[string]bool{}
	for i := range f.Clusters {
		c := &f.Clusters[i]
		c.Index = i
		p := fmt.Sprintf("clusters[%d]", i)
		validateName(e, p+".name", c.Name)
		if clusters[c.Name] && c.Name != "" {
			e.add(p+".name", "duplicate cluster name %q", c.Name)
		}
		clusters[c.Name] = true
		switch {
		case c.Group == "":
			e.add(p+".group", "required")
		case !groups[c.Group]:
			e.add(p+".group", "unknown group %q (groups: %s)", c.Group, strings.Join(f.groupNames(), ", "))
		}
		f.validateDelivery(e, p+".delivery", c.Delivery)
		f.validateContext(e, p, c)
		for k, v := range c.Labels {
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				e.add(p+".labels."+k, "invalid label key %q: %s", k, strings.Join(msgs, "; "))
			}
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
				e.add(p+".labels."+k, "invalid label value %q: %s", v, strings.Join(msgs, "; "))
			}
		}
		if c.Server != "" {
			if u, err := url.Parse(c.Server); err != nil || u.Scheme == "" || u.Host == "" {
				e.add(p+".server", "%q is not a URL such as https://10.0.0.1:6443", c.Server)
			}
		}
		validateAttributesFrom(e, p+".attributesFrom", c.AttributesFrom)
		validateKubeconfig(e, p, c.Kubeconfig, c.KubeconfigFrom)
	}
	f.validateSameCluster(e, clusters)
}

// validateContext checks that c has a context, unless it is delivered
// through a registry and nothing needs to read it before rendering.
func (f *Fleet) validateContext(e *errs, p string, c *Cluster) {
	switch {
	case c.Context != "":
	case f.DeliveryOf(c) == nil:
		e.add(p+".context", "required (a cluster delivered through a registry may go without one: delivery)")
	case len(f.AttributesFrom(c)) > 0:
		e.add(p+".context", "required: attributesFrom reads the cluster before rendering (a read-only context is enough)")
	case c.Kubeconfig != "" || c.KubeconfigFrom != nil:
		e.add(p+".context", "required with a kubeconfig: the context to use in it")
	case c.Server != "" || c.UID != "":
		e.add(p+".context", "required with a server or uid pin: they are checked through it")
	}
}

// validateSameCluster refuses two entries with the same server or uid
// pin, unless one says it is the other (sameClusterAs), and a
// sameClusterAs that names no other cluster.
func (f *Fleet) validateSameCluster(e *errs, clusters map[string]bool) {
	servers, uids := map[string]*Cluster{}, map[string]*Cluster{}
	for i := range f.Clusters {
		c := &f.Clusters[i]
		p := fmt.Sprintf("clusters[%d]", i)
		switch {
		case c.SameClusterAs == c.Name && c.Name != "":
			e.add(p+".sameClusterAs", "a cluster is always itself: name the other entry of its API server")
		case c.SameClusterAs != "" && !clusters[c.SameClusterAs]:
			e.add(p+".sameClusterAs", "no cluster %q", c.SameClusterAs)
		}
		for _, pin := range []struct {
			field, value string
			seen         map[string]*Cluster
		}{{"server", ServerKey(c.Server), servers}, {"uid", c.UID, uids}} {
			if pin.value == "" {
				continue
			}
			if other := pin.seen[pin.value]; other != nil && !f.SameCluster(c, other) {
				e.add(p+"."+pin.field, "%s is also cluster %s's (clusters[%d]): two entries of one API server would share every app's records there; remove one, or say sameClusterAs: %s", pin.field, other.Name, other.Index, other.Name)
				continue
			}
			pin.seen[pin.value] = c
		}
	}
}

// SameCluster reports whether a and b are entries of one API server on
// purpose: one names the other, or both the same, in sameClusterAs.
func (f *Fleet) SameCluster(a, b *Cluster) bool {
	root := func(c *Cluster) string { return cmp.Or(c.SameClusterAs, c.Name) }
	return root(a) == root(b) || a.SameClusterAs == b.Name || b.SameClusterAs == a.Name
}

// ServerKey is an API server URL as compared: its scheme and host lower
// case, without a trailing slash.
func ServerKey(server string) string {
	u, err := url.Parse(strings.TrimSuffix(server, "/"))
	if err != nil || u.Host == "" {
		return server
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return u.String()
}

// validateApp checks one app at p: its source, namespace, targets, ignore
// rules and tests.
func (f *Fleet) validateApp(e *errs, p string, a *App, groups map[string]bool) {
	f.validateSource(e, p, a)
	if a.Namespace != "" {
		if msgs := validation.IsDNS1123Label(a.Namespace); len(msgs) > 0 {
			e.add(p+".namespace", "invalid namespace %q: %s", a.Namespace, strings.Join(msgs, "; "))
		}
	}
	for j, g := range a.Groups {
		if !groups[g] {
			e.add(fmt.Sprintf("%s.groups[%d]", p, j), "unknown group %q (groups: %s)", g, strings.Join(f.groupNames(), ", "))
		}
	}
	for j, pattern := range a.Clusters {
		if _, err := path.Match(pattern, ""); err != nil {
			e.add(fmt.Sprintf("%s.clusters[%d]", p, j), "invalid pattern %q", pattern)
		} else if len(f.matchClusters(pattern)) == 0 {
			e.add(fmt.Sprintf("%s.clusters[%d]", p, j), "no cluster matches %q", pattern)
		}
	}
	if a.Selector != "" {
		if _, err := labels.Parse(a.Selector); err != nil {
			e.add(p+".selector", "invalid label selector %q: %v", a.Selector, err)
		}
	}
	validateIgnoreRules(e, p+".ignoreDifferences", a.IgnoreDifferences)
	if a.Tests != "" {
		if _, err := os.Stat(f.ResolvePath(a.Tests)); err != nil {
			e.add(p+".tests", "%s does not exist (relative paths start at the fleet file's folder)", a.Tests)
		}
	}
}

func (f *Fleet) validateChecks(e *errs, p string, checks []Check) {
	names := map[string]bool{}
	for i, c := range checks {
		cp := fmt.Sprintf("%s[%d]", p, i)
		switch {
		case c.Name == "":
			e.add(cp+".name", "required")
		case names[c.Name]:
			e.add(cp+".name", "duplicate check name %q", c.Name)
		}
		names[c.Name] = true
		if len(c.Command) == 0 || c.Command[0] == "" {
			e.add(cp+".command", "required: the program and its arguments, such as [./hack/smoke.sh, --fast]")
		}
		if c.Timeout < 0 {
			e.add(cp+".timeout", "must not be negative, got %s", c.Timeout)
		}
	}
}

// validateDependencies refuses unknown apps in dependsOn, and cycles.
func (f *Fleet) validateDependencies(e *errs) {
	index := map[string]int{}
	for i, a := range f.Apps {
		index[a.Name] = i
	}
	for i, a := range f.Apps {
		seen := map[string]bool{}
		for j, d := range a.DependsOn {
			dp := fmt.Sprintf("apps[%d].dependsOn[%d]", i, j)
			_, known := index[d]
			switch {
			case d == a.Name:
				e.add(dp, "an app cannot depend on itself")
			case !known:
				e.add(dp, "unknown app %q (apps: %s)", d, strings.Join(f.appNames(), ", "))
			case seen[d]:
				e.add(dp, "%q is listed twice", d)
			}
			seen[d] = true
		}
	}
	// A cycle is reported once, at the dependsOn of its first app in file
	// order.
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(f.Apps))
	var path []string
	var visit func(i int)
	visit = func(i int) {
		state[i] = visiting
		path = append(path, f.Apps[i].Name)
		for _, d := range f.Apps[i].DependsOn {
			j, ok := index[d]
			if !ok || j == i {
				continue
			}
			switch state[j] {
			case visiting:
				start := slices.Index(path, d)
				cycle := append(slices.Clone(path[start:]), d)
				first := index[cycle[0]]
				for _, name := range cycle[:len(cycle)-1] {
					first = min(first, index[name])
				}
				e.add(fmt.Sprintf("apps[%d].dependsOn", first), "dependency cycle: %s", strings.Join(rotate(cycle, f.Apps[first].Name), " → "))
			case unvisited:
				visit(j)
			}
		}
		path = path[:len(path)-1]
		state[i] = done
	}
	for i := range f.Apps {
		if state[i] == unvisited {
			visit(i)
		}
	}
}

// rotate turns a closed cycle (a → b → a) to start and end at name.
func rotate(cycle []string, name string) []string {
	open := cycle[:len(cycle)-1]
	i := slices.Index(open, name)
	out := append(slices.Clone(open[i:]), open[:i]...)
	return append(out, name)
}

func (f *Fleet) appNames() []string {
	names := make([]string, len(f.Apps))
	for i, a := range f.Apps {
		names[i] = a.Name
	}
	return names
}

// DependencyOrder orders apps so that each comes after the apps it depends
// on, keeping the given order otherwise. Apps not in names are ignored.
func (f *Fleet) DependencyOrder(names []string) []string {
	in := map[string]bool{}
	for _, n := range names {
		in[n] = true
	}
	var out []string
	placed := map[string]bool{}
	var place func(n string, depth int)
	place = func(n string, depth int) {
		if placed[n] || depth > len(f.Apps) {
			return
		}
		if a := f.App(n); a != nil {
			for _, d := range a.DependsOn {
				if in[d] {
					place(d, depth+1)
				}
			}
		}
		placed[n] = true
		out = append(out, n)
	}
	for _, n := range names {
		place(n, 0)
	}
	return out
}

func validateIgnoreRules(e *errs, p string, rules []object.IgnoreRule) {
	for i, r := range rules {
		rp := fmt.Sprintf("%s[%d]", p, i)
		if r.Kind == "" {
			e.add(rp+".kind", "required (a kind such as Deployment, or * for every kind)")
		}
		if len(r.JSONPointers) == 0 {
			e.add(rp+".jsonPointers", "required: the fields to ignore, such as /spec/replicas")
		}
		for j, ptr := range r.JSONPointers {
			if _, err := object.ParsePointer(ptr); err != nil {
				e.add(fmt.Sprintf("%s.jsonPointers[%d]", rp, j), "%v", err)
			}
		}
	}
}

func (f *Fleet) validateSource(e *errs, p string, a *App) {
	// A source given counts as given even when it did not decode (a
	// typo under helm): its own error says what is wrong with it.
	given := func(field string) bool { _, ok := e.pos[p+"."+field]; return ok }
	n := 0
	if a.Helm != nil {
		f.validateHelm(e, p+".helm", a.Helm)
	}
	if given("helm") {
		n++
	}
	for _, s := range []struct{ field, value string }{{"kustomize", a.Kustomize}, {"jsonnet", a.Jsonnet}, {"manifests", a.Manifests}} {
		if !given(s.field) {
			continue
		}
		n++
		if s.value == "" {
			continue // null, or it did not decode: said already
		}
		if strings.HasPrefix(s.value, OCIScheme) {
			validateOCIRef(e, p+"."+s.field, s.value)
			continue
		}
		if _, err := os.Stat(f.ResolvePath(s.value)); err != nil {
			e.add(p+"."+s.field, "%s does not exist (relative paths start at the fleet file's folder)", s.value)
		}
	}
	switch {
	case n == 0:
		e.add(p, "one of kustomize, jsonnet, manifests or helm is required")
	case n > 1:
		e.add(p, "only one of kustomize, jsonnet, manifests or helm may be set")
	}
	f.validateOCI(e, p, a)
	if len(a.JPath) > 0 && a.Jsonnet == "" {
		e.add(p+".jpath", "only applies to a jsonnet app")
	}
	if a.CreateNamespace != nil && *a.CreateNamespace && a.Namespace == "" {
		e.add(p+".createNamespace", "needs the app's namespace: set namespace too")
	}
	if a.Substitute != nil && a.Kustomize == "" && a.Manifests == "" {
		e.add(p+".substitute", "only applies to a kustomize or manifests app (jsonnet has no ${...}; a chart's values files are its own)")
	}
}

// validateOCIRef checks an oci:// source's reference: a registry, a
// repository and a tag or digest.
func validateOCIRef(e *errs, field, ref string) {
	rest := strings.TrimPrefix(ref, OCIScheme)
	last := rest[strings.LastIndex(rest, "/")+1:]
	switch {
	case !strings.Contains(rest, "/"):
		e.add(field, "%q names no registry (oci://registry/repository:tag)", ref)
	case !strings.Contains(last, ":") && !strings.Contains(last, "@"):
		e.add(field, "%q has no tag or digest: a run must not pick up a new artifact unasked (…:v1.2.0 or @sha256:…)", ref)
	default:
		if _, err := name.ParseReference(rest, name.StrictValidation); err != nil {
			e.add(field, "%q is not an OCI reference (oci://registry/repository:tag or @sha256:…): %v", ref, err)
		}
	}
}

// validateOCI checks the fields that go with an oci:// source only:
// path, insecure and verify.
func (f *Fleet) validateOCI(e *errs, p string, a *App) {
	oci := a.OCI() != ""
	switch {
	case !oci && a.Path != "":
		e.add(p+".path", "only applies to an oci:// source (a path inside its artifact); a local source's path is its own field")
	case a.Path != "" && (strings.HasPrefix(a.Path, "/") || slices.Contains(strings.Split(filepath.ToSlash(a.Path), "/"), "..")):
		e.add(p+".path", "%q must stay inside the artifact (relative, without ..)", a.Path)
	case strings.HasPrefix(a.Jsonnet, OCIScheme) && a.Path == "":
		e.add(p+".path", "required for a jsonnet app from an oci:// artifact: the .jsonnet file inside it")
	}
	if !oci && a.Insecure {
		e.add(p+".insecure", "only applies to an oci:// source")
	}
	if a.Verify == nil {
		return
	}
	switch {
	case !oci:
		e.add(p+".verify", "only applies to an oci:// source")
	case a.Verify.Provider != "" && a.Verify.Provider != "cosign":
		e.add(p+".verify.provider", "%q is not a provider kubectl fleet verifies with: cosign (with a public key)", a.Verify.Provider)
	case a.Verify.Key == "":
		e.add(p+".verify.key", "required: the public key's file (cosign.pub) the artifact must be signed with")
	default:
		if _, err := os.Stat(f.ResolvePath(a.Verify.Key)); err != nil {
			e.add(p+".verify.key", "%s does not exist (relative paths start at the fleet file's folder)", a.Verify.Key)
		}
	}
}

// validateHelm checks an app's chart: a local one exists, a remote one is
// pinned to a version, values files exist (unless their path holds a
// ${var}, known per cluster).
func (f *Fleet) validateHelm(e *errs, p string, h *Helm) {
	remote := h.Repo != "" || strings.HasPrefix(h.Chart, "oci://")
	switch {
	case h.Chart == "":
		e.add(p+".chart", "required: a local folder or .tgz, an oci:// reference, or a chart name with repo")
	case h.Repo != "" && strings.HasPrefix(h.Chart, "oci://"):
		e.add(p+".repo", "an oci:// chart takes no repo")
	case h.Repo != "" && !strings.HasPrefix(h.Repo, "http://") && !strings.HasPrefix(h.Repo, "https://"):
		e.add(p+".repo", "%q is not an http(s) URL of a chart repository", h.Repo)
	case !remote:
		if _, err := os.Stat(f.ResolvePath(h.Chart)); err != nil {
			e.add(p+".chart", "%s does not exist (relative paths start at the fleet file's folder; a chart of a repository needs repo)", h.Chart)
		}
	}
	if remote && h.Version == "" {
		e.add(p+".version", "required for a chart from a repository or registry: a run must not pick up a new release unasked")
	}
	if h.ReleaseName != "" {
		if msgs := validation.IsDNS1123Subdomain(h.ReleaseName); len(msgs) > 0 || len(h.ReleaseName) > 53 {
			e.add(p+".releaseName", "%q is not a valid release name (a DNS subdomain of at most 53 characters)", h.ReleaseName)
		}
	}
	for i, v := range h.Values {
		if strings.Contains(v, "${") {
			continue
		}
		if _, err := os.Stat(f.ResolvePath(v)); err != nil {
			e.add(fmt.Sprintf("%s.values[%d]", p, i), "%s does not exist (relative paths start at the fleet file's folder)", v)
		}
	}
}

func validateName(e *errs, field, name string) {
	if name == "" {
		e.add(field, "required")
		return
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		e.add(field, "%q is not a valid name: %s", name, strings.Join(msgs, "; "))
	}
}

// validateKubeconfig checks the kubeconfig and kubeconfigFrom of a cluster
// or of the defaults (p).
func validateKubeconfig(e *errs, p, kubeconfig string, from *KubeconfigFrom) {
	if from == nil {
		return
	}
	fp := p + ".kubeconfigFrom"
	if kubeconfig != "" {
		e.add(fp, "only one of kubeconfig and kubeconfigFrom may be set")
	}
	switch {
	case from.Env == "" && from.Command == nil:
		e.add(fp, "one of env and command is required")
	case from.Env != "" && from.Command != nil:
		e.add(fp, "only one of env and command may be set")
	}
	if from.Env != "" && !envName.MatchString(from.Env) {
		e.add(fp+".env", "%q is not an environment variable name such as PROD_KUBECONFIG", from.Env)
	}
	if from.Command != nil && (len(from.Command) == 0 || from.Command[0] == "") {
		e.add(fp+".command", "must be a non-empty list: the program and its arguments, such as [vault, read, -field=kubeconfig, secret/prod]")
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validateAttributesFrom(e *errs, field string, list []AttributeFrom) {
	for i, a := range list {
		p := fmt.Sprintf("%s[%d]", field, i)
		for _, req := range []struct{ field, value string }{{"apiVersion", a.APIVersion}, {"kind", a.Kind}, {"name", a.Name}} {
			if req.value == "" {
				e.add(p+"."+req.field, "required")
			}
		}
		if a.Kind == "Secret" {
			e.add(p+".kind", "attributes are printed by render and diff, so they are not read from Secrets")
		}
		if len(a.Attributes) == 0 {
			e.add(p+".attributes", "required: a mapping of attribute name to JSONPath, e.g. {clusterUID: '{.metadata.uid}'}")
		}
		for k, expr := range a.Attributes {
			if err := jsonpath.New(k).Parse(expr); err != nil {
				e.add(p+".attributes."+k, "invalid JSONPath %q: %v", expr, err)
			}
		}
	}
}

func (f *Fleet) groupNames() []string {
	names := make([]string, len(f.Groups))
	for i, g := range f.Groups {
		names[i] = g.Name
	}
	return names
}

// matchClusters returns the clusters whose names match a glob pattern.
func (f *Fleet) matchClusters(pattern string) []*Cluster {
	var out []*Cluster
	for i := range f.Clusters {
		if ok, _ := path.Match(pattern, f.Clusters[i].Name); ok {
			out = append(out, &f.Clusters[i])
		}
	}
	return out
}

// CheckAppNames says why a name of an app given on the command line
// (--app, --name) is not one, or nil.
func CheckAppNames(names ...string) error {
	for _, name := range names {
		if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
			return fmt.Errorf("%q is not a valid app name: %s", name, strings.Join(msgs, "; "))
		}
	}
	return nil
}
