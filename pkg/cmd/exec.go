package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// ExecOptions are the options of "kubectl fleet exec".
type ExecOptions struct {
	*GlobalOptions
	SelectOptions
	Parallel int
	// AllowWrites gives a delivered cluster's kubectl its context as it
	// is; without it, one that reads only (kube.ReadOnlyKubeconfig).
	AllowWrites bool
	Args        []string
}

// NewCmdExec returns the exec command.
func NewCmdExec(g *GlobalOptions) *cobra.Command {
	o := &ExecOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "exec [flags] -- KUBECTL-ARGS...",
		Short: "Run a kubectl command on every selected cluster",
		Long: `Run kubectl with the given arguments once per selected cluster, with that
cluster's --context (and --kubeconfig when it has its own), --parallel
clusters at once. Every line of output is prefixed with its cluster; standard
output and standard error stay apart. Identity pins are verified first, since
the command may write. The kubectl run is $KUBECTL, else kubectl on PATH.
kubectl fleet's -n, --as, --as-group, --as-uid, --request-timeout,
--cache-dir and --v reach it; --context, --kubeconfig, --cluster and
--server/-s among KUBECTL-ARGS are refused, since they would point every
cluster's kubectl elsewhere. A cluster delivered through a registry is
never written to but by its Flux: its kubectl reaches it through kubectl
fleet, which passes reads only (a write is refused with Forbidden) and
keeps the context's credentials to itself, unless --allow-writes.

Exit codes:
  0  the command succeeded on every cluster
  1  it failed on some cluster (each one's exit code is in the summary)`,
		Example: `  kubectl fleet exec -- get pods -A
  kubectl fleet exec -g production --parallel 2 -- rollout status deploy/web -n web`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return fmt.Errorf("give the kubectl arguments after --, e.g. kubectl fleet exec -- get pods")
			}
			if o.Parallel < 1 {
				return fmt.Errorf("--parallel must be at least 1")
			}
			if err := kube.CheckKubectlArgs(args); err != nil {
				return err
			}
			o.Args = args
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	cmd.Flags().IntVar(&o.Parallel, "parallel", 5, "clusters the command runs on at once")
	cmd.Flags().BoolVar(&o.AllowWrites, "allow-writes", false, "give a delivered cluster's kubectl its context as it is, which may write (by default it only reads)")
	return cmd
}

// Run runs the command everywhere (kube.Exec), and sums it up.
func (o *ExecOptions) Run(ctx context.Context) error {
	f, clusters, err := o.reached(ctx, o.Selection)
	if err != nil {
		return err
	}
	kubectl, err := kube.Kubectl()
	if err != nil {
		return err
	}
	prefix := o.prefixer(clusters)
	e := kube.Exec{Kubectl: kubectl, Args: o.Args, Flags: o.ConfigFlags, Sources: &o.sources, LogLevel: o.LogLevel, AllowWrites: o.AllowWrites, Parallel: o.Parallel, Prefix: prefix, Stdout: o.Out, Stderr: o.ErrOut}
	outcomes := e.Run(ctx, connector{o.GlobalOptions}, f, clusters)
	failed := summary.Each(o.ErrOut, prefix, outcomes, func(oc runner.Outcome) string {
		if oc.Err != nil {
			return ""
		}
		return "ok"
	}, "")
	return summary.Verdict(ctx, failed, len(outcomes), "failed")
}
