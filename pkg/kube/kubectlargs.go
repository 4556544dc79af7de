package kube

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// CheckKubectlArgs refuses the kubectl flags that would send each
// cluster's kubectl to another cluster than the one whose context (and
// identity pins) kubectl fleet gives it. Arguments after kubectl's own --
// (a container's command) are not kubectl's.
func CheckKubectlArgs(args []string) error {
	for _, a := range args {
		var name string
		switch {
		case a == "--":
			return nil
		case strings.HasPrefix(a, "--"):
			name, _, _ = strings.Cut(a[2:], "=")
		case strings.HasPrefix(a, "-s"): // -s is only ever kubectl's --server
			name = "server"
		}
		switch name {
		case "context", "kubeconfig":
			return fmt.Errorf("--%s after --: kubectl fleet gives each cluster's kubectl its own; select clusters with -c/--cluster, -g/--group, -l/--selector or --kube-context before --", name)
		case "cluster":
			return fmt.Errorf("--cluster after -- is kubectl's, a kubeconfig cluster for every cluster's kubectl; select fleet clusters with -c/--cluster before --")
		case "server":
			return fmt.Errorf("--server/-s after -- would point every cluster's kubectl at one server")
		}
	}
	return nil
}

// KubectlArgs are the flags each cluster's kubectl gets (kubectl fleet
// exec): its context and kubeconfig, and every kubectl flag the user gave
// kubectl fleet (cf, and -v as logLevel), so that none is accepted and
// dropped.
func KubectlArgs(cf *genericclioptions.ConfigFlags, f *fleet.Fleet, c *fleet.Cluster, logLevel int) []string {
	args := []string{"--context", ContextOf(c)}
	if kc := KubeconfigPath(cf, f, c); kc != "" {
		args = append(args, "--kubeconfig", kc)
	}
	set := func(flag string, v *string) {
		if v != nil && *v != "" {
			args = append(args, flag, *v)
		}
	}
	set("--as", cf.Impersonate)
	set("--as-uid", cf.ImpersonateUID)
	if cf.ImpersonateGroup != nil {
		for _, g := range *cf.ImpersonateGroup {
			args = append(args, "--as-group", g)
		}
	}
	return append(args, KubectlSharedArgs(cf, logLevel)...)
}

// KubectlSharedArgs are the flags of KubectlArgs that do not say which
// cluster, or as whom: the namespace, the request timeout, the cache
// folder and -v. A kubeconfig that says the rest (ReadOnlyKubeconfig)
// takes these.
func KubectlSharedArgs(cf *genericclioptions.ConfigFlags, logLevel int) []string {
	var args []string
	if ns := cf.Namespace; ns != nil && *ns != "" {
		args = append(args, "--namespace", *ns)
	}
	if cf.Timeout != nil && *cf.Timeout != "" && *cf.Timeout != "0" {
		args = append(args, "--request-timeout", *cf.Timeout)
	}
	if cf.CacheDir != nil && *cf.CacheDir != "" && *cf.CacheDir != defaultCacheDir() {
		args = append(args, "--cache-dir", *cf.CacheDir)
	}
	if logLevel > 0 {
		args = append(args, "-v", strconv.Itoa(logLevel))
	}
	return args
}
