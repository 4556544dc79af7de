// Command kubectl-fleet is the kubectl fleet plugin: kubectl runs it as
// "kubectl fleet" when it is on PATH.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/pprof"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	// The auth providers kubectl ships (OIDC; exec credential plugins are
	// built into client-go), so that every kubeconfig kubectl accepts works.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/cmd"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/stats"
)

func main() { os.Exit(run()) }

func run() int {
	// A key command sops runs for a key (SOPS_AGE_KEY_CMD), run by the
	// plugin itself so that it is stopped, with all it started, when it
	// hangs (sopsfile.BoundKeyCommands).
	if len(os.Args) > 1 && os.Args[1] == sopsfile.KeyCommandArg {
		return sopsfile.RunKeyCommand(os.Args[2:], os.Stdout, os.Stderr)
	}
	if self, err := os.Executable(); err == nil {
		// A little inside the key services' limit: the command's
		// timeout is said as such, not as a key service's.
		sopsfile.BoundKeyCommands(self, sopsfile.KeyTimeout()*9/10)
	}
	// KUBECTL_FLEET_CPUPROFILE names a file for a CPU profile of the run
	// (go tool pprof reads it): how make bench shows where time goes.
	if f := os.Getenv("KUBECTL_FLEET_CPUPROFILE"); f != "" {
		if out, err := os.Create(f); err == nil && pprof.StartCPUProfile(out) == nil {
			defer out.Close()
			defer pprof.StopCPUProfile()
		}
	}
	// KUBECTL_FLEET_STATS names a file for the peak goroutine count
	// (make bench's scaling run).
	defer stats.Start()()
	// Ctrl-C, SIGTERM (a CI runner cancelling the job) and SIGHUP (the
	// terminal closed) all stop the run the same way: nothing new starts,
	// and temporary kubeconfigs are removed.
	ctx, stop := signal.NotifyContext(context.Background(), cmd.StopSignals...)
	defer stop()
	return cmd.Execute(ctx, genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
}
