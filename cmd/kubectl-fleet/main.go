// Command kubectl-fleet is the kubectl fleet plugin: kubectl runs it as
// "kubectl fleet" when it is on PATH.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	// The auth providers kubectl ships (OIDC; exec credential plugins are
	// built into client-go), so that every kubeconfig kubectl accepts works.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Execute(ctx, genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}
