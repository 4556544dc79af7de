package cmd

import (
	"fmt"
	"net"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/metrics"
)

// serve starts the metrics server on addr; stop shuts it down.
func (o *ReconcileOptions) serve(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	stop = metrics.Serve(ln, o.metrics, o.health)
	msg := fmt.Sprintf("serving metrics on http://%s/metrics and health on /healthz", ln.Addr())
	if o.LogFormat == "json" {
		writeEvent(o.apply.Out, LoopEvent{Type: "reconcile", Msg: msg, Addr: ln.Addr().String()})
	} else {
		fmt.Fprintln(o.apply.ErrOut, msg)
	}
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	return stop, nil
}
