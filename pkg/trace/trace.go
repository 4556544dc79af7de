// Package trace records a release as one OpenTelemetry trace, built from
// the rollout engine's events as they come: the release is the root
// span, each wave a child, each cluster a child of its wave, and under a
// cluster its stages (connecting, rendering, applying an app, waiting
// for it to be healthy), its checks and its soak; a wave held by a brake
// is a "wait" span under the release. Nothing is recorded, and nothing
// costs, unless the command was given a TracerProvider (OTLP, when
// OTEL_EXPORTER_OTLP_ENDPOINT is set).
package trace

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Release is the trace of one release. Its methods are safe for
// concurrent use; a nil Release records nothing.
type Release struct {
	// Mask, when set, masks what the run decrypted in the text a span
	// carries (an error, a check's output), as the run's streams do: a
	// trace leaves the machine.
	Mask func(string) string

	tracer oteltrace.Tracer
	root   oteltrace.Span
	ctx    context.Context

	mu sync.Mutex
	// waveOf is each cluster's wave; waves the waves' spans, held the
	// waits of waves a brake held.
	waveOf   map[string]string
	waves    map[string]span
	held     map[string]oteltrace.Span
	clusters map[string]*cluster
}

// span is a span and the context it is the parent of.
type span struct {
	oteltrace.Span
	ctx context.Context
}

// cluster is a cluster's span (ended once its work is), its current
// stage's (and its name), and its soak's.
type cluster struct {
	span
	stage, soak oteltrace.Span
	stageName   string
	ended       bool
}

// Start starts the trace of a release of fleet (its id, its verb) over
// waves, through tp.
func Start(tp oteltrace.TracerProvider, fleet, id, verb string, waves []runner.Wave) *Release {
	r := &Release{tracer: tp.Tracer("github.com/kubectl-fleet/kubectl-fleet"), waveOf: map[string]string{}, waves: map[string]span{},
		held: map[string]oteltrace.Span{}, clusters: map[string]*cluster{}}
	r.ctx, r.root = r.tracer.Start(context.Background(), "release "+fleet, oteltrace.WithAttributes(
		attribute.String("fleet.name", fleet), attribute.String("fleet.release", id), attribute.String("fleet.verb", verb)))
	for _, w := range waves {
		for _, c := range w.Clusters {
			r.waveOf[c] = w.Name
		}
	}
	return r
}

// TraceID is the trace's ID (32 hex digits), "" for a nil Release.
func (r *Release) TraceID() string {
	if r == nil {
		return ""
	}
	return r.root.SpanContext().TraceID().String()
}

// Observe reads one of the engine's events. An object's, the most of a
// run's, takes no lock.
func (r *Release) Observe(ev rollout.Event) {
	if _, ok := ev.(rollout.ObjectEvent); ok || r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev := ev.(type) {
	case rollout.WaveEvent:
		r.wave(ev)
	case rollout.StageEvent:
		c := r.cluster(ev.Cluster)
		if c.stage != nil {
			c.stage.End()
		}
		_, c.stage = r.tracer.Start(c.ctx, ev.Stage)
		c.stageName = ev.Stage
	case rollout.CheckEvent:
		c := r.cluster(ev.Cluster)
		name := "check " + ev.Check
		s := c.stage
		if s == nil || c.stageName != name {
			// A check told without its stage: its span from its time.
			now := time.Now()
			_, s = r.tracer.Start(c.ctx, name, oteltrace.WithTimestamp(now.Add(-time.Duration(ev.Seconds*float64(time.Second)))))
		}
		if ev.State != "passed" {
			s.SetStatus(codes.Error, r.masked(ev.State+": "+ev.Error))
		}
		s.End()
		if s == c.stage {
			c.stage, c.stageName = nil, ""
		}
	case rollout.SoakEvent:
		c := r.cluster(ev.Cluster)
		switch {
		case ev.State == "started" && c.soak == nil:
			_, c.soak = r.tracer.Start(c.ctx, "soak")
		case ev.State != "started" && c.soak != nil:
			if ev.State != "passed" {
				c.soak.SetStatus(codes.Error, r.masked(ev.State+": "+ev.Error))
			}
			c.soak.End()
			c.soak = nil
		}
	case rollout.EndEvent:
		c := r.cluster(ev.Cluster)
		if c.stage != nil {
			c.stage.End()
			c.stage = nil
		}
		if ev.Err != nil {
			c.SetStatus(codes.Error, r.masked(ev.Err.Error()))
		}
		// Its wave's soak follows its end: the soak's span is its child
		// all the same.
		c.End()
		c.ended = true
	}
}

// masked is text with what the run decrypted masked (Mask).
func (r *Release) masked(text string) string {
	if r.Mask == nil {
		return text
	}
	return r.Mask(text)
}

// wave follows a wave: its span from its start to its end, or a wait
// while a brake holds it.
func (r *Release) wave(ev rollout.WaveEvent) {
	switch ev.State {
	case rollout.WaveStarted:
		if w, ok := r.held[ev.Wave]; ok {
			w.End()
			delete(r.held, ev.Wave)
		}
		ctx, s := r.tracer.Start(r.ctx, "wave "+ev.Wave)
		r.waves[ev.Wave] = span{s, ctx}
	case rollout.WaveFinished:
		w, ok := r.waves[ev.Wave]
		if !ok {
			return
		}
		if c := ev.Counts; c != nil {
			w.SetAttributes(attribute.Int("fleet.succeeded", c.Succeeded), attribute.Int("fleet.failed", c.Failed), attribute.Int("fleet.not_started", c.NotStarted))
			if c.Failed > 0 {
				w.SetStatus(codes.Error, "clusters failed")
			}
		}
		w.End()
		delete(r.waves, ev.Wave)
	default:
		if _, ok := r.held[ev.Wave]; !ok {
			_, r.held[ev.Wave] = r.tracer.Start(r.ctx, "wait "+ev.Brake, oteltrace.WithAttributes(attribute.String("fleet.wave", ev.Wave)))
		}
	}
}

// cluster is name's span, started under its wave's (the release's when
// its wave has none) at its first event.
func (r *Release) cluster(name string) *cluster {
	if c, ok := r.clusters[name]; ok {
		return c
	}
	parent := r.ctx
	if w, ok := r.waves[r.waveOf[name]]; ok {
		parent = w.ctx
	}
	ctx, s := r.tracer.Start(parent, "cluster "+name, oteltrace.WithAttributes(attribute.String("fleet.cluster", name)))
	c := &cluster{span: span{s, ctx}}
	r.clusters[name] = c
	return c
}

// endChildren ends the cluster's stage and soak still open.
func (c *cluster) endChildren() {
	for _, s := range []oteltrace.Span{c.stage, c.soak} {
		if s != nil {
			s.End()
		}
	}
	c.stage, c.soak = nil, nil
}

// End ends every span still open and the release's, with its clusters'
// outcomes.
func (r *Release) End(outcomes []runner.Outcome) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.clusters {
		c.endChildren()
		if !c.ended {
			c.End()
		}
	}
	for _, w := range r.waves {
		w.End()
	}
	for _, w := range r.held {
		w.End()
	}
	counts := runner.Count(outcomes)
	r.root.SetAttributes(attribute.Int("fleet.succeeded", counts[runner.Succeeded]), attribute.Int("fleet.failed", counts[runner.Failed]),
		attribute.Int("fleet.not_started", counts[runner.NotStarted]))
	if counts[runner.Failed] > 0 {
		r.root.SetStatus(codes.Error, "clusters failed")
	}
	r.root.End()
}
