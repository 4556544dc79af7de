// Command docs writes docs/commands: one Markdown page per kubectl fleet
// command, generated from the commands (make docs); with -man, man pages
// (make dist puts them in the release archives).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/cmd"
)

func main() {
	man := flag.Bool("man", false, "write man pages (section 1) instead of Markdown")
	flag.Parse()
	dir := "docs/commands"
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	// Defaults that name the user's home folder read the same for everyone.
	os.Setenv("HOME", "/home/you")
	os.Unsetenv("KUBECACHEDIR")
	os.Unsetenv("KUBECONFIG")
	os.Unsetenv("KUBECTL_FLEET")
	generate := cmd.GenerateDocs
	if *man {
		generate = cmd.GenerateManPages
	}
	if err := generate(dir); err != nil {
		fmt.Fprintln(os.Stderr, "docs:", err)
		os.Exit(1)
	}
}
