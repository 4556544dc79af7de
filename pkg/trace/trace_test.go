package trace

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// tree draws the spans ended as "parent > child" lines, sorted, after
// checking they are one trace.
func tree(t *testing.T, spans []sdktrace.ReadOnlySpan) []string {
	t.Helper()
	names := map[string]string{}
	for _, s := range spans {
		names[s.SpanContext().SpanID().String()] = s.Name()
	}
	var out []string
	for _, s := range spans {
		if s.SpanContext().TraceID() != spans[0].SpanContext().TraceID() {
			t.Errorf("%s is in another trace", s.Name())
		}
		parent := "-"
		if s.Parent().IsValid() {
			parent = names[s.Parent().SpanID().String()]
		}
		out = append(out, parent+" > "+s.Name())
	}
	slices.Sort(out)
	return out
}

// A release is one trace: the release, its waves, each cluster under
// its wave with its stages and gates, a held wave's wait.
func TestReleaseTree(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	waves := []runner.Wave{{Name: "staging", Clusters: []string{"stg"}}, {Name: "production", Clusters: []string{"prod"}}}
	r := Start(tp, "shop", "r1", "apply", waves)
	if len(r.TraceID()) != 32 {
		t.Fatalf("trace ID %q", r.TraceID())
	}
	r.Observe(rollout.WaveEvent{Wave: "staging", State: rollout.WaveStarted})
	r.Observe(rollout.StageEvent{Cluster: "stg", Stage: "connecting"})
	r.Observe(rollout.StageEvent{Cluster: "stg", Stage: "applying web"})
	r.Observe(rollout.StageEvent{Cluster: "stg", Stage: "check smoke"}) // the check's stage is its span
	r.Observe(rollout.CheckEvent{Cluster: "stg", Check: "smoke", State: "failed", Seconds: 0.5, Error: "exit status 1"})
	r.Observe(rollout.CheckEvent{Cluster: "stg", Check: "lint", State: "passed", Seconds: 0.1})
	r.Observe(rollout.EndEvent{Cluster: "stg", Err: errors.New("check smoke failed")})
	r.Observe(rollout.SoakEvent{Cluster: "stg", State: "started"}) // the wave's soak: after the cluster's end
	r.Observe(rollout.SoakEvent{Cluster: "stg", State: "failed", Error: "web unhealthy"})
	r.Observe(rollout.WaveEvent{Wave: "staging", State: rollout.WaveFinished, Counts: &rollout.WaveCounts{Failed: 1}})
	r.Observe(rollout.WaveEvent{Wave: "production", State: "awaiting approval", Brake: "approval"})
	r.End([]runner.Outcome{{Cluster: "stg", State: runner.Failed}, {Cluster: "prod", State: runner.NotStarted}})
	want := []string{
		"- > release shop",
		"cluster stg > applying web",
		"cluster stg > check lint",
		"cluster stg > check smoke",
		"cluster stg > connecting",
		"cluster stg > soak",
		"release shop > wait approval",
		"release shop > wave staging",
		"wave staging > cluster stg",
	}
	if diff := cmp.Diff(want, tree(t, rec.Ended())); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	for _, s := range rec.Ended() {
		failed := s.Name() == "check smoke" || s.Name() == "cluster stg" || s.Name() == "soak" || s.Name() == "wave staging" || s.Name() == "release shop"
		if got := s.Status().Code.String() == "Error"; got != failed {
			t.Errorf("%s: status %v", s.Name(), s.Status())
		}
	}
}

// Without a trace nothing is recorded, and nothing fails.
func TestNilRelease(t *testing.T) {
	var r *Release
	r.Observe(rollout.EndEvent{Cluster: "x"})
	r.End(nil)
	if r.TraceID() != "" {
		t.Error("a nil release has a trace ID")
	}
}

// What the run decrypted never leaves in a span's status.
func TestReleaseMasks(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	r := Start(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), "shop", "r1", "apply", nil)
	r.Mask = func(s string) string { return strings.ReplaceAll(s, "hunter2", "***") }
	r.Observe(rollout.CheckEvent{Cluster: "c", Check: "smoke", State: "failed", Error: "password hunter2 refused"})
	r.Observe(rollout.EndEvent{Cluster: "c", Err: errors.New("hunter2 again")})
	r.End(nil)
	for _, s := range rec.Ended() {
		if strings.Contains(s.Status().Description, "hunter2") {
			t.Errorf("%s: %q", s.Name(), s.Status().Description)
		}
	}
}
