package reconcile

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/metrics"
)

// Service is reconcile's long run: pass after pass, Interval apart or
// Once (Loop), and beside them, when MetricsAddr is set, the server of
// the loop's metrics and health.
type Service struct {
	Interval time.Duration
	Once     bool
	// MetricsAddr, when set, serves Metrics on /metrics and Health on
	// /healthz there (--metrics-addr).
	MetricsAddr string
	Metrics     *metrics.Reconcile
	Health      *metrics.Health
	Log         Log
	// Ready, when set, is told the metrics server's address (tests).
	Ready func(addr string)
}

// Run starts the metrics server when asked, then runs pass after pass
// until ctx is done, or once (Loop). Health turns unhealthy as Run
// returns, before the server stops.
func (s Service) Run(ctx context.Context, pass func(ctx context.Context, n int) error) error {
	if s.MetricsAddr != "" {
		stop, err := s.serve()
		if err != nil {
			return err
		}
		defer stop()
	}
	defer s.Health.Stop()
	return Loop(ctx, s.Interval, s.Once, s.Log, pass)
}

// serve starts the metrics server on MetricsAddr and says where it
// listens; stop shuts it down.
func (s Service) serve() (stop func(), err error) {
	ln, err := net.Listen("tcp", s.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	stop = metrics.Serve(ln, s.Metrics, s.Health)
	addr := ln.Addr().String()
	s.Log.Say(LoopEvent{Type: "reconcile", Msg: fmt.Sprintf("serving metrics on http://%s/metrics and health on /healthz", addr), Addr: addr})
	if s.Ready != nil {
		s.Ready(addr)
	}
	return stop, nil
}
