package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
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
func ForCluster(base *genericclioptions.ConfigFlags, f *fleet.Fleet, c *fleet.Cluster) *genericclioptions.ConfigFlags {
	out := genericclioptions.NewConfigFlags(true)
	kc := KubeconfigPath(base, f, c)
	ctx := c.Context
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
// field, else --kubeconfig, else "" for kubectl's loading rules
// ($KUBECONFIG, then ~/.kube/config).
func KubeconfigPath(base *genericclioptions.ConfigFlags, f *fleet.Fleet, c *fleet.Cluster) string {
	if c.Kubeconfig != "" {
		return f.ResolvePath(c.Kubeconfig)
	}
	if base != nil && base.KubeConfig != nil && *base.KubeConfig != "" {
		return fleet.ExpandHome(*base.KubeConfig)
	}
	return ""
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
	var list fleet.ErrorList
	for _, c := range clusters {
		field := fmt.Sprintf("clusters[%d].context", c.Index)
		path := KubeconfigPath(base, f, c)
		cfg, err := kcs.Load(path)
		if err != nil {
			list = append(list, f.FieldError(field, "%v", err))
			continue
		}
		ctx, ok := cfg.Contexts[c.Context]
		switch {
		case !ok:
			list = append(list, f.FieldError(field, "context %q not found in kubeconfig %s", c.Context, describe(path)))
		case cfg.Clusters[ctx.Cluster] == nil:
			list = append(list, f.FieldError(field, "context %q refers to cluster %q, which kubeconfig %s does not define", c.Context, ctx.Cluster, describe(path)))
		}
	}
	if len(list) == 0 {
		return nil
	}
	return list
}
