// Package stream prints what each cluster of a fleet gets as it is
// rendered: one YAML stream ("---" between documents, a "# Cluster: name"
// comment line before each cluster's), one JSON line per cluster (a
// RenderedCluster), or one folder per cluster and one file per object
// (--output-dir, for a GitOps engine to consume). Clusters are printed in
// fleet order, each whole or not at all.
package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// window is how many targets per worker may be rendered ahead of the
// one printing: a slow cluster holds back at most this many finished ones.
const window = 8

// Renderer renders one target at a time; *render.Engine is one.
type Renderer interface {
	RenderTarget(ctx context.Context, t render.Target) render.Result
	// Release says that every target of the cluster has been rendered.
	Release(cluster string)
}

// Stream renders ts, the clusters' targets in cluster order, on parallel
// workers, and prints each cluster as soon as it and every cluster before
// it are rendered, in fleet order. A worker renders a target, masks and
// encodes its objects; the objects are dropped once encoded, and a
// cluster's text once printed, so memory does not grow with the fleet.
//
// A cluster is printed whole or not at all. The first cluster whose render
// fails ends the output: the clusters before it have been printed (each
// complete and correct), nothing from it or after it is. Rendering goes on
// to list every error, and Stream fails. In YAML a last comment line says
// where the output stops; nothing is printed when the first cluster fails.
func (p *Printer) Stream(ctx context.Context, clusters []*fleet.Cluster, ts []render.Target, r Renderer, parallel int) error {
	// firstFailed is the lowest failed target yet: later targets are
	// still rendered, for their errors, but not encoded.
	var firstFailed atomic.Int64
	firstFailed.Store(int64(len(ts)))
	type done struct {
		chunk chunk
		err   error
	}
	var (
		errs    []error
		printed int     // clusters printed
		pending []chunk // the cluster being gathered
		stopAt  = -1    // the first cluster not printed
	)
	last := func(i int) bool { return i+1 == len(ts) || ts[i+1].Cluster.Name != ts[i].Cluster.Name }
	err := runner.Ordered(ctx, len(ts), parallel, window*parallel, func(ctx context.Context, i int) done {
		res := r.RenderTarget(ctx, ts[i])
		if res.Err == nil && int64(i) < firstFailed.Load() {
			c, err := p.encode(res.Objects)
			if err == nil {
				c.create, c.namespaces = ts[i].CreateNamespace, render.NamespacesIn(res.Objects)
				return done{chunk: c}
			}
			res.Err = &render.TargetError{Cluster: ts[i].Cluster.Name, App: ts[i].App, Err: err}
		}
		if res.Err != nil {
			for f := firstFailed.Load(); int64(i) < f && !firstFailed.CompareAndSwap(f, int64(i)); f = firstFailed.Load() {
			}
		}
		return done{err: res.Err}
	}, func(i int, d done) error {
		t := ts[i]
		if last(i) {
			defer r.Release(t.Cluster.Name)
		}
		if d.err != nil {
			errs = append(errs, d.err)
		}
		if stopAt >= 0 {
			return nil
		}
		// Clusters before this one that nothing goes to.
		for clusters[printed].Name != t.Cluster.Name {
			if err := p.flush(clusters[printed], nil); err != nil {
				return err
			}
			printed++
		}
		if d.err != nil {
			stopAt, pending = printed, nil
			return nil
		}
		pending = append(pending, d.chunk)
		if !last(i) {
			return nil
		}
		whole, err := p.withNamespaces(pending)
		if err == nil {
			err = p.flush(clusters[printed], whole)
		}
		pending = nil
		printed++
		return err
	})
	return p.end(ctx, clusters, printed, stopAt >= 0, errs, err)
}

// withNamespaces is a cluster's chunks with the Namespaces its apps ask
// to be created (render.NamespacesToCreate), each before its app's: what
// apply sends.
func (p *Printer) withNamespaces(chunks []chunk) ([]chunk, error) {
	create, rendered := make([]string, len(chunks)), make([][]string, len(chunks))
	for i, c := range chunks {
		create[i], rendered[i] = c.create, c.namespaces
	}
	out := make([]chunk, 0, len(chunks))
	for i, ns := range render.NamespacesToCreate(create, rendered) {
		if ns != "" {
			c, err := p.encode([]*unstructured.Unstructured{render.Namespace(ns)})
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		out = append(out, chunks[i])
	}
	return out, nil
}

// end finishes a stream that printed the first printed clusters: the
// clusters left that nothing goes to when it went through, else the error
// that says where the output stops (stopped: a render failed; errs are the
// render errors, err emit's or the context's).
func (p *Printer) end(ctx context.Context, clusters []*fleet.Cluster, printed int, stopped bool, errs []error, err error) error {
	if err == nil && !stopped {
		for ; printed < len(clusters); printed++ {
			if err := p.flush(clusters[printed], nil); err != nil {
				return err
			}
		}
		return nil
	}
	var where string
	if printed < len(clusters) {
		where = clusters[printed].Name
	}
	if err == nil && printed > 0 {
		p.stopped(where)
	}
	switch {
	case len(errs) == 0 && ctx.Err() != nil:
		return fmt.Errorf("interrupted: the output stops before cluster %s (%d of %d clusters printed): %w", where, printed, len(clusters), err)
	case len(errs) == 0:
		return err
	case printed == 0:
		return render.Failed(errs)
	}
	return errors.Join(fmt.Errorf("rendering failed: the output stops before cluster %s (%d of %d clusters printed):\n  %s", where, printed, len(clusters), strings.Join(render.GroupErrors(errs), "\n  ")), err)
}
