package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
)

// runChecks runs the checks of the cluster's group (groups[].verify), one
// after the other, and returns the first failure. Each runs on this
// machine with a kubeconfig that reaches only this cluster.
func (g *GlobalOptions) runChecks(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster, cluster render.Cluster, p *printer, pr *progress, tally *counts, gates *rollout.Gates) error {
	grp := f.Group(c.Group)
	if grp == nil || len(grp.Verify) == 0 {
		return nil
	}
	kubeconfig, cleanup, err := singleContextKubeconfig(g, f, c)
	if err != nil {
		gates.Fail("", reason("checks", err))
		return fmt.Errorf("checks: %w", err)
	}
	defer cleanup()
	w := p.cluster(c.Name)
	for _, chk := range grp.Verify {
		pr.stage(c.Name, "check %s", chk.Name)
		start := time.Now()
		err := runCheck(ctx, f, chk, kubeconfig, checkEnv(cluster), w, p.json)
		ev := rollout.CheckEvent{Type: "check", Cluster: c.Name, Check: chk.Name, State: passed(err), Seconds: time.Since(start).Seconds(), Error: errString(err)}
		tally.gate(c.Name, "check "+chk.Name+" "+ev.State)
		p.emit(ev)
		if err != nil {
			gates.Fail("", reason("check "+chk.Name, err))
			return fmt.Errorf("check %s: %w", chk.Name, err)
		}
		gates.Pass("", "check "+chk.Name)
	}
	return nil
}

func runCheck(ctx context.Context, f *fleet.Fleet, chk fleet.Check, kubeconfig string, env []string, w io.Writer, quiet bool) error {
	timeout := chk.Timeout
	if timeout == 0 {
		timeout = fleet.DefaultCheckTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	program := chk.Command[0]
	if strings.ContainsRune(program, '/') && !filepath.IsAbs(program) {
		program = filepath.Join(f.Dir, program)
	}
	cmd := exec.CommandContext(ctx, program, chk.Command[1:]...)
	cmd.Dir = f.Dir
	cmd.Env = append(withoutEnv(os.Environ(), "KUBECONFIG"), append(env, "KUBECONFIG="+kubeconfig)...)
	cmd.WaitDelay = 5 * time.Second
	if quiet {
		w = io.Discard
	}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("did not finish within %s", timeout)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("exit status %d", ee.ExitCode())
		}
		return err
	}
	return nil
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
	tmp, err := os.CreateTemp("", "kubectl-fleet-check-*.kubeconfig")
	if err != nil {
		return "", nil, err
	}
	_ = tmp.Close()
	cleanup := func() { _ = os.Remove(tmp.Name()) }
	if err := clientcmd.WriteToFile(raw, tmp.Name()); err != nil {
		cleanup()
		return "", nil, err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		cleanup()
		return "", nil, err
	}
	return tmp.Name(), cleanup, nil
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

var notEnvChar = regexp.MustCompile(`[^A-Z0-9_]`)

// checkEnv describes the cluster to a check with the variables its
// manifests get (render.VariablesOf): FLEET_CLUSTER_NAME, _GROUP, _CONTEXT,
// FLEET_NAME, and every scalar attribute as FLEET_ATTR_<KEY>.
func checkEnv(c render.Cluster) []string {
	vars := render.VariablesOf(&c)
	env := []string{"FLEET_CLUSTER_NAME=" + c.Name, "FLEET_CLUSTER_GROUP=" + c.Group, "FLEET_CLUSTER_CONTEXT=" + c.Context, "FLEET_NAME=" + c.Fleet}
	for _, k := range slices.Sorted(maps.Keys(c.Attributes)) {
		switch c.Attributes[k].(type) {
		case nil, map[string]any, []any:
		default:
			env = append(env, "FLEET_ATTR_"+notEnvChar.ReplaceAllString(strings.ToUpper(k), "_")+"="+vars.Text[k])
		}
	}
	return env
}

// passed is a gate's outcome in a word.
func passed(err error) string {
	if err != nil {
		return "failed"
	}
	return "passed"
}

func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}
