package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The app every tool deploys: a kustomize base of one Namespace and n
// objects (ConfigMaps and Deployments, alternating) with ${VARS} for the
// cluster's values, and an overlay per group that labels them. The same
// files serve kubectl fleet (its substitution) and the shell loops
// (envsubst with the values exported), which is what users migrate from.

// groups are the fleet's groups, in rollout order.
var groups = []string{"staging", "production"}

// cluster is one cluster of a generated fleet.
type cluster struct {
	name, group, context, region string
	replicas                     int
}

// fleetClusters returns n clusters, the first staging of them in the
// staging group, the rest in production, with contexts prefix1…prefixN.
func fleetClusters(n, staging int, prefix string) []cluster {
	var cs []cluster
	for i := 1; i <= n; i++ {
		c := cluster{name: fmt.Sprintf("c%d", i), group: groups[1], context: fmt.Sprintf("%s%d", prefix, i), region: "eu", replicas: 2}
		if i <= staging {
			c.group, c.replicas = groups[0], 1
		}
		if i%2 == 0 {
			c.region = "us"
		}
		cs = append(cs, c)
	}
	return cs
}

// changedCount is how many of n objects a rollout changes: a fifth.
func changedCount(n int) int { return max(1, n/5) }

// objectName is the name of the i-th object: ConfigMaps at even
// positions, Deployments at odd ones.
func objectName(i int) string {
	if i%2 == 0 {
		return fmt.Sprintf("cm-%03d", i)
	}
	return fmt.Sprintf("web-%03d", i)
}

// objectYAML is the i-th object at revision rev.
func objectYAML(i, rev int) string {
	name := objectName(i)
	if i%2 == 0 {
		return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: ${ns}
  labels:
    app.kubernetes.io/name: %s
data:
  cluster: ${FLEET_CLUSTER_NAME}
  region: ${region}
  revision: "%d"
  settings.ini: |
    [server]
    listen = 0.0.0.0:8080
    log-level = info
    upstream = https://api.${region}.example.com
`, name, name, rev)
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  namespace: ${ns}
  labels:
    app.kubernetes.io/name: %s
spec:
  replicas: ${replicas}
  selector:
    matchLabels:
      app.kubernetes.io/name: %s
  template:
    metadata:
      labels:
        app.kubernetes.io/name: %s
    spec:
      containers:
        - name: web
          image: ${registry}/web:1.%d
          args: ["--region", "${region}"]
          env:
            - name: CLUSTER
              value: "${FLEET_CLUSTER_NAME}"
          ports:
            - containerPort: 8080
          resources:
            requests: {cpu: 10m, memory: 16Mi}
`, name, name, name, name, rev)
}

// writeSource writes the app under dir: base/ and one overlay per group.
// Every object is at revision 1.
func writeSource(dir string, n int) error {
	var res strings.Builder
	res.WriteString("resources:\n  - namespace.yaml\n")
	files := map[string]string{"base/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${ns}\n"}
	for i := 0; i < n; i++ {
		f := objectName(i) + ".yaml"
		fmt.Fprintf(&res, "  - %s\n", f)
		files["base/"+f] = objectYAML(i, 1)
	}
	files["base/kustomization.yaml"] = res.String()
	for _, g := range groups {
		files[g+"/kustomization.yaml"] = "resources:\n  - ../base\nlabels:\n  - pairs:\n      env: " + g + "\n"
	}
	for p, s := range files {
		if err := writeFile(filepath.Join(dir, p), s); err != nil {
			return err
		}
	}
	return nil
}

// setRevision rewrites the objects a rollout changes (the first fifth) at
// revision rev, and returns their names.
func setRevision(dir string, n, rev int) ([]string, error) {
	var names []string
	for i := 0; i < changedCount(n); i++ {
		names = append(names, objectName(i))
		if err := writeFile(filepath.Join(dir, "base", objectName(i)+".yaml"), objectYAML(i, rev)); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// fleetYAML is a fleet file for cs whose app goes to namespace ns.
func fleetYAML(cs []cluster, ns string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata:
  name: bench
defaults:
  attributes: {registry: ghcr.io/acme, ns: %s}
groups:
  - {name: staging, attributes: {replicas: 1}}
  - {name: production, attributes: {replicas: 2}}
clusters:
`, ns)
	for _, c := range cs {
		fmt.Fprintf(&b, "  - {name: %s, group: %s, context: %s, attributes: {region: %s}}\n", c.name, c.group, c.context, c.region)
	}
	return b.String()
}

// batchedFleetYAML is fleetYAML with production in batches: the
// planning of a progressive rollout, measured on a no-op.
func batchedFleetYAML(cs []cluster, ns string) string {
	return strings.Replace(fleetYAML(cs, ns), "  - {name: production, attributes: {replicas: 2}}\n", "  - {name: production, attributes: {replicas: 2}, batches: [1, 1%, 10%, 100%]}\n", 1)
}

// clustersTxt is the list the shell loops read: name, group, replicas,
// region, context per line.
func clustersTxt(cs []cluster) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s %s %d %s %s\n", c.name, c.group, c.replicas, c.region, c.context)
	}
	return b.String()
}

// loopScript is the loop users write today, for apply, diff and render:
// one kustomize build per cluster, envsubst for its values, kubectl for
// its context; sequential, or each cluster in the background (&) and a
// wait for all. Usage: loop.sh NAMESPACE apply|diff|render seq|par CLUSTERS.
const loopScript = `#!/usr/bin/env bash
# What users script today: per cluster, kustomize build | envsubst | kubectl.
set -uo pipefail
export ns=$1 registry=ghcr.io/acme
verb=$2 mode=$3 clusters=$4 src=$(dirname "$0")/src
one() {
  export FLEET_CLUSTER_NAME=$1 replicas=$3 region=$4
  case $verb in
    apply)  kustomize build "$src/$2" | envsubst | kubectl apply --server-side --context "$5" -f - ;;
    diff)   kustomize build "$src/$2" | envsubst | kubectl diff --server-side --context "$5" -f - ;;
    render) kustomize build "$src/$2" | envsubst ;;
  esac
}
rc=0 pids=()
while read -r name group replicas region context; do
  if [ "$mode" = par ]; then
    one "$name" "$group" "$replicas" "$region" "$context" &
    pids+=($!)
  else
    one "$name" "$group" "$replicas" "$region" "$context" || rc=1
  fi
done <"$clusters"
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
`

// helmLoopScript is the loop users write for a chart: one helm template
// per cluster with its group's values file. Usage: helm-loop.sh CHART
// VALUES-DIR CLUSTERS.
const helmLoopScript = `#!/usr/bin/env bash
set -uo pipefail
chart=$1 values=$2 clusters=$3 rc=0
while read -r name group replicas region context; do
  helm template web "$chart" -n web -f "$values/$group.yaml" --include-crds >/dev/null || rc=1
done <"$clusters"
exit $rc
`

func writeFile(path, s string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
