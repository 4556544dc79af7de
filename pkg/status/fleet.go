package status

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/version"
)

// Fleet is what "kubectl fleet status" reads of a fleet: the status of
// each app of each cluster, from the render (Set's results) or, with
// Recorded, from what each cluster's inventory records.
type Fleet struct {
	Set *rendered.Set
	// Recorded reads the apps the clusters record (those of Apps; none:
	// all) instead of the render.
	Recorded bool
	Apps     []string
	// Parallel clusters at once, Concurrency requests per cluster.
	Parallel, Concurrency int
	Connector             kube.IdleConnector
	// Delivered answers for the clusters delivered through a registry.
	Delivered Delivered
	// Again says the clusters are read again soon (--watch): their
	// connections stay open. Else each cluster's are closed once read: a
	// status of 1,000 clusters ten at a time held 1,000 connections, and
	// their buffers, to its end.
	Again bool
}

// Delivered is what a cluster delivered through a registry answers
// status (package target/registry): each app's status from its registry
// and, through client when a context reads the cluster, its Flux; and its
// pauses.
type Delivered interface {
	App(ctx context.Context, c *fleet.Cluster, client *kube.Client, app string, objs []*unstructured.Unstructured) (App, error)
	Pauses(ctx context.Context, c *fleet.Cluster) ([]pause.Pause, error)
}

// Read reads every cluster of Set once, Parallel at once, and returns
// each cluster's outcome, its apps' status and its pauses (kubectl
// fleet pause, read beside the apps).
func (r Fleet) Read(ctx context.Context) ([]runner.Outcome, map[string][]App, map[string][]pause.Pause) {
	var (
		mu      sync.Mutex
		results = map[string][]App{}
		pauses  = map[string][]pause.Pause{}
	)
	// The pauses are read beside the apps, not before them.
	beside := func(c *fleet.Cluster, readPauses func() ([]pause.Pause, error), readApps func() ([]App, error)) error {
		var (
			paused []pause.Pause
			perr   error
			wg     sync.WaitGroup
		)
		wg.Go(func() { paused, perr = readPauses() })
		apps, err := readApps()
		wg.Wait()
		mu.Lock()
		results[c.Name], pauses[c.Name] = apps, paused
		mu.Unlock()
		return cmp.Or(err, perr)
	}
	f := r.Set.Fleet
	outcomes := kube.EachTarget(ctx, r.Connector, f, r.Set.Clusters, r.Parallel, kube.Reach{Written: func(ctx context.Context, c *fleet.Cluster, client *kube.Client) error {
		if !r.Again {
			defer r.Connector.Idle(c.Name)
		}
		return beside(c,
			func() ([]pause.Pause, error) { return pause.Read(ctx, client, f.Metadata.Name) },
			func() ([]App, error) { return r.appsOf(ctx, client, c.Name) })
	}, Delivered: func(ctx context.Context, c *fleet.Cluster) error {
		return beside(c,
			func() ([]pause.Pause, error) { return r.Delivered.Pauses(ctx, c) },
			func() ([]App, error) { return r.publishedOf(ctx, c) })
	}})
	return outcomes, results, pauses
}

// publishedOf is the status of each app rendered for delivered cluster
// c (Recorded: of every app of the fleet published there), read through
// its context when it has one.
func (r Fleet) publishedOf(ctx context.Context, c *fleet.Cluster) ([]App, error) {
	var client *kube.Client
	if c.Observed() {
		var err error
		if client, err = r.Connector.Connect(ctx, r.Set.Fleet, c); err != nil {
			return nil, err
		}
	}
	var out []App
	for _, res := range r.Set.Of(c.Name) {
		if len(r.Apps) > 0 && !slices.Contains(r.Apps, res.App) {
			continue
		}
		app, err := r.Delivered.App(ctx, c, client, res.App, res.Objects)
		if err != nil {
			return out, fmt.Errorf("app %s: %w", res.App, err)
		}
		out = append(out, app)
	}
	return out, nil
}

// appsOf computes the status of each app of a cluster: of its render, or
// of what the cluster records.
func (r Fleet) appsOf(ctx context.Context, client *kube.Client, cluster string) ([]App, error) {
	f := r.Set.Fleet
	opts := func(app string) Options {
		return Options{Ignore: f.IgnoreRules(app), Concurrency: r.Concurrency, Version: version.Get()}
	}
	var out []App
	if r.Recorded {
		sets, err := inventory.LoadAll(ctx, client)
		if err != nil {
			return nil, err
		}
		for _, set := range sets {
			if len(r.Apps) > 0 && !slices.Contains(r.Apps, set.App) {
				continue
			}
			app, err := FromInventory(ctx, client, set, opts(set.App))
			if err != nil {
				return nil, fmt.Errorf("app %s: %w", set.App, err)
			}
			out = append(out, app)
		}
		return out, nil
	}
	for _, res := range r.Set.Of(cluster) {
		app, err := Run(ctx, client, res.App, res.Objects, opts(res.App))
		if err != nil {
			return nil, fmt.Errorf("app %s: %w", res.App, err)
		}
		out = append(out, app)
	}
	return out, nil
}

// ClustersOf is what Read read of each cluster, in outcome order.
func ClustersOf(f *fleet.Fleet, outcomes []runner.Outcome, results map[string][]App) []Cluster {
	out := make([]Cluster, len(outcomes))
	batch := f.BatchOf()
	for i, oc := range outcomes {
		out[i] = Cluster{Name: oc.Cluster, Skipped: oc.State == runner.Skipped, Err: oc.Err, Apps: results[oc.Cluster]}
		if c := f.Cluster(oc.Cluster); c != nil {
			out[i].Group, out[i].Batch = c.Group, batch[c.Name]
		}
	}
	return out
}

// Watch writes a report to out every interval until ctx ends: each one
// drawn over the last on a terminal (inPlace), else after a time line
// ("--- 15:04:05"), or with jsonOut one after the other.
func Watch(ctx context.Context, out io.Writer, interval time.Duration, inPlace, jsonOut bool, report func(w io.Writer)) {
	lines := 0
	for {
		var buf bytes.Buffer
		report(&buf)
		if ctx.Err() != nil {
			return
		}
		switch {
		case inPlace && lines > 0:
			fmt.Fprintf(out, "\x1b[%dA\x1b[J", lines)
		case !inPlace && !jsonOut:
			fmt.Fprintf(out, "--- %s\n", time.Now().Format(time.TimeOnly))
		}
		_, _ = out.Write(buf.Bytes())
		lines = bytes.Count(buf.Bytes(), []byte("\n"))
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
