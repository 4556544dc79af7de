// Command docs writes docs/commands: one Markdown page per kubectl fleet
// command, generated from the commands (make docs).
package main

import (
	"fmt"
	"os"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/cmd"
)

func main() {
	dir := "docs/commands"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	// Defaults that name the user's home folder read the same for everyone.
	os.Setenv("HOME", "/home/you")
	os.Unsetenv("KUBECACHEDIR")
	os.Unsetenv("KUBECONFIG")
	os.Unsetenv("KUBECTL_FLEET")
	if err := cmd.GenerateDocs(dir); err != nil {
		fmt.Fprintln(os.Stderr, "docs:", err)
		os.Exit(1)
	}
}
