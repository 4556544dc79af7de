package render

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// writeOverlay writes a kustomize base of n objects with staging and
// production overlays under dir.
func writeOverlay(tb testing.TB, dir string, n int) {
	tb.Helper()
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	res := "resources:\n"
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("obj%02d.yaml", i)
		res += "  - " + name + "\n"
		if i%2 == 0 {
			write(filepath.Join(dir, "base", name), fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web%d}\nspec:\n  replicas: ${replicas}\n  selector: {matchLabels: {app: web%d}}\n  template:\n    metadata: {labels: {app: web%d}}\n    spec:\n      containers:\n        - {name: web, image: '${registry}/web:1.0', env: [{name: CLUSTER, value: '${FLEET_CLUSTER_NAME}'}]}\n", i, i, i))
		} else {
			write(filepath.Join(dir, "base", name), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%d}\ndata: {cluster: '${FLEET_CLUSTER_NAME}', domain: '${domain:=example.com}'}\n", i))
		}
	}
	write(filepath.Join(dir, "base", "kustomization.yaml"), res)
	for _, g := range []string{"staging", "production"} {
		write(filepath.Join(dir, g, "kustomization.yaml"), "resources: [../base]\nnamespace: web\nlabels:\n  - pairs: {env: "+g+"}\n")
	}
}

// BenchmarkRender100Clusters renders one kustomize overlay of 20 objects
// for 100 clusters in two groups. Deduplication makes it two kustomize
// builds plus 100 cheap substitutions; builds/op reports it.
func BenchmarkRender100Clusters(b *testing.B) {
	dir := b.TempDir()
	writeOverlay(b, dir, 20)
	var targets []Target
	for i := 0; i < 100; i++ {
		g := "staging"
		if i >= 10 {
			g = "production"
		}
		targets = append(targets, Target{Cluster: cluster(fmt.Sprintf("c%03d", i), g, map[string]any{"replicas": 1 + i%3, "registry": "ghcr.io/acme"}), App: "web", Source: Source{Type: Kustomize, Path: dir}})
	}
	b.ReportAllocs()
	var builds int
	for b.Loop() {
		e := &Engine{}
		for _, r := range e.Render(context.Background(), targets) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
			if len(r.Objects) != 20 {
				b.Fatalf("%d objects", len(r.Objects))
			}
		}
		builds = e.Renders()
	}
	b.ReportMetric(float64(builds), "builds/op")
}

// BenchmarkRenderOneBuild is the cost of one kustomize build of the same
// overlay, the unit the 100-cluster render should cost about two of.
func BenchmarkRenderOneBuild(b *testing.B) {
	dir := b.TempDir()
	writeOverlay(b, dir, 20)
	t := []Target{{Cluster: cluster("c", "staging", map[string]any{"replicas": 1, "registry": "r"}), App: "web", Source: Source{Type: Kustomize, Path: dir}}}
	b.ReportAllocs()
	for b.Loop() {
		if r := (&Engine{}).Render(context.Background(), t)[0]; r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

// BenchmarkScriptedLoop100Clusters is what users script today: one
// `kustomize build | envsubst` per cluster, 100 builds. It runs kustomize in
// process, so it is kinder to the loop than the real thing (no process
// start-up per cluster).
func BenchmarkScriptedLoop100Clusters(b *testing.B) {
	dir := b.TempDir()
	writeOverlay(b, dir, 20)
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < 100; i++ {
			g := "staging"
			if i >= 10 {
				g = "production"
			}
			c := cluster(fmt.Sprintf("c%03d", i), g, map[string]any{"replicas": 1 + i%3, "registry": "ghcr.io/acme"})
			raws, err := buildKustomize(filepath.Join(dir, g), files{max: DefaultMaxBytes})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := substituteAll(raws, true, VariablesOf(&c), DefaultMaxBytes); err != nil {
				b.Fatal(err)
			}
		}
	}
}
