package rendered

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testfiles"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// BenchmarkShedJsonnet renders a jsonnet app of 50 ConfigMaps and 50
// Deployments for 100 clusters, all but 10 of them shed (their objects
// packed, render.Result.Pack), and reports the live heap the set holds
// per cluster, beside a render that keeps every cluster's objects.
func BenchmarkShedJsonnet(b *testing.B) {
	const clusters = 100
	dir := b.TempDir()
	var fy strings.Builder
	fy.WriteString("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: prod}]\nclusters:\n")
	for i := range clusters {
		fmt.Fprintf(&fy, "- {name: c%04d, group: prod, context: c%04d, attributes: {region: eu, replicas: %d}}\n", i, i, i%3+1)
	}
	fy.WriteString("apps:\n- {name: web, jsonnet: web.jsonnet, namespace: web}\n")
	testfiles.Write(b, dir, map[string]string{"fleet.yaml": fy.String(), "web.jsonnet": `
local c = std.extVar('cluster');
[
  if i % 2 == 0 then {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'cm-%03d' % i, labels: {'app.kubernetes.io/name': 'cm-%03d' % i}},
    data: {cluster: c.name, region: c.attributes.region, revision: '1', 'settings.ini': '[server]\nlisten = 0.0.0.0:8080\nupstream = https://api.%s.example.com\n' % c.attributes.region}}
  else {apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: 'web-%03d' % i, labels: {'app.kubernetes.io/name': 'web-%03d' % i}},
    spec: {replicas: c.attributes.replicas, selector: {matchLabels: {'app.kubernetes.io/name': 'web-%03d' % i}},
      template: {metadata: {labels: {'app.kubernetes.io/name': 'web-%03d' % i}}, spec: {containers: [{name: 'web', image: 'r/web:1.1', args: ['--region', c.attributes.region],
        env: [{name: 'CLUSTER', value: c.name}], ports: [{containerPort: 8080}], resources: {requests: {cpu: '10m', memory: '16Mi'}}}]}}}}
  for i in std.range(0, 99)
]
`})
	f, err := fleet.Load(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, shed := range []bool{false, true} {
		b.Run(fmt.Sprintf("shed=%v", shed), func(b *testing.B) {
			for b.Loop() {
				c := Config{Fleet: f, Engine: &render.Engine{}}
				if shed {
					c.Shed = func(cs []*fleet.Cluster) map[string]bool {
						out := map[string]bool{}
						for _, c := range cs[10:] {
							out[c.Name] = true
						}
						return out
					}
				}
				before := liveHeap()
				s, err := Render(b.Context(), c)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(liveHeap()-before)/clusters/1024, "KiB-held/cluster")
				runtime.KeepAlive(s)
			}
		})
	}
}

// liveHeap is the heap live after a collection.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
