package kube

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/memo"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Clients is a command's Connector: one client per cluster, made from
// the command's kubeconfig flags with the cluster's own context (reading
// attributes and then diffing or applying share one REST mapper and
// discovery cache), connected once the cluster's identity pins are
// verified; and the way an error of a cluster that never answered is
// said (Explain). The zero value with Flags set is ready to use.
type Clients struct {
	Flags *genericclioptions.ConfigFlags
	// SkipUnreachable (--skip-unreachable) reports a cluster that does
	// not answer as skipped (a runner.SkipError), not failed.
	SkipUnreachable bool

	clients  memo.Memo[string, *Client]
	verified memo.Memo[string, *Client]
}

// Client is cluster c's client, once per command; its identity is not
// verified (Connect).
func (k *Clients) Client(f *fleet.Fleet, c *fleet.Cluster) (*Client, error) {
	return k.clients.Do(c.Name, func() (*Client, error) {
		return NewClient(ForCluster(k.Flags, f, c))
	})
}

// Connect returns a cluster's client once the cluster's identity pins
// (server, uid) are verified. Every command that reads or writes a
// cluster's state goes through here: reading the wrong cluster is as
// misleading as writing to it. Both happen once per command; requests
// already sent finish (or time out) after Ctrl-C.
func (k *Clients) Connect(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster) (*Client, error) {
	return k.verified.Do(c.Name, func() (*Client, error) {
		client, err := k.Client(f, c)
		if err != nil {
			return nil, err
		}
		if k.SkipUnreachable {
			if err := client.Reachable(); IsUnreachable(err) {
				return nil, &runner.SkipError{Reason: "unreachable: " + err.Error(), Unreachable: true}
			}
		}
		if err := client.VerifyIdentity(context.WithoutCancel(ctx), c.Server, c.UID); err != nil {
			return nil, err
		}
		return client, nil
	})
}

// Idle closes the idle connections of a cluster whose work is over; a
// cluster never connected to has none.
func (k *Clients) Idle(cluster string) {
	if c, ok := k.clients.Peek(cluster); ok && c != nil {
		c.CloseIdleConnections()
	}
}

// Reset forgets every client: the next Connect makes a new one (a
// reconcile pass: credentials rotate, kubeconfig files are replaced).
func (k *Clients) Reset() {
	k.clients.Reset()
	k.verified.Reset()
}

// UnreachableError is a cluster's failure because it could not be
// asked, said so, with the way out.
type UnreachableError struct{ Err error }

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cluster unreachable (%s): %v; --skip-unreachable reports such a cluster as skipped", WhyUnreachable(e.Err), e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Explain says so when a cluster's error is the cluster not answering
// (refused, no such host, timed out) before it answered anything: not a
// client library's message ("taking lease …: Post …: connection
// refused") alone. One that stopped answering during the run says so
// itself ("the cluster stopped answering, …").
func (k *Clients) Explain(ctx context.Context, cluster string, err error) error {
	var skip *runner.SkipError
	var already *UnreachableError
	if !IsUnreachable(err) || errors.As(err, &skip) || errors.As(err, &already) || ctx.Err() != nil {
		return err
	}
	if c, ok := k.verified.Peek(cluster); ok && c.Slowest() > 0 {
		return err // it answered before
	}
	return &UnreachableError{Err: err}
}
