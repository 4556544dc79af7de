package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Kubectl is the kubectl that exec runs: $KUBECTL, else kubectl on
// PATH.
func Kubectl() (string, error) {
	if kubectl := os.Getenv("KUBECTL"); kubectl != "" {
		return kubectl, nil
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		return "", fmt.Errorf("kubectl not found on PATH (or set $KUBECTL): %w", err)
	}
	return kubectl, nil
}

// Exec is a kubectl command run once per cluster (kubectl fleet exec).
type Exec struct {
	// Kubectl is the kubectl to run (Kubectl); Args the user's
	// arguments, given after each cluster's own flags (KubectlArgs).
	Kubectl string
	Args    []string
	// Flags are kubectl fleet's kubectl flags, Sources the clusters'
	// kubeconfigFrom, LogLevel its -v.
	Flags    *genericclioptions.ConfigFlags
	Sources  *KubeconfigSources
	LogLevel int
	// AllowWrites gives a delivered cluster's kubectl its context as it
	// is; without it, one that reads only (ReadOnlyKubeconfig).
	AllowWrites bool
	// Parallel is how many clusters run the command at once.
	Parallel int
	// Prefix names each cluster's lines; Stdout and Stderr get them,
	// apart.
	Prefix         *output.Prefixer
	Stdout, Stderr io.Writer
}

// Run runs the command on every one of clusters, each connected and its
// identity pins verified first (Each): kubectl is never run on a cluster
// that moved. Every line it prints is prefixed with its cluster; a
// command that fails is its cluster's error, "exit status N".
func (e Exec) Run(ctx context.Context, conn Connector, f *fleet.Fleet, clusters []*fleet.Cluster) []runner.Outcome {
	stdout, stderr := output.NewSyncWriter(e.Stdout), output.NewSyncWriter(e.Stderr)
	return Each(ctx, conn, f, clusters, e.Parallel, func(ctx context.Context, c *fleet.Cluster, _ *Client) error {
		args := KubectlArgs(e.Flags, f, c, e.LogLevel)
		if f.DeliveryOf(c) != nil && !e.AllowWrites {
			path, stop, err := ReadOnlyKubeconfig(e.Flags, e.Sources, f, c)
			if err != nil {
				return err
			}
			defer stop()
			args = append([]string{"--kubeconfig", path}, KubectlSharedArgs(e.Flags, e.LogLevel)...)
		}
		cmd := exec.CommandContext(ctx, e.Kubectl, append(args, e.Args...)...)
		out, errOut := output.NewPrefixWriter(stdout, e.Prefix.Prefix(c.Name)), output.NewPrefixWriter(stderr, e.Prefix.Prefix(c.Name))
		cmd.Stdout, cmd.Stderr = out, errOut
		err := cmd.Run()
		_ = out.Close()
		_ = errOut.Close()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("exit status %d", ee.ExitCode())
		}
		return err
	})
}
