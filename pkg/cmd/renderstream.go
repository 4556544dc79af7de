package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// renderWindow is how many targets per CPU may be rendered ahead of the
// one printing: a slow cluster holds back at most this many finished ones.
const renderWindow = 8

// stream renders the selected clusters' apps on GOMAXPROCS workers, and
// prints each cluster as soon as it and every cluster before it are
// rendered, in fleet order. A worker renders a target, masks and encodes
// its objects; the objects are dropped once encoded, and a cluster's text
// once printed, so memory does not grow with the fleet.
//
// A cluster is printed whole or not at all. The first cluster whose render
// fails ends the output: the clusters before it have been printed (each
// complete and correct), nothing from it or after it is. Rendering goes on
// to list every error, and the command fails. In YAML a last comment line
// says where the output stops; nothing is printed when the first cluster
// fails.
func (o *RenderOptions) stream(ctx context.Context) error {
	pl, err := o.plan(ctx, o.Selection, &o.SourceOptions, false)
	if err != nil {
		return err
	}
	if err := o.outputDirsOurs(pl.clusters); err != nil {
		return err
	}
	return o.streamTargets(ctx, pl.clusters, pl.targets(false), o.engine(), runtime.GOMAXPROCS(0))
}

// targetRenderer renders one target at a time; *render.Engine is one.
type targetRenderer interface {
	RenderTarget(ctx context.Context, t render.Target) render.Result
	// Release says that every target of the cluster has been rendered.
	Release(cluster string)
}

// streamTargets renders ts, the clusters' targets in cluster order, on
// parallel workers, and prints the clusters in order (see stream).
func (o *RenderOptions) streamTargets(ctx context.Context, clusters []*fleet.Cluster, ts []render.Target, engine targetRenderer, parallel int) error {
	p := o.printer(clusters)

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
	err := runner.Ordered(ctx, len(ts), parallel, renderWindow*parallel, func(ctx context.Context, i int) done {
		r := engine.RenderTarget(ctx, ts[i])
		if r.Err == nil && int64(i) < firstFailed.Load() {
			c, err := p.encode(r.Objects)
			if err == nil {
				return done{chunk: c}
			}
			r.Err = &render.TargetError{Cluster: ts[i].Cluster.Name, App: ts[i].App, Err: err}
		}
		if r.Err != nil {
			for f := firstFailed.Load(); int64(i) < f && !firstFailed.CompareAndSwap(f, int64(i)); f = firstFailed.Load() {
			}
		}
		return done{err: r.Err}
	}, func(i int, d done) error {
		t := ts[i]
		if last(i) {
			defer engine.Release(t.Cluster.Name)
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
		err := p.flush(clusters[printed], pending)
		pending = nil
		printed++
		return err
	})
	return streamEnd(ctx, p, clusters, printed, stopAt >= 0, errs, err)
}

// streamEnd finishes a stream that printed the first printed clusters:
// the clusters left that nothing goes to when it went through, else the
// error that says where the output stops (stopped: a render failed; errs
// are the render errors, err emit's or the context's).
func streamEnd(ctx context.Context, p *renderPrinter, clusters []*fleet.Cluster, printed int, stopped bool, errs []error, err error) error {
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
		return fmt.Errorf("rendering failed, nothing was done:\n  %s", strings.Join(render.GroupErrors(errs), "\n  "))
	}
	return errors.Join(fmt.Errorf("rendering failed: the output stops before cluster %s (%d of %d clusters printed):\n  %s", where, printed, len(clusters), strings.Join(render.GroupErrors(errs), "\n  ")), err)
}

// chunk is one target's objects, encoded on the worker that rendered them.
type chunk struct {
	objects int
	// data is YAML documents separated by "---", or JSON objects
	// separated by commas.
	data []byte
	// files are --output-dir's, named when the cluster is written.
	files []objectFile
}

type objectFile struct {
	name string // ObjectFileName
	data []byte
}

// renderPrinter writes clusters' objects in order: one YAML stream, JSON lines,
// or --output-dir's folders.
type renderPrinter struct {
	o *RenderOptions
	// prefix names clusters in --output-dir's progress.
	prefix *output.Prefixer
	// documents counts the YAML documents printed, for separators.
	documents int
}

func (o *RenderOptions) printer(clusters []*fleet.Cluster) *renderPrinter {
	p := &renderPrinter{o: o}
	if o.OutputDir != "" {
		p.prefix = o.prefixer(clusters)
	}
	return p
}

// encode masks (on standard output) and encodes objects; it is safe for
// concurrent use.
func (p *renderPrinter) encode(objs []*unstructured.Unstructured) (c chunk, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = chunk{}, fmt.Errorf("encoding: recovered from panic: %v", r)
		}
	}()
	c.objects = len(objs)
	if p.o.OutputDir != "" {
		c.files = make([]objectFile, len(objs))
		for i, obj := range objs {
			y, err := output.AppendYAML(nil, obj.Object)
			if err != nil {
				return chunk{}, err
			}
			c.files[i] = objectFile{name: ObjectFileName(obj), data: y}
		}
		return c, nil
	}
	for i, obj := range objs {
		if !p.o.ShowSecrets {
			obj = output.MaskSecret(obj)
		}
		if p.o.Output == "json" {
			if i > 0 {
				c.data = append(c.data, ',')
			}
			if c.data, err = output.AppendJSON(c.data, obj.Object); err != nil {
				return chunk{}, err
			}
			continue
		}
		if i > 0 {
			c.data = append(c.data, "---\n"...)
		}
		if c.data, err = output.AppendYAML(c.data, obj.Object); err != nil {
			return chunk{}, err
		}
	}
	return c, nil
}

// flush writes one cluster, in one write: its chunks in order.
func (p *renderPrinter) flush(c *fleet.Cluster, chunks []chunk) error {
	n := 0
	for _, ch := range chunks {
		n += ch.objects
	}
	if p.o.OutputDir != "" {
		return p.writeDir(c, chunks, n)
	}
	var b []byte
	if p.o.Output == "json" {
		// As json.Encoder writes a RenderedCluster.
		b = append(b, `{"cluster":`...)
		b = appendJSON(b, c.Name)
		b = append(b, `,"group":`...)
		b = appendJSON(b, c.Group)
		b = append(b, `,"objects":[`...)
		first := true
		for _, ch := range chunks {
			if ch.objects == 0 {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			b, first = append(b, ch.data...), false
		}
		b = append(b, "]}\n"...)
	} else {
		if n == 0 {
			// A comment only: an empty document would parse as null.
			b = fmt.Appendf(b, "# Cluster: %s (no objects)\n", c.Name)
		}
		first := true
		for _, ch := range chunks {
			if ch.objects == 0 {
				continue
			}
			if p.documents > 0 {
				b = append(b, "---\n"...)
			}
			if first {
				b = fmt.Appendf(b, "# Cluster: %s\n", c.Name)
				first = false
			}
			b = append(b, ch.data...)
			p.documents += ch.objects
		}
	}
	_, err := p.o.Out.Write(b)
	return err
}

// stopped ends a YAML stream that stops before a cluster with a comment
// saying so, for whoever reads the stream from a file.
func (p *renderPrinter) stopped(cluster string) {
	if p.o.OutputDir == "" && p.o.Output == "yaml" {
		fmt.Fprintf(p.o.Out, "# Rendering failed: the output stops before cluster %s.\n", cluster)
	}
}

func appendJSON(b []byte, s string) []byte {
	j, _ := json.Marshal(s)
	return append(b, j...)
}

// renderedMarker, in a cluster's --output-dir folder, lists the files a
// render wrote there: the next render removes those, and nothing else.
const renderedMarker = ".kubectl-fleet-render"

// outputDirsOurs refuses, before anything is rendered or written, a
// cluster folder of --output-dir that holds files no render wrote (a
// kustomize overlay of the same name, say): they would be mixed with the
// render's, or taken for stale ones.
func (o *RenderOptions) outputDirsOurs(clusters []*fleet.Cluster) error {
	if o.OutputDir == "" {
		return nil
	}
	var theirs []string
	for _, c := range clusters {
		dir := filepath.Join(o.OutputDir, c.Name)
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) == 0 {
			continue // missing or empty: ours to fill
		}
		if _, err := os.Stat(filepath.Join(dir, renderedMarker)); err == nil {
			continue
		}
		names := make([]string, 0, 3)
		for _, e := range entries[:min(3, len(entries))] {
			names = append(names, e.Name())
		}
		theirs = append(theirs, fmt.Sprintf("%s (%s)", dir, strings.Join(names, ", ")))
	}
	if len(theirs) > 0 {
		return fmt.Errorf("--output-dir: %s: not written by kubectl fleet render (no %s), so not ours to replace; give an empty or new folder", strings.Join(theirs, "; "), renderedMarker)
	}
	return nil
}

// writeDir writes one cluster's folder: DIR/<cluster>/<file>.yaml, the
// files the last render listed in its marker removed first (and no
// other: a file someone added there stays).
func (p *renderPrinter) writeDir(c *fleet.Cluster, chunks []chunk, n int) error {
	dir := filepath.Join(p.o.OutputDir, c.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil { // it holds Secrets, unmasked
		return err
	}
	if last, err := os.ReadFile(filepath.Join(dir, renderedMarker)); err == nil {
		for _, name := range strings.Split(string(last), "\n") {
			if name == "" || name != filepath.Base(name) || !strings.HasSuffix(name, ".yaml") {
				continue // only the files of this folder a render names
			}
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	var written []string
	defer func() {
		_ = os.WriteFile(filepath.Join(dir, renderedMarker), []byte(strings.Join(written, "\n")+"\n"), 0o644)
	}()
	seen := map[string]int{}
	for _, ch := range chunks {
		for _, f := range ch.files {
			name := f.name
			if k := seen[f.name]; k > 0 {
				name = fmt.Sprintf("%s_%d.yaml", strings.TrimSuffix(name, ".yaml"), k+1)
			}
			seen[f.name]++
			mode := os.FileMode(0o644)
			if strings.HasPrefix(name, "secret_") {
				mode = 0o600
			}
			if err := os.WriteFile(filepath.Join(dir, name), f.data, mode); err != nil {
				return err
			}
			written = append(written, name)
		}
	}
	fmt.Fprintf(p.o.ErrOut, "%s wrote %d objects to %s\n", p.prefix.Prefix(c.Name), n, dir)
	return nil
}
