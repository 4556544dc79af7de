// Command benchfleet writes the fleet render's benchmarks use, for timing
// the built binary:
//
//	go run ./hack/benchfleet -clusters 1000 -objects 100 /tmp/fleet
//	/usr/bin/time -v kubectl-fleet render -F /tmp/fleet/fleet.yaml >/dev/null
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kubectl-fleet/kubectl-fleet/internal/benchfleet"
)

func main() {
	clusters := flag.Int("clusters", 100, "clusters in the fleet")
	objects := flag.Int("objects", 100, "objects per cluster")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: benchfleet [-clusters N] [-objects M] DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	path, err := benchfleet.Write(flag.Arg(0), *clusters, *objects)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}
