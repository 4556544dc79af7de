package cmd

import (
	"context"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/prompt"
)

func (g *GlobalOptions) newPrinter(clusters []*fleet.Cluster, jsonOut bool) *printer {
	return output.NewPrinter(g.Out, jsonOut, g.prefixer(clusters), g.manyClusters())
}

// printer is the output of commands that work on clusters.
type printer = output.Printer

// clusters is the command's Connector to its clusters (kube.Clients),
// with this command's flags.
func (g *GlobalOptions) clusters() *kube.Clients {
	g.kube.Flags, g.kube.SkipUnreachable = g.ConfigFlags, g.SkipUnreachable
	return &g.kube
}

// connect returns a cluster's client once its identity pins are verified
// (kube.Clients.Connect).
func (g *GlobalOptions) connect(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster) (*kube.Client, error) {
	return g.clusters().Connect(ctx, f, c)
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
