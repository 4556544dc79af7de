package encode

import (
	"encoding/json"
	"testing"

	yaml2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// benchObject is a Deployment as render prints it.
func benchObject(tb testing.TB) map[string]any {
	tb.Helper()
	var obj map[string]any
	err := yaml.Unmarshal([]byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: web
  labels: {app: web, env: production}
  annotations: {description: "web server of the fleet, serving the public site: keep it up and running at all times please"}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, env: production}}
    spec:
      containers:
        - name: web
          image: ghcr.io/acme/web:1.0
          args: [--port=8080, --log-level=info]
          ports: [{containerPort: 8080, name: http, protocol: TCP}]
          env: [{name: CLUSTER, value: prod-eu}, {name: DEBUG, value: "false"}]
          resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}
          readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 10}
`), &obj)
	if err != nil {
		tb.Fatal(err)
	}
	return obj
}

// BenchmarkYAML compares AppendYAML with what it replaces,
// sigs.k8s.io/yaml.Marshal; BenchmarkJSON AppendJSON with json.Marshal.
func BenchmarkYAML(b *testing.B) {
	obj := benchObject(b)
	b.Run("AppendYAML", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = AppendYAML(buf[:0], obj)
		}
	})
	b.Run("yaml.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = yaml.Marshal(obj)
		}
	})
	// go.yaml.in/yaml/v2 called directly skips sigs.k8s.io/yaml's JSON
	// round trip; it writes other bytes for some objects (TestYAMLv2).
	b.Run("yamlv2.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = yaml2.Marshal(obj)
		}
	})
}

func BenchmarkJSON(b *testing.B) {
	obj := benchObject(b)
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = AppendJSON(buf[:0], obj)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(obj)
		}
	})
}
