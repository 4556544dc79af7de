package sinks

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/report"
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
		rc := report.NewCollector()
		s := Set{Printer: output.NewPrinter(&out, jsonOut, output.NewPrefixer([]string{"c1"}, false), 10), Tally: &tally, Report: rc,
			OnChange: func(string, string, string) { changed++ }}
		s.Emit(rollout.ObjectEvent{Type: "object", Cluster: "c1", App: "web", Object: "configmap/a", Action: change.Created})
		s.Emit(rollout.ObjectEvent{Type: "object", Cluster: "c1", App: "web", Object: "configmap/b", Action: change.Pruned, Restore: true})
		s.Emit(rollout.OutputEvent{Cluster: "c1", Line: "smoke ok"})
		s.Emit(rollout.StageEvent{Cluster: "c1", Stage: "applying web"})
		s.Emit(rollout.MeasurementEvent{Type: "measurement", Cluster: "c1", Analysis: "error-rate", N: 1, Count: 2, Value: "0.001", Outcome: "successful", Condition: "result < 0.05"})
		s.Emit(rollout.EndEvent{Cluster: "c1"})
		s.Printer.Close()
		got := out.String()
		if m := rc.MeasurementsOf("c1"); len(m) != 1 || m[0] != "analysis error-rate (1/2): 0.001 successful (result < 0.05)" {
			t.Errorf("json %v: the report's measurements %q", jsonOut, m)
		}
		if !strings.Contains(got, "analysis error-rate (1/2)") && !strings.Contains(got, `"type":"measurement"`) {
			t.Errorf("json %v: the measurement is not printed:\n%s", jsonOut, got)
		}
		if n := tally.Actions("c1"); n[string(change.Created)] != 1 || n[string(change.Pruned)] != 0 || changed != 1 {
			t.Errorf("json %v: tally %v, %d changes told; want the created one only", jsonOut, n, changed)
		}
		if !strings.Contains(got, "configmap/a") || !strings.Contains(got, "configmap/b") || strings.Contains(got, "applying web") || strings.Contains(got, "smoke ok") == jsonOut {
			t.Errorf("json %v: printed\n%s", jsonOut, got)
		}
	}
}

// A diff is printed and kept for the report: with its app's line for
// diff's report (DiffApps), without the diff itself when Unmasked
// (--show-secrets); and the external diff program is given it.
func TestSetDiff(t *testing.T) {
	d := diff.Object{Ref: "configmap/a", Path: "v1/ConfigMap/ns/a", Action: change.Configured, Text: "-a: 1\n+a: 2\n"}
	for _, tt := range []struct {
		name               string
		diffApps, unmasked bool
		wantApps           []report.App
		wantDiff           bool
	}{
		{name: "apply --diff", wantDiff: true},
		{name: "diff", diffApps: true, wantApps: []report.App{{Name: "web", State: "0 to create, 1 to change, 0 to prune"}}, wantDiff: true},
		{name: "diff --show-secrets", diffApps: true, unmasked: true, wantApps: []report.App{{Name: "web", State: "0 to create, 1 to change, 0 to prune"}}},
	} {
		var out bytes.Buffer
		rc := report.NewCollector()
		s := Set{Printer: output.NewPrinter(&out, false, output.NewPrefixer([]string{"c1"}, false), 10), Report: rc, DiffApps: tt.diffApps, Unmasked: tt.unmasked}
		s.Emit(rollout.DiffEvent{Cluster: "c1", App: "web", Diffs: []diff.Object{d}})
		s.Printer.Close()
		if !strings.Contains(out.String(), "+a: 2") {
			t.Errorf("%s: printed %q, want the diff", tt.name, out.String())
		}
		apps, text := rc.Of("c1")
		if !reflect.DeepEqual(apps, tt.wantApps) || strings.Contains(text, "+a: 2") != tt.wantDiff {
			t.Errorf("%s: report has apps %+v and diff %q; want apps %+v, diff %v", tt.name, apps, text, tt.wantApps, tt.wantDiff)
		}
	}
	ext, err := diff.NewExternal()
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Remove()
	// An object YAML cannot hold: the external diff's error says the
	// diff reached it.
	bad := &unstructured.Unstructured{Object: map[string]any{"f": make(chan int)}}
	s := Set{Printer: output.NewPrinter(&bytes.Buffer{}, false, output.NewPrefixer([]string{"c1"}, false), 10), External: ext}
	s.Emit(rollout.DiffEvent{Cluster: "c1", App: "web", Diffs: []diff.Object{{Ref: "configmap/a", Path: "v1/ConfigMap/ns/a", Action: change.Configured, Live: bad, Merged: bad}}})
	if ext.Err() == nil {
		t.Error("the external diff program was not given the diff")
	}
}
