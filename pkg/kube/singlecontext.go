package kube

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// SingleContextKubeconfig writes a temporary kubeconfig (mode 0600, in
// the folder of sources) whose only and current context is the
// cluster's, with cf's namespace and impersonation, so that a check can
// reach no other cluster and acts as the command acts.
func SingleContextKubeconfig(cf *genericclioptions.ConfigFlags, sources *KubeconfigSources, f *fleet.Fleet, c *fleet.Cluster) (string, func(), error) {
	raw, err := ForCluster(cf, f, c).ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return "", nil, err
	}
	name := ContextOf(c)
	raw.CurrentContext = name
	if err := clientcmdapi.MinifyConfig(&raw); err != nil {
		return "", nil, fmt.Errorf("context %q: %w", name, err)
	}
	if ns := cf.Namespace; ns != nil && *ns != "" {
		raw.Contexts[name].Namespace = *ns
	}
	impersonate(&raw, name, cf)
	// In the folder of the run's temporary kubeconfigs: removed when the
	// check ends, and with the folder when the run ends or is interrupted
	// (a second Ctrl-C, SIGTERM or SIGHUP included).
	path, err := sources.WriteTemp(&raw)
	if err != nil {
		return "", nil, err
	}
	return path, func() { _ = os.Remove(path) }, nil
}

// impersonate writes --as, --as-uid and --as-group into the context's
// user, so that a check acts as the user the command acts as.
func impersonate(raw *clientcmdapi.Config, context string, cf *genericclioptions.ConfigFlags) {
	var as, uid string
	var groups []string
	if cf.Impersonate != nil {
		as = *cf.Impersonate
	}
	if cf.ImpersonateUID != nil {
		uid = *cf.ImpersonateUID
	}
	if cf.ImpersonateGroup != nil {
		groups = *cf.ImpersonateGroup
	}
	if as == "" && uid == "" && len(groups) == 0 {
		return
	}
	ctx := raw.Contexts[context]
	if ctx.AuthInfo == "" {
		ctx.AuthInfo = "kubectl-fleet"
	}
	user := raw.AuthInfos[ctx.AuthInfo]
	if user == nil {
		user = clientcmdapi.NewAuthInfo()
		raw.AuthInfos[ctx.AuthInfo] = user
	}
	user.Impersonate, user.ImpersonateUID, user.ImpersonateGroups = as, uid, append([]string(nil), groups...)
}
