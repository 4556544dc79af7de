// Command schema writes the fleet file's JSON Schema (make schema), from
// the module's folder.
package main

import (
	"fmt"
	"os"

	"github.com/kubectl-fleet/kubectl-fleet/internal/schemagen"
)

func main() {
	b, err := schemagen.Generate()
	if err == nil {
		err = os.WriteFile(os.Args[1], b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schema:", err)
		os.Exit(1)
	}
}
