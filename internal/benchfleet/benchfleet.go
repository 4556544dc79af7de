// Package benchfleet writes the fleet that render's benchmarks render: n
// clusters in two groups and one kustomize app of m objects with an
// overlay per group.
package benchfleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Write writes, under dir, a fleet file of n clusters in two
// groups and one kustomize app of objects objects (half Deployments, half
// ConfigMaps, with variables) with an overlay per group. It returns the
// fleet file's path.
func Write(dir string, clusters, objects int) (string, error) {
	var err error
	write := func(p, s string) {
		if err == nil {
			err = os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err == nil {
			err = os.WriteFile(p, []byte(s), 0o644)
		}
	}
	var res strings.Builder
	res.WriteString("resources:\n")
	for i := 0; i < objects; i++ {
		name := fmt.Sprintf("obj%03d.yaml", i)
		res.WriteString("  - " + name + "\n")
		if i%2 == 0 {
			write(filepath.Join(dir, "web", "base", name), fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web%d, annotations: {description: "web server %d of the fleet, serving the public site: keep it up"}}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web%d}}
  template:
    metadata: {labels: {app: web%d}}
    spec:
      containers:
        - name: web
          image: '${registry}/web:1.0'
          args: [--port=8080, --log-level=info]
          ports: [{containerPort: 8080, name: http}]
          env: [{name: CLUSTER, value: '${FLEET_CLUSTER_NAME}'}, {name: DEBUG, value: "false"}]
          resources: {requests: {cpu: 100m, memory: 64Mi}}
`, i, i, i, i))
		} else {
			write(filepath.Join(dir, "web", "base", name), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%d}\ndata: {cluster: '${FLEET_CLUSTER_NAME}', domain: '${domain:=example.com}', port: \"8080\", script: \"#!/bin/sh\\necho hello\\n\"}\n", i))
		}
	}
	write(filepath.Join(dir, "web", "base", "kustomization.yaml"), res.String())
	for _, g := range []string{"staging", "production"} {
		write(filepath.Join(dir, "web", g, "kustomization.yaml"), "resources: [../base]\nnamespace: web\nlabels:\n  - pairs: {env: "+g+"}\n")
	}
	var f strings.Builder
	f.WriteString("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: bench}\ndefaults:\n  attributes: {registry: ghcr.io/acme}\n")
	f.WriteString("groups:\n  - {name: staging, attributes: {replicas: 1}}\n  - {name: production, attributes: {replicas: 3}}\nclusters:\n")
	for i := 0; i < clusters; i++ {
		g := "production"
		if i%10 == 0 {
			g = "staging"
		}
		fmt.Fprintf(&f, "  - {name: c%04d, group: %s, context: ctx%d}\n", i, g, i)
	}
	f.WriteString("apps:\n  - {name: web, kustomize: web}\n")
	path := filepath.Join(dir, "fleet.yaml")
	write(path, f.String())
	return path, err
}
