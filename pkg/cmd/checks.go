package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output/progress"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// runChecks runs the checks of the cluster's group (groups[].verify)
// through rollout.Checks, each on this machine with a kubeconfig that
// reaches only this cluster, and returns the first failure.
func (o *ApplyOptions) runChecks(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster, cluster render.Cluster, p *printer, pr *progress.Display, tally *summary.Tally, gates *rollout.Gates) error {
	if !o.checks(f, c) {
		return nil
	}
	grp := f.Group(c.Group)
	kubeconfig, cleanup, err := singleContextKubeconfig(o.GlobalOptions, f, c)
	if err != nil {
		gates.Fail("", "checks: "+err.Error())
		return fmt.Errorf("checks: %w", err)
	}
	defer cleanup()
	out := p.cluster(c.Name)
	if p.json {
		out = io.Discard
	}
	return rollout.Checks{
		Dir: f.Dir, Checks: grp.Verify, Kubeconfig: kubeconfig, Env: rollout.CheckEnv(cluster), Secret: credentialEnvs(f), Out: out,
		Emit: o.events.emit, Gates: gates, Stage: func(stage string) { pr.Stage(c.Name, "%s", stage) },
	}.Run(ctx, c.Name)
}

// singleContextKubeconfig writes a temporary kubeconfig (mode 0600) whose
// only and current context is the cluster's, so that a check can reach no
// other cluster.
func singleContextKubeconfig(g *GlobalOptions, f *fleet.Fleet, c *fleet.Cluster) (string, func(), error) {
	raw, err := kube.ForCluster(g.ConfigFlags, f, c).ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return "", nil, err
	}
	raw.CurrentContext = c.Context
	if err := clientcmdapi.MinifyConfig(&raw); err != nil {
		return "", nil, err
	}
	if ns := g.ConfigFlags.Namespace; ns != nil && *ns != "" {
		raw.Contexts[c.Context].Namespace = *ns
	}
	impersonate(&raw, c.Context, g.ConfigFlags)
	// In the folder of the run's temporary kubeconfigs: removed when the
	// check ends, and with the folder when the run ends or is interrupted
	// (a second Ctrl-C, SIGTERM or SIGHUP included).
	path, err := g.sources.WriteTemp(&raw)
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

// credentialEnvs are the environment variables the fleet's
// kubeconfigFrom reads kubeconfigs from (every cluster's and the
// defaults'): a check, which reaches one cluster, gets none of them.
func credentialEnvs(f *fleet.Fleet) []string {
	var out []string
	for i := range f.Clusters {
		if _, from := f.KubeconfigOf(&f.Clusters[i]); from != nil && from.Env != "" && !slices.Contains(out, from.Env) {
			out = append(out, from.Env)
		}
	}
	return out
}
