package scaffold

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Said tells on w what init wrote (the fleet file, its groups and
// clusters, the example app's files made), and what to do next.
func Said(w io.Writer, file string, groups []string, clusters []Cluster, made []string) {
	fmt.Fprintf(w, "Wrote %s: %d clusters, checked by vet.\n", displayPath(file), len(clusters))
	guessed := false
	for _, g := range groups {
		var names []string
		for _, c := range clusters {
			if c.Group == g {
				names = append(names, fmt.Sprintf("%s (%s)", c.Name, c.Context))
				guessed = guessed || c.Guessed
			}
		}
		fmt.Fprintf(w, "  %s: %s\n", g, strings.Join(names, ", "))
	}
	if guessed {
		fmt.Fprintln(w, "The groups are guessed from the context names: check them (or run again with --group).")
	}
	if len(made) > 0 {
		fmt.Fprintf(w, "Wrote %s, an example app.\n", displayPath(made[len(made)-1]))
	}
	fmt.Fprintln(w, "Next: kubectl fleet diff, then kubectl fleet apply.")
}

// displayPath is path relative to the working folder when it is under
// it.
func displayPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return p
}
