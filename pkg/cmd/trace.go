package cmd

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/trace"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/version"
)

// tracing is the command's OTLP exporter, started at its first release
// when OTEL_EXPORTER_OTLP_ENDPOINT (or its traces' own variable) is set.
type tracing struct {
	once sync.Once
	tp   *sdktrace.TracerProvider
}

// traceEnabled reports whether the environment asks for traces.
func traceEnabled() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// trace starts the trace of a release of r by verb (id its release's), or
// nil when the environment asks for none: then nothing is recorded.
func (g *GlobalOptions) trace(r *rendered.Set, id, verb string) *trace.Release {
	if !traceEnabled() {
		return nil
	}
	g.tracing.once.Do(func() {
		// OpenTelemetry's own errors and logs go to the command's
		// stderr, masked, as a warning; never to the process's raw
		// stderr (a malformed OTEL_EXPORTER_OTLP_HEADERS is logged whole).
		otel.SetLogger(logr.Discard())
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { fmt.Fprintf(g.ErrOut, "Warning: traces: %v\n", err) }))
		// The exporter reads OTEL_EXPORTER_OTLP_* itself (endpoint,
		// headers, TLS, timeout), as every OpenTelemetry SDK does.
		exp, err := otlptracehttp.New(context.Background())
		if err != nil {
			fmt.Fprintf(g.ErrOut, "Warning: traces: %v\n", err)
			return
		}
		res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("kubectl-fleet"), semconv.ServiceVersion(version.Version))
		g.tracing.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	})
	if g.tracing.tp == nil {
		return nil
	}
	tr := trace.Start(g.tracing.tp, r.Fleet.Metadata.Name, id, verb, rollout.Waves(r.Fleet, r.Clusters))
	if g.mask != nil {
		tr.Mask = g.mask.String
	}
	return tr
}

// shutdownTracing sends the spans still held, within notifyGrace.
func (g *GlobalOptions) shutdownTracing() {
	if g.tracing.tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), notifyGrace)
	defer cancel()
	if err := g.tracing.tp.Shutdown(ctx); err != nil {
		fmt.Fprintf(g.ErrOut, "Warning: traces not sent: %v\n", err)
	}
}
