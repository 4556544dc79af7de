// Package cmd holds the kubectl fleet commands: each turns flags into
// options, then hands a plain configuration to an engine that never sees
// cobra.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	// Before the kubectl packages: they read no message catalog.
	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/logging"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
	_ "github.com/kubectl-fleet/kubectl-fleet/pkg/untranslated"
)

const rootLong = `kubectl fleet deploys one set of manifests to many clusters safely.

A fleet file (--fleet/-F, else $KUBECTL_FLEET, else ./fleet.yaml) names the
clusters, puts them in ordered groups (staging before production) and gives
each cluster attributes. For every selected cluster, kubectl fleet renders
kustomize, jsonnet, plain manifests or a Helm chart with that cluster's
attributes, then works on the cluster's own kubeconfig context. Every line
of output starts with the cluster it belongs to.

Every command's page, generated from this help:
https://github.com/kubectl-fleet/kubectl-fleet/tree/main/docs/commands

Exit codes:
  0    success
  1    an error, or problems found (vet); diff: differences found
  2    diff: an error (kubectl diff's convention)
  3    done, except for clusters --skip-unreachable skipped
  4    apply, reconcile --once: a group awaits approval (kubectl fleet approve)
  130  interrupted (Ctrl-C)`

// NewCmdFleet returns the root command.
// Temporary kubeconfigs written for kubeconfigFrom are removed by Execute;
// whoever runs the command otherwise leaves them in the temporary folder.
func NewCmdFleet(streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdFleet(&GlobalOptions{IOStreams: streams, ConfigFlags: kube.NewConfigFlags()})
}

func newCmdFleet(g *GlobalOptions) *cobra.Command {
	// Whatever reaches standard output and error passes the mask of the
	// values the run decrypts: objects, diffs, errors, traces and logs
	// alike (--show-secrets shows them on standard output).
	g.mask = &mask.Set{}
	g.Out, g.ErrOut = g.mask.Writer(g.Out), g.mask.Writer(g.ErrOut)
	streams := g.IOStreams
	cmd := &cobra.Command{
		Use:   "kubectl-fleet",
		Short: "Deploy one set of manifests to many clusters safely",
		Long:  rootLong,
		Example: `  # The clusters of the fleet file in ./fleet.yaml
  kubectl fleet clusters

  # What each staging cluster would get from a kustomize folder
  kubectl fleet render -k overlays --group staging`,
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl fleet"},
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		PersistentPreRun: func(*cobra.Command, []string) {
			logging.Setup(g.LogLevel, streams.ErrOut)
		},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.SetFlagErrorFunc(explainFlagError)
	g.addFlags(cmd)
	cmd.AddCommand(
		NewCmdInit(g),
		NewCmdClusters(g),
		NewCmdRender(g),
		NewCmdDiff(g),
		NewCmdApply(g),
		NewCmdReconcile(g),
		NewCmdStatus(g),
		NewCmdHistory(g),
		NewCmdRollback(g),
		NewCmdDelete(g),
		NewCmdBootstrap(g),
		NewCmdUnlock(g),
		NewCmdApprove(g),
		NewCmdPause(g),
		NewCmdResume(g),
		NewCmdExec(g),
		NewCmdVet(g),
		NewCmdDeps(g),
		NewCmdSchema(g),
		NewCmdVersion(g),
	)
	addHelpTopics(cmd)
	return cmd
}

// Execute runs the plugin with args and returns the process exit code.
func Execute(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	g := &GlobalOptions{IOStreams: streams, ConfigFlags: kube.NewConfigFlags()}
	// The kubeconfigs of kubeconfigFrom go when the command ends, and
	// before a second Ctrl-C ends the process.
	defer g.sources.Cleanup()
	defer exitOnSecondInterrupt(ctx, streams.ErrOut, g.sources.Cleanup)()
	defer g.shutdownTracing()
	cmd := newCmdFleet(g)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exit.OK
	}
	code := exit.Failed
	var ee *exit.Error
	if errors.As(err, &ee) {
		code = ee.Code
		if ee.Err == nil {
			return code
		}
	}
	if ctx.Err() != nil && code == exit.Failed {
		code = exit.Interrupted
	}
	fmt.Fprintf(g.ErrOut, "error: %v\n", err)
	return code
}

// StopSignals stop a run as Ctrl-C does: SIGINT, SIGTERM and SIGHUP.
var StopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// exitOnSecondInterrupt makes a second Ctrl-C end the process at once.
// The first one cancels ctx: no new work starts, and requests in flight
// are waited for (each bounded by --request-timeout, else
// kube.DefaultRequestTimeout) so that the summary can say what happened.
// Whoever does not want to wait presses Ctrl-C again. The returned
// function stops watching. cleanup runs before the process ends.
func exitOnSecondInterrupt(ctx context.Context, errOut io.Writer, cleanup func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		again := make(chan os.Signal, 1)
		signal.Notify(again, StopSignals...)
		defer signal.Stop(again)
		select {
		case <-done:
		case <-again:
			fmt.Fprintln(errOut, "error: interrupted again: exiting without waiting for the requests in flight; what they did is unknown")
			cleanup()
			os.Exit(exit.Interrupted)
		}
	}()
	return func() { close(done) }
}
