// Package registry is what a cluster delivered through a registry
// (fleet.Delivery) answers to the readers that ask every cluster
// something: its history, its status, the revisions a rollback goes back
// to, its approvals and its pauses, read and written beside its tags
// (publish.Registry). Packages history, status, rollback, approval and
// pause keep their rules and their text, and ask a cluster written to
// through its client; they ask a delivered one through a small
// interface of their own (Delivered), which Fleet implements. The
// rollout engine's side of the same target is pkg/rollout's
// registryTarget.
package registry

import (
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// Fleet answers for the delivered clusters of a fleet.
type Fleet struct {
	Fleet *fleet.Fleet
}

// Of is what f's delivered clusters answer.
func Of(f *fleet.Fleet) Fleet { return Fleet{Fleet: f} }

// registry is where delivered cluster c's state is kept.
func (r Fleet) registry(c *fleet.Cluster) (publish.Registry, error) {
	return publish.For(r.Fleet, r.Fleet.DeliveryOf(c))
}
