// Command floor is the least a client can do to apply a fleet: it reads
// already rendered objects and sends each one server-side apply PATCH,
// nothing else (no discovery, no reads, no inventory, no lock). make bench
// times it as the floor kubectl fleet apply is measured against.
//
// Usage: floor -kubeconfig FILE [-concurrency 32] CONTEXT=DIR...
//
// Every cluster is worked on at once; inside a cluster, Namespaces go first,
// then the rest with -concurrency requests in flight, as kubectl fleet
// apply does. The client is as fast as kubectl fleet's (QPS 100, burst 200,
// one HTTP/2 connection per cluster). DIR holds one object per file, as
// kubectl fleet render --output-dir writes them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// resources maps the kinds make bench renders to their resources, so that
// the floor needs no discovery. The bool is whether the kind is namespaced.
var resources = map[schema.GroupKind]struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}{
	{Kind: "Namespace"}:                 {schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
	{Kind: "ConfigMap"}:                 {schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true},
	{Kind: "Service"}:                   {schema.GroupVersionResource{Version: "v1", Resource: "services"}, true},
	{Kind: "Secret"}:                    {schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, true},
	{Group: "apps", Kind: "Deployment"}: {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig with every context")
	concurrency := flag.Int("concurrency", 32, "requests in flight per cluster")
	flag.Parse()
	if err := run(context.Background(), *kubeconfig, *concurrency, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

type target struct {
	context string
	objs    []*unstructured.Unstructured
}

func run(ctx context.Context, kubeconfig string, concurrency int, args []string) error {
	if kubeconfig == "" || len(args) == 0 || concurrency < 1 {
		return fmt.Errorf("usage: floor -kubeconfig FILE [-concurrency N] CONTEXT=DIR...")
	}
	var targets []target
	for _, a := range args {
		kctx, dir, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("%q: want CONTEXT=DIR", a)
		}
		objs, err := load(dir)
		if err != nil {
			return err
		}
		targets = append(targets, target{kctx, objs})
	}
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { errs[i] = applyCluster(ctx, kubeconfig, t, concurrency) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("%s: %w", targets[i].context, err)
		}
	}
	return nil
}

// load reads every .yaml file of dir, one object each.
func load(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &o.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

func applyCluster(ctx context.Context, kubeconfig string, t target, concurrency int) error {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: t.context}).ClientConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var first, rest []*unstructured.Unstructured
	for _, o := range t.objs {
		if o.GetKind() == "Namespace" {
			first = append(first, o)
		} else {
			rest = append(rest, o)
		}
	}
	for _, stage := range [][]*unstructured.Unstructured{first, rest} {
		if err := applyAll(ctx, dyn, stage, concurrency); err != nil {
			return err
		}
	}
	return nil
}

func applyAll(ctx context.Context, dyn dynamic.Interface, objs []*unstructured.Unstructured, concurrency int) error {
	sem := make(chan struct{}, concurrency)
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	for i, o := range objs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = applyOne(ctx, dyn, o)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func applyOne(ctx context.Context, dyn dynamic.Interface, o *unstructured.Unstructured) error {
	gk := o.GroupVersionKind().GroupKind()
	r, ok := resources[gk]
	if !ok {
		return fmt.Errorf("%s %s: kind not known to the floor", gk, o.GetName())
	}
	body, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = dyn.Resource(r.gvr)
	if r.namespaced {
		ri = dyn.Resource(r.gvr).Namespace(o.GetNamespace())
	}
	if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "bench-floor"}); err != nil {
		return fmt.Errorf("%s %s: %w", gk, o.GetName(), err)
	}
	return nil
}
