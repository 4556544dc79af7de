package kube

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// NewConfigFlags returns the kubectl connection flags the plugin offers:
// --kubeconfig, --request-timeout, --as, --as-group, --as-uid, --cache-dir
// and -n/--namespace. --cluster, --context and --user are left out (each
// fleet cluster names its own context, and --cluster names a fleet
// cluster), and so are the flags that would point every cluster at one
// server or credential.
func NewConfigFlags() *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(true)
	f.ClusterName, f.AuthInfoName, f.Context = nil, nil, nil
	f.APIServer, f.TLSServerName, f.Insecure = nil, nil, nil
	f.CertFile, f.KeyFile, f.CAFile, f.BearerToken = nil, nil, nil, nil
	f.Username, f.Password, f.ImpersonateUserExtra = nil, nil, nil
	f.DisableCompression, f.ProxyURL = nil, nil
	return f
}

// ForCluster returns a ConfigFlags of the cluster's own: its kubeconfig and
// context, with the shared flags (timeout, impersonation, cache folder)
// copied. Each cluster so gets its own REST mapper and discovery cache.
// A delivered cluster's client only reads (readOnly).
func ForCluster(base *genericclioptions.ConfigFlags, f *fleet.Fleet, c *fleet.Cluster) *genericclioptions.ConfigFlags {
	out := genericclioptions.NewConfigFlags(true)
	kc := KubeconfigPath(base, f, c)
	ctx := ContextOf(c)
	if f.DeliveryOf(c) != nil {
		out.WrapConfigFn = readOnly(c.Name)
	}
	out.KubeConfig = &kc
	out.Context = &ctx
	copyString(&out.CacheDir, base.CacheDir)
	copyString(&out.Timeout, base.Timeout)
	copyString(&out.Impersonate, base.Impersonate)
	copyString(&out.ImpersonateUID, base.ImpersonateUID)
	copyString(&out.Namespace, base.Namespace)
	if base.ImpersonateGroup != nil {
		g := append([]string(nil), *base.ImpersonateGroup...)
		out.ImpersonateGroup = &g
	}
	return out
}

func copyString(dst **string, src *string) {
	if src != nil {
		v := *src
		*dst = &v
	}
}

// KubeconfigPath is the kubeconfig file of a cluster: its own kubeconfig
// or kubeconfigFrom, else the defaults', else --kubeconfig, else "" for
// kubectl's loading rules ($KUBECONFIG, then ~/.kube/config). A
// kubeconfigFrom is the temporary file KubeconfigSources.Resolve wrote;
// before that, a name no file has, so that a path that forgot to resolve
// fails to load rather than fall back to another kubeconfig.
func KubeconfigPath(base *genericclioptions.ConfigFlags, f *fleet.Fleet, c *fleet.Cluster) string {
	path, from := f.KubeconfigOf(c)
	switch {
	case from != nil && c.ResolvedKubeconfig != "":
		return c.ResolvedKubeconfig
	case from != nil:
		return "(kubeconfigFrom " + from.String() + ", not resolved)"
	case path != "":
		return f.ResolvePath(path)
	}
	if base != nil && base.KubeConfig != nil && *base.KubeConfig != "" {
		return fleet.ExpandHome(*base.KubeConfig)
	}
	return ""
}

// KubeconfigSource names a cluster's kubeconfig for people: its path, or
// for a kubeconfigFrom the source ("env:NAME", "command:program args"),
// never a temporary file or the content.
func KubeconfigSource(base *genericclioptions.ConfigFlags, f *fleet.Fleet, c *fleet.Cluster) string {
	if _, from := f.KubeconfigOf(c); from != nil {
		return from.String()
	}
	return KubeconfigPath(base, f, c)
}

// Kubeconfigs loads kubeconfig files, each once, and is safe for concurrent
// use.
type Kubeconfigs struct {
	mu    sync.Mutex
	cache map[string]*loaded
}

type loaded struct {
	cfg *clientcmdapi.Config
	err error
}

// Load returns the kubeconfig at path, or the one kubectl's loading rules
// give for "".
func (k *Kubeconfigs) Load(path string) (*clientcmdapi.Config, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if l, ok := k.cache[path]; ok {
		return l.cfg, l.err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := rules.Load()
	if err != nil {
		err = fmt.Errorf("loading kubeconfig %s: %w", describe(path), err)
	}
	if k.cache == nil {
		k.cache = map[string]*loaded{}
	}
	k.cache[path] = &loaded{cfg, err}
	return cfg, err
}

// describe names a kubeconfig for messages.
func describe(path string) string {
	if path != "" {
		return path
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		return strings.Join(filepath.SplitList(env), ", ")
	}
	return clientcmd.RecommendedHomeFile
}

// Server returns the API server URL the cluster's context points at.
func Server(cfg *clientcmdapi.Config, context string) string {
	ctx, ok := cfg.Contexts[context]
	if !ok {
		return ""
	}
	if cl, ok := cfg.Clusters[ctx.Cluster]; ok {
		return cl.Server
	}
	return ""
}

// CheckContexts verifies, without contacting any cluster, that each
// cluster's context exists in its kubeconfig. Every problem is reported,
// positioned at the cluster's context field in the fleet file.
func CheckContexts(base *genericclioptions.ConfigFlags, kcs *Kubeconfigs, f *fleet.Fleet, clusters []*fleet.Cluster) error {
	// One cause often explains every problem (a kubeconfig that cannot be
	// read, or the wrong kubeconfig: none of the contexts in it): then it is
	// said once for all its clusters rather than once per cluster.
	type byPath struct {
		users   []*fleet.Cluster
		missing []*fleet.Cluster
		err     error
		errs    fleet.ErrorList
	}
	var (
		paths []string
		seen  = map[string]*byPath{}
		// names says "env:NAME" rather than a temporary file.
		names = map[string]string{}
	)
	display := func(path string) string {
		if n, ok := names[path]; ok {
			return n
		}
		return describe(path)
	}
	for _, c := range clusters {
		if !c.Observed() {
			continue // published to, never read: it has no context to check
		}
		path := KubeconfigPath(base, f, c)
		if _, from := f.KubeconfigOf(c); from != nil {
			names[path] = from.String()
		}
		p := seen[path]
		if p == nil {
			p = &byPath{}
			seen[path] = p
			paths = append(paths, path)
		}
		p.users = append(p.users, c)
		field := fmt.Sprintf("clusters[%d].context", c.Index)
		cfg, err := kcs.Load(path)
		if err != nil {
			p.err = err
			continue
		}
		ctx, ok := cfg.Contexts[c.Context]
		switch {
		case !ok:
			p.missing = append(p.missing, c)
			p.errs = append(p.errs, f.FieldError(field, "context %q not found in kubeconfig %s%s", c.Context, display(path), guess(c.Context, cfg.Contexts)))
		case cfg.Clusters[ctx.Cluster] == nil:
			p.errs = append(p.errs, f.FieldError(field, "context %q refers to cluster %q, which kubeconfig %s does not define", c.Context, ctx.Cluster, display(path)))
		}
	}
	var list fleet.ErrorList
	for _, path := range paths {
		p := seen[path]
		first := fmt.Sprintf("clusters[%d].context", p.users[0].Index)
		switch {
		case p.err != nil && len(p.users) == 1:
			list = append(list, f.FieldError(first, "%v", p.err))
		case p.err != nil:
			list = append(list, f.FieldError(first, "%v (used by %s)", p.err, clusterList(p.users)))
		case len(p.missing) > 2 && len(p.missing) == len(p.users) && !exists(describe(path)):
			list = append(list, f.FieldError(first, "kubeconfig %s does not exist (used by %s): is $KUBECONFIG or --kubeconfig right?", display(path), clusterList(p.users)))
		case len(p.missing) > 2 && len(p.missing) == len(p.users):
			cfg, _ := kcs.Load(path)
			list = append(list, f.FieldError(first, "kubeconfig %s has none of the contexts of %s (%s); it has %s: is $KUBECONFIG or --kubeconfig right?",
				display(path), clusterList(p.users), contextList(p.users), ContextList(cfg.Contexts)))
		default:
			list = append(list, p.errs...)
		}
	}
	list = append(list, oneEntryPerServer(base, kcs, f, clusters)...)
	if len(list) == 0 {
		return nil
	}
	return list
}

// oneEntryPerServer refuses two clusters whose contexts point at one API
// server (the URL compared by fleet.ServerKey) unless one says it is the
// other (sameClusterAs): they would share every app's records there.
// When one of the two has a server pin its context no longer matches,
// that entry is the one named (repointed): its context moved, not the
// other's. Contexts that do not resolve are CheckContexts' to report.
func oneEntryPerServer(base *genericclioptions.ConfigFlags, kcs *Kubeconfigs, f *fleet.Fleet, clusters []*fleet.Cluster) fleet.ErrorList {
	type entry struct {
		c   *fleet.Cluster
		url string
	}
	var list fleet.ErrorList
	first := map[string]entry{}
	for _, c := range clusters {
		cfg, err := kcs.Load(KubeconfigPath(base, f, c))
		if err != nil || cfg.Contexts[c.Context] == nil || cfg.Clusters[cfg.Contexts[c.Context].Cluster] == nil {
			continue
		}
		url := cfg.Clusters[cfg.Contexts[c.Context].Cluster].Server
		server := fleet.ServerKey(url)
		other, ok := first[server]
		switch {
		case !ok:
			first[server] = entry{c, url}
		case f.SameCluster(c, other.c):
		case repointed(other.c, server) || repointed(c, server):
			for _, pair := range [][2]entry{{other, {c, url}}, {{c, url}, other}} {
				if repointed(pair[0].c, server) {
					list = append(list, repointedError(f, pair[0].c, pair[1].c, pair[0].url, pair[1].url))
				}
			}
		default:
			list = append(list, f.FieldError(fmt.Sprintf("clusters[%d].context", c.Index), "context %q points at %s, as cluster %s's context %q does: two entries of one API server would share every app's records there; remove one, or say sameClusterAs: %s", c.Context, url, other.c.Name, other.c.Context, other.c.Name))
		}
	}
	return list
}

// repointed reports whether c's server pin names another server than
// the one its context points at (server, as fleet.ServerKey gives it).
func repointed(c *fleet.Cluster, server string) bool {
	return c.Server != "" && fleet.ServerKey(c.Server) != server
}

// repointedError says that moved's context reaches url, not the server
// pinned for it, and that this is other's server (its context's URL
// otherURL); then the one-server rule, which holds if moved really is
// that server now.
func repointedError(f *fleet.Fleet, moved, other *fleet.Cluster, url, otherURL string) *fleet.FieldError {
	return f.FieldError(fmt.Sprintf("clusters[%d].context", moved.Index),
		"context %q now points at %s, not at the server pinned for it (%s); that is cluster %s's server (%s): point the context back at %s; if %s really moved there, it is one API server with %s, which would share every app's records: remove one, or say sameClusterAs: %s",
		moved.Context, url, pins(moved.Server, moved.UID), other.Name, pins(otherURL, other.UID), moved.Server, moved.Name, other.Name, other.Name)
}

// pins is "server: s, uid: u", without what is empty.
func pins(server, uid string) string {
	if uid == "" {
		return "server: " + server
	}
	return "server: " + server + ", uid: " + uid
}

// exists reports whether any file of a kubeconfig path list exists.
func exists(list string) bool {
	for _, p := range strings.Split(list, ", ") {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// clusterList names clusters compactly: "3 clusters: a, b, c", or the first
// few and how many more.
func clusterList(cs []*fleet.Cluster) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return fmt.Sprintf("%d clusters: %s", len(cs), abbreviate(names))
}

func contextList(cs []*fleet.Cluster) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Context
	}
	return "contexts " + abbreviate(names)
}

// ContextList names a kubeconfig's contexts: "contexts a, b, c, d, e and
// 3 more", sorted; "no contexts at all".
func ContextList[V any](contexts map[string]V) string {
	if len(contexts) == 0 {
		return "no contexts at all"
	}
	return "contexts " + abbreviate(slices.Sorted(maps.Keys(contexts)))
}

// guess says, after a context not found, the one it may have meant and
// those there are: ": did you mean \"prod\"? (it has contexts dev,
// prod)".
func guess[V any](name string, contexts map[string]V) string {
	if hint := output.DidYouMean(name, slices.Sorted(maps.Keys(contexts))); hint != "" {
		return fmt.Sprintf(": %s (it has %s)", hint, ContextList(contexts))
	}
	return " (it has " + ContextList(contexts) + ")"
}

// abbreviate lists the first five names and counts the rest.
func abbreviate(names []string) string {
	const show = 5
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:show], ", "), len(names)-show)
}
