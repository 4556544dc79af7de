package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-fleet/kubectl-fleet/internal/benchfleet"
)

// BenchmarkRenderCommand is "kubectl fleet render" as a user runs it, flags
// to output (written to io.Discard), for fleets of 10, 100 and 1,000
// clusters with 100 objects each, in YAML and JSON. Select one size with
// -bench 'RenderCommand/clusters=10$/' (the $ keeps 100 and 1000 out), one
// format with 'RenderCommand/clusters=1000$/json'. objects/op is the
// number of objects printed.
func BenchmarkRenderCommand(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			fleetFile, err := benchfleet.Write(b.TempDir(), n, 100)
			if err != nil {
				b.Fatal(err)
			}
			for _, format := range []string{"yaml", "json"} {
				b.Run(format, func(b *testing.B) {
					streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
					b.ReportAllocs()
					for b.Loop() {
						if code := Execute(context.Background(), streams, []string{"render", "-F", fleetFile, "-o", format}); code != 0 {
							b.Fatalf("exit %d", code)
						}
					}
					b.ReportMetric(float64(n*100), "objects/op")
				})
			}
		})
	}
}
