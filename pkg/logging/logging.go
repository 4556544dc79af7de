// Package logging sends client-go's logs (klog) where kubectl fleet's
// -v says, as text or JSON lines, never with a request's or response's
// body, which may hold a Secret.
package logging

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// Setup sends client-go's logs to w at the given level, as kubectl's
// -v does (6: requests, 7: headers, 8 and 9: bodies), with two
// differences: a request or response body is never written, since it may
// hold a Secret; and without -v nothing is, its errors included (a raw
// "memcache.go:381 Couldn't get current server API group list" line,
// without its cluster): every error that matters reaches the command's
// own output, prefixed with its cluster.
func Setup(level int, w io.Writer) {
	if level <= 0 {
		w = io.Discard
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", strconv.Itoa(level))
	cfg := textlogger.NewConfig(textlogger.Verbosity(level), textlogger.Output(w))
	klog.SetLogger(logr.New(&redactingSink{LogSink: textlogger.NewLogger(cfg).GetSink()}))
}

// SetupJSON is Setup for --log-format json: one JSON object
// per line (time, level, msg, and the values logged), bodies redacted
// the same way.
func SetupJSON(level int, w io.Writer) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", strconv.Itoa(level))
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: slog.Level(-level), // logr's V(n) is slog's level -n
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.LevelKey {
				lv, _ := a.Value.Any().(slog.Level)
				switch {
				case lv >= slog.LevelError:
					return slog.String(slog.LevelKey, "error")
				case lv >= slog.LevelWarn:
					return slog.String(slog.LevelKey, "warning")
				case lv >= slog.LevelInfo:
					return slog.String(slog.LevelKey, "info")
				}
				return slog.String(slog.LevelKey, "debug")
			}
			return a
		},
	})
	klog.SetLogger(logr.New(&redactingSink{LogSink: logr.FromSlogHandler(h).GetSink()}))
}

// redactingSink replaces the value of every "body" key.
type redactingSink struct {
	logr.LogSink
}

func redactBodies(kv []any) []any {
	out := make([]any, len(kv))
	copy(out, kv)
	for i := 0; i+1 < len(out); i += 2 {
		if k, ok := out[i].(string); ok && k == "body" {
			n := 0
			switch v := out[i+1].(type) {
			case string:
				n = len(v)
			case []byte:
				n = len(v)
			}
			out[i+1] = fmt.Sprintf("<%d bytes not shown: kubectl fleet never logs bodies, which may hold Secrets>", n)
		}
	}
	return out
}

func (s *redactingSink) Info(level int, msg string, kv ...any) {
	s.LogSink.Info(level, msg, redactBodies(kv)...)
}

func (s *redactingSink) Error(err error, msg string, kv ...any) {
	s.LogSink.Error(err, msg, redactBodies(kv)...)
}

func (s *redactingSink) WithValues(kv ...any) logr.LogSink {
	return &redactingSink{LogSink: s.LogSink.WithValues(redactBodies(kv)...)}
}

func (s *redactingSink) WithName(name string) logr.LogSink {
	return &redactingSink{LogSink: s.LogSink.WithName(name)}
}

// WithCallDepth keeps file:line pointing at the caller.
func (s *redactingSink) WithCallDepth(depth int) logr.LogSink {
	if d, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return &redactingSink{LogSink: d.WithCallDepth(depth + 1)}
	}
	return s
}
