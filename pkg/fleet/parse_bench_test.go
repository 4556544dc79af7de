package fleet

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseThousand parses a fleet file of 1,000 clusters: what every
// command does first.
func BenchmarkParseThousand(b *testing.B) {
	var s strings.Builder
	s.WriteString("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: g}]\nclusters:\n")
	for i := range 1000 {
		fmt.Fprintf(&s, "  - {name: c%d, group: g, context: ctx%d}\n", i, i)
	}
	data := []byte(s.String())
	for b.Loop() {
		if _, err := Parse(data, "fleet.yaml", b.TempDir()); err != nil {
			b.Fatal(err)
		}
	}
}
