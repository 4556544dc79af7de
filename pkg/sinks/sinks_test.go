package sinks

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
)

// What each sink gets: an object's change is printed and counted, a
// restore's printed only; a check's output is text, not -o json; the
// live display's and report's events are not printed.
func TestSetEmit(t *testing.T) {
	for _, jsonOut := range []bool{false, true} {
		var out bytes.Buffer
		var tally summary.Tally
		changed := 0
		s := Set{Printer: output.NewPrinter(&out, jsonOut, output.NewPrefixer([]string{"c1"}, false), 10), Tally: &tally,
			OnChange: func(string, string, string) { changed++ }}
		s.Emit(rollout.ObjectEvent{Type: "object", Cluster: "c1", App: "web", Object: "configmap/a", Action: string(change.Created)})
		s.Emit(rollout.ObjectEvent{Type: "object", Cluster: "c1", App: "web", Object: "configmap/b", Action: string(change.Pruned), Restore: true})
		s.Emit(rollout.OutputEvent{Cluster: "c1", Line: "smoke ok"})
		s.Emit(rollout.StageEvent{Cluster: "c1", Stage: "applying web"})
		s.Emit(rollout.EndEvent{Cluster: "c1"})
		s.Printer.Close()
		got := out.String()
		if n := tally.Actions("c1"); n[string(change.Created)] != 1 || n[string(change.Pruned)] != 0 || changed != 1 {
			t.Errorf("json %v: tally %v, %d changes told; want the created one only", jsonOut, n, changed)
		}
		if !strings.Contains(got, "configmap/a") || !strings.Contains(got, "configmap/b") || strings.Contains(got, "applying web") || strings.Contains(got, "smoke ok") == jsonOut {
			t.Errorf("json %v: printed\n%s", jsonOut, got)
		}
	}
}
