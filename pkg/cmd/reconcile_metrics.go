package cmd

import (
	"fmt"
	"net"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/metrics"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/reconcile"
)

// serve starts the metrics server on addr; stop shuts it down.
func (o *ReconcileOptions) serve(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	stop = metrics.Serve(ln, o.metrics, o.health)
	msg := fmt.Sprintf("serving metrics on http://%s/metrics and health on /healthz", ln.Addr())
	o.log().Say(reconcile.LoopEvent{Type: "reconcile", Msg: msg, Addr: ln.Addr().String()})
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	return stop, nil
}
