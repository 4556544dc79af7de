package kube

import (
	"context"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Connector is how every command reaches its clusters: the client of a
// cluster of a fleet once its identity pins are verified (the command's
// kubeconfigs and clients, one per cluster). Packages that read or write
// clusters take it; each may add what else it needs of the command
// (rendered.Connector, rollout.Connector).
type Connector interface {
	Connect(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster) (*Client, error)
}

// Idler closes the idle connections of a cluster whose work is over
// (Clients.Idle).
type Idler interface {
	Idle(cluster string)
}

// IdleConnector is a Connector that closes a cluster's connections once
// its work is over.
type IdleConnector interface {
	Connector
	Idler
}

// Explainer says a cluster's error plainly when the cluster never
// answered (Clients.Explain): "cluster unreachable (connection refused):
// …; --skip-unreachable reports such a cluster as skipped".
type Explainer interface {
	Explain(ctx context.Context, cluster string, err error) error
}

// Explained is conn's explanation of cluster's err when conn explains
// (an Explainer), else err: every path that first touches a cluster
// (its version, discovery, identity, lock, inventory) says a cluster that
// does not answer the same way, with the way out.
func Explained(ctx context.Context, conn any, cluster string, err error) error {
	if ex, ok := conn.(Explainer); ok && err != nil {
		return ex.Explain(ctx, cluster, err)
	}
	return err
}

// Each calls fn for every one of clusters with its client (conn.Connect,
// whose error is the cluster's), parallel clusters at once, each one a
// read that tolerates the others' failures (runner.Every); it returns
// every cluster's outcome, in order.
func Each(ctx context.Context, conn Connector, f *fleet.Fleet, clusters []*fleet.Cluster, parallel int, fn func(ctx context.Context, c *fleet.Cluster, client *Client) error) []runner.Outcome {
	return EachTarget(ctx, conn, f, clusters, parallel, Reach{Written: fn})
}

// Reach is how a reader reaches one cluster, by the kind of its target.
type Reach struct {
	// Written is given the client of a cluster written to.
	Written func(ctx context.Context, c *fleet.Cluster, client *Client) error
	// Delivered is called, unconnected, for a cluster delivered through
	// a registry (fleet.Delivery), whose state is kept there and not on
	// the cluster; nil: such a cluster is connected as any other.
	Delivered func(ctx context.Context, c *fleet.Cluster) error
}

// EachTarget is Each, each cluster reached the way its target is.
func EachTarget(ctx context.Context, conn Connector, f *fleet.Fleet, clusters []*fleet.Cluster, parallel int, r Reach) []runner.Outcome {
	names, byName := fleet.Index(clusters)
	return runner.Run(ctx, runner.Every(names), parallel, func(ctx context.Context, name string) error {
		c := byName[name]
		if r.Delivered != nil && f.DeliveryOf(c) != nil {
			return r.Delivered(ctx, c)
		}
		client, err := conn.Connect(ctx, f, c)
		if err == nil {
			err = r.Written(ctx, c, client)
		}
		return Explained(ctx, conn, name, err)
	})
}
