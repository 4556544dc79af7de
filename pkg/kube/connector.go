package kube

import (
	"context"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// Connector is how every command reaches its clusters: the client of a
// cluster of a fleet once its identity pins are verified (the command's
// kubeconfigs and clients, one per cluster). Packages that read or write
// clusters take it; each may add what else it needs of the command
// (rendered.Connector, rollout.Connector).
type Connector interface {
	Connect(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster) (*Client, error)
}
