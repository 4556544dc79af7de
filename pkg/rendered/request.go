package rendered

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/ocisource"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Connector reaches the fleet's clusters, for what a render reads from
// them. pkg/cmd's is its kubeconfig flags and its clients, one per cluster
// and command.
type Connector interface {
	// CheckContexts verifies, before any request, that every cluster's
	// context exists in its kubeconfig (a kubeconfigFrom materialized
	// first).
	CheckContexts(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster) error
	// Connect may also answer a *runner.SkipError for a cluster
	// skipped as unreachable.
	kube.Connector
}

// Config is what a run renders, and with what.
type Config struct {
	// Fleet is the fleet file, loaded; Selection picks its clusters.
	Fleet     *fleet.Fleet
	Selection fleet.Selection
	Source    Source
	// Namespace, when not "", is every app's (-n).
	Namespace string
	// Contexts is for a command that talks to clusters: every selected
	// cluster's context must exist first, and a Helm chart renders with
	// its cluster's capabilities.
	Contexts  bool
	Connector Connector
	// Engine renders (Render only).
	Engine *render.Engine
	// Fetcher fetches oci:// sources, each once per run.
	Fetcher *ocisource.Fetcher
	// Tests renders the apps' tests too (Render only).
	Tests bool
	// Warm, when set, is started once every target rendered, never
	// before and never after a failed render (Render only; apply: the
	// first wave's connections, identities and locks, taken in the
	// background while the run starts).
	Warm func(ctx context.Context, pl *Request)
	// Shed, when set, is asked once, with the selected clusters, which
	// of them a run works on later, not at once (Render only): their
	// objects are let go as soon as they rendered, made again when read
	// or when their turn comes (Set.Shed, Rerender). A run that reads a
	// cluster's Results directly, not through Of, must keep it.
	Shed func(clusters []*fleet.Cluster) map[string]bool
	// Shedding, when set, is called with each cluster's results right
	// before the render lets their objects go (Shed), from the render's
	// goroutine: what a run needs of them before they are made again
	// (a delivered cluster's digests) is taken there.
	Shedding func(results []render.Result)
}

// Request is what is to be rendered: the fleet, the selected clusters, the apps
// that go to them and what was read from the clusters.
type Request struct {
	Fleet    *fleet.Fleet
	Clusters []*fleet.Cluster
	Apps     []App
	// Live holds each cluster's attributes read from it (attributesFrom);
	// they override the fleet file's.
	Live map[string]map[string]any
	// Capabilities are the discovered capabilities of the clusters Helm
	// charts render for, when the command talks to clusters.
	Capabilities map[string]*render.Capabilities
}

// NewRequest selects clusters, resolves apps and reads the clusters'
// attributesFrom. With c.Contexts, every selected cluster's context must
// exist first, and the capabilities of the clusters Helm charts render
// for are read too.
func NewRequest(ctx context.Context, c Config) (*Request, error) {
	f := c.Fleet
	clusters, err := f.Select(c.Selection)
	if err != nil {
		return nil, err
	}
	apps, err := c.Source.Resolve(f, clusters, c.Namespace)
	if err != nil {
		return nil, err
	}
	if err := Fetch(ctx, apps, c.Fetcher); err != nil {
		return nil, err
	}
	if c.Contexts {
		if err := c.Connector.CheckContexts(ctx, f, clusters); err != nil {
			return nil, err
		}
	}
	live, err := LiveAttributes(ctx, c.Connector, f, clusters, apps)
	if err != nil {
		return nil, err
	}
	pl := &Request{Fleet: f, Clusters: clusters, Apps: apps, Live: live}
	if c.Contexts {
		if pl.Capabilities, err = capabilities(ctx, c.Connector, f, clusters, apps); err != nil {
			return nil, err
		}
	}
	return pl, nil
}

// Targets lists every (cluster, app) pair to render, cluster by cluster
// in fleet order, apps in fleet order within a cluster; with tests, the
// apps' tests instead.
func (p *Request) Targets(tests bool) []render.Target {
	var out []render.Target
	for _, c := range p.Clusters {
		rc := render.ClusterOf(p.Fleet, c)
		for k, v := range p.Live[c.Name] {
			rc.Attributes[k] = v
		}
		rc.Capabilities = p.Capabilities[c.Name]
		for _, a := range p.Apps {
			switch {
			case !a.GoesTo(c):
			case !tests:
				out = append(out, render.Target{Cluster: rc, App: a.Name, Source: a.Source, CreateNamespace: a.CreateNamespace})
			case a.Tests != nil:
				out = append(out, render.Target{Cluster: rc, App: a.Name, Source: *a.Tests})
			}
		}
	}
	return out
}

// LiveAttributes reads the attributesFrom of every cluster that one of
// apps goes to, in parallel, by cluster. Only then are kubeconfigs read.
func LiveAttributes(ctx context.Context, conn Connector, f *fleet.Fleet, clusters []*fleet.Cluster, apps []App) (map[string]map[string]any, error) {
	var need []*fleet.Cluster
	for _, c := range clusters {
		if len(f.AttributesFrom(c)) > 0 && targeted(c, apps) {
			need = append(need, c)
		}
	}
	if len(need) == 0 {
		return nil, nil
	}
	if err := conn.CheckContexts(ctx, f, need); err != nil {
		return nil, err
	}
	return readEach(need, func(c *fleet.Cluster) (map[string]any, bool, error) {
		client, err := conn.Connect(ctx, f, c)
		if err != nil {
			return nil, false, kube.Explained(ctx, conn, c.Name, err)
		}
		attrs, err := kube.ReadAttributes(ctx, client, f.AttributesFrom(c))
		return attrs, true, kube.Explained(ctx, conn, c.Name, err)
	})
}

// capabilities asks the discovery of every cluster a Helm chart renders
// for what it serves (its .Capabilities), at once. A cluster skipped as
// unreachable (--skip-unreachable) renders with its attributes, and is
// skipped by the rollout anyway.
func capabilities(ctx context.Context, conn Connector, f *fleet.Fleet, clusters []*fleet.Cluster, apps []App) (map[string]*render.Capabilities, error) {
	var need []*fleet.Cluster
	for _, c := range clusters {
		if slices.ContainsFunc(apps, func(a App) bool { return a.Source.Type == render.HelmChart && a.GoesTo(c) }) {
			need = append(need, c)
		}
	}
	return readEach(need, func(c *fleet.Cluster) (*render.Capabilities, bool, error) {
		client, err := conn.Connect(ctx, f, c)
		var skip *runner.SkipError
		if errors.As(err, &skip) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, kube.Explained(ctx, conn, c.Name, err)
		}
		// A Helm chart renders with what the cluster serves: a cluster
		// that does not answer stops the render, said as unreachable
		// (--skip-unreachable skips it instead, above).
		var cp render.Capabilities
		cp.KubeVersion, cp.APIVersions, err = client.Capabilities()
		return &cp, true, kube.Explained(ctx, conn, c.Name, err)
	})
}

// readsAtOnce bounds the clusters readEach reads at once: each is a
// connection and a TLS handshake, and a thousand at once time out on the
// machine that starts them.
const readsAtOnce = 64

// readEach reads something of every cluster, readsAtOnce at a time, and
// returns it by cluster name, less the clusters read says false for
// (skipped); or the errors, each named by its cluster, all of them.
func readEach[T any](clusters []*fleet.Cluster, read func(*fleet.Cluster) (T, bool, error)) (map[string]T, error) {
	got := make([]T, len(clusters))
	ok := make([]bool, len(clusters))
	errs := make([]error, len(clusters))
	var wg sync.WaitGroup
	slots := make(chan struct{}, readsAtOnce)
	for i, c := range clusters {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			var err error
			if got[i], ok[i], err = read(c); err != nil {
				errs[i] = fmt.Errorf("cluster %s: %w", c.Name, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make(map[string]T, len(clusters))
	for i, c := range clusters {
		if ok[i] {
			out[c.Name] = got[i]
		}
	}
	return out, nil
}

func targeted(c *fleet.Cluster, apps []App) bool {
	return slices.ContainsFunc(apps, func(a App) bool { return a.GoesTo(c) })
}
