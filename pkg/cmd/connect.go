package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/prompt"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

func (g *GlobalOptions) newPrinter(clusters []*fleet.Cluster, jsonOut bool) *printer {
	return output.NewPrinter(g.Out, jsonOut, g.prefixer(clusters), g.manyClusters())
}

// printer is the output of commands that work on clusters.
type printer = output.Printer

// client connects to one cluster with its own ConfigFlags, once per
// command: reading attributes from the cluster and then diffing or applying
// share one REST mapper and discovery cache.
func (g *GlobalOptions) client(f *fleet.Fleet, c *fleet.Cluster) (*kube.Client, error) {
	return g.clients.Do(c.Name, func() (*kube.Client, error) {
		return kube.NewClient(kube.ForCluster(g.ConfigFlags, f, c))
	})
}

// idle closes the idle connections of a cluster whose work is over
// (kube.Client.CloseIdleConnections); a cluster never connected to has
// none.
func (g *GlobalOptions) idle(cluster string) {
	if c, ok := g.clients.Peek(cluster); ok && c != nil {
		c.CloseIdleConnections()
	}
}

// unreachableError is a cluster's failure because it could not be
// asked, said so, with the way out.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string {
	return fmt.Sprintf("cluster unreachable (%s): %v; --skip-unreachable reports such a cluster as skipped", kube.WhyUnreachable(e.err), e.err)
}

func (e *unreachableError) Unwrap() error { return e.err }

// explained runs fn for a cluster, and says so when its error is the
// cluster not answering (explain).
func (g *GlobalOptions) explained(fn func(ctx context.Context, cluster string) error) func(ctx context.Context, cluster string) error {
	return func(ctx context.Context, cluster string) error { return g.explain(ctx, cluster, fn(ctx, cluster)) }
}

// explain says so when a cluster's error is the cluster not answering
// (refused, no such host, timed out) before it answered anything: not a
// client library's message ("taking lease …: Post …: connection
// refused") alone. One that stopped answering during the run says so
// itself ("the cluster stopped answering, …").
func (g *GlobalOptions) explain(ctx context.Context, cluster string, err error) error {
	var skip *runner.SkipError
	var already *unreachableError
	if !kube.IsUnreachable(err) || errors.As(err, &skip) || errors.As(err, &already) || ctx.Err() != nil {
		return err
	}
	if c, ok := g.verified.Peek(cluster); ok && c.Slowest() > 0 {
		return err // it answered before
	}
	return &unreachableError{err: err}
}

// connect returns a cluster's client once the cluster's identity pins
// (server, uid) are verified. Every command that reads or writes a
// cluster's state goes through here: reading the wrong cluster is as
// misleading as writing to it. Both happen once per command; requests
// already sent finish (or time out) after Ctrl-C.
func (g *GlobalOptions) connect(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster) (*kube.Client, error) {
	return g.verified.Do(c.Name, func() (*kube.Client, error) {
		client, err := g.client(f, c)
		if err != nil {
			return nil, err
		}
		if g.SkipUnreachable {
			if err := client.Reachable(); kube.IsUnreachable(err) {
				return nil, &runner.SkipError{Reason: "unreachable: " + err.Error(), Unreachable: true}
			}
		}
		if err := client.VerifyIdentity(context.WithoutCancel(ctx), c.Server, c.UID); err != nil {
			return nil, err
		}
		return client, nil
	})
}

// checkContexts materializes the clusters' kubeconfigFrom, then verifies,
// before any request, that every cluster's context exists in its
// kubeconfig.
func checkContexts(ctx context.Context, g *GlobalOptions, f *fleet.Fleet, clusters []*fleet.Cluster) error {
	if err := g.resolveKubeconfigs(ctx, f, clusters); err != nil {
		return err
	}
	return kube.CheckContexts(g.ConfigFlags, &kube.Kubeconfigs{}, f, clusters)
}

// asker asks questions on the terminal, if there is one.
func (g *GlobalOptions) asker() *prompt.Asker { return &prompt.Asker{In: g.In, Out: g.ErrOut} }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
