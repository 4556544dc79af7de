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

// A thousand clusters in a group with three analyses: what checking
// their queries for every cluster adds to each load.
func BenchmarkParseThousandAnalysed(b *testing.B) {
	var s strings.Builder
	s.WriteString("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ndefaults: {attributes: {prometheus: 'http://prom:9090', region: eu}}\ngroups:\n  - name: g\n    soak: 5m\n    analysis:\n")
	for _, name := range []string{"errors", "latency", "saturation"} {
		fmt.Fprintf(&s, "      - {name: %s, prometheus: {address: '${prometheus}', query: 'sum(rate(x{cluster=\"${FLEET_CLUSTER_NAME}\",region=\"${region}\"}[2m]))', headers: {X-Scope-OrgID: '${region}'}}, successCondition: result < 0.01}\n", name)
	}
	s.WriteString("clusters:\n")
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
