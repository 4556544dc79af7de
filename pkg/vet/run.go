package vet

import (
	"context"
	"errors"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/ocisource"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
)

// Run is one vet of a fleet file: what it renders, and how it reaches
// the clusters when it has to (their contexts, and with Server the
// clusters themselves).
type Run struct {
	// File is the fleet file's path.
	File      string
	Selection fleet.Selection
	// Source says what to render: the fleet file's apps, or an ad hoc
	// source.
	Source rendered.Source
	// Namespace, when not "", is every app's (-n).
	Namespace string
	// Contexts checks that every selected cluster's context exists in
	// its kubeconfig (not with --no-kubeconfig).
	Contexts bool
	// Server has every object validated by its cluster too, with a
	// server-side dry-run apply; attributesFrom are read for real.
	Server bool
	// Connector reaches the clusters (their contexts, with Server their
	// clients).
	Connector rendered.Connector
	// Engine renders; Run makes its keys optional (not with Server) and
	// its Helm templates strict.
	Engine  *render.Engine
	Fetcher *ocisource.Fetcher
	// Prefix sizes the clusters' prefixes.
	Prefix func(clusters []*fleet.Cluster) *output.Prefixer
}

// Vet reads the fleet file, renders every selected cluster and checks
// what it rendered, saying every problem on v (a fleet file that cannot
// be read whole: its problems, and nothing else). It returns an
// exit.Error with exit.Failed once a problem was found.
func (r *Run) Vet(ctx context.Context, v *Out) error {
	f, err := fleet.Load(r.File)
	if err != nil {
		var list fleet.ErrorList
		if !errors.As(err, &list) {
			return err
		}
		v.FleetProblems(list)
		v.Summary(0, r.File)
		return &exit.Error{Code: exit.Failed}
	}
	clusters, err := f.Select(r.Selection)
	if err != nil {
		return err
	}
	apps, err := r.apps(ctx, v, f, clusters)
	if err != nil {
		return err
	}
	attrs := Placeholders(f, clusters)
	if r.Server && v.Problems == 0 {
		if attrs, err = rendered.LiveAttributes(ctx, r.Connector, f, clusters, apps); err != nil {
			return err
		}
	}
	pl := rendered.Request{Fleet: f, Clusters: clusters, Apps: apps, Live: attrs}
	// vet checks what it can without the keys (a pull request from a
	// fork): a file no key decrypts is checked as it is, and said. Not
	// with Server, which would send the encrypted text to be checked.
	r.Engine.Secrets.KeysOptional = !r.Server
	r.Engine.Lint = true // Helm templates strict too: a typo is a warning
	results := pl.Render(ctx, r.Engine)
	// The apps' tests are rendered and checked too (not sent to a server).
	tests := r.Engine.Render(ctx, pl.Targets(true))
	v.Prefix = r.Prefix(clusters)
	check := Check{Fleet: f, Clusters: clusters, Results: results, Tests: tests, Decrypted: r.Engine.Secrets.Values(), Undecrypted: r.Engine.Secrets.Undecrypted()}
	if r.Server {
		check.Connect = func(ctx context.Context, c *fleet.Cluster) (*kube.Client, error) {
			return r.Connector.Connect(ctx, f, c)
		}
	}
	v.Check(ctx, check)
	if v.Problems > 0 {
		return &exit.Error{Code: exit.Failed}
	}
	return nil
}

// apps are the apps vet renders for clusters, their oci:// sources
// fetched and said; a context missing (when Contexts) is a problem of v.
func (r *Run) apps(ctx context.Context, v *Out, f *fleet.Fleet, clusters []*fleet.Cluster) ([]rendered.App, error) {
	if r.Contexts {
		if err := r.Connector.CheckContexts(ctx, f, clusters); err != nil {
			// Missing contexts, or kubeconfigFrom sources that failed.
			var list fleet.ErrorList
			if errors.As(err, &list) {
				v.FleetProblems(list)
			} else {
				for _, l := range strings.Split(err.Error(), "\n") {
					v.Problem("", Problem{Message: l})
				}
			}
		}
	}
	apps, err := r.Source.Resolve(f, clusters, r.Namespace)
	if err != nil {
		return nil, err
	}
	if err := rendered.Fetch(ctx, apps, r.Fetcher); err != nil {
		return nil, err
	}
	for _, a := range apps {
		if got := a.Fetched; got != nil {
			v.Source(Source{App: a.Name, Artifact: got.Ref, Format: got.Format, SignedBy: got.SignedBy})
		}
	}
	return apps, nil
}
