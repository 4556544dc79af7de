// Package encode writes objects as render prints them: AppendYAML, byte for
// byte what sigs.k8s.io/yaml.Marshal writes, and AppendJSON, what
// encoding/json writes, without their detours.
//
// The YAML writer is a port of go-yaml's emitter, a thousand lines kept
// because render needs it: on the render bench (100 clusters of 100
// objects, BenchmarkRenderCommand) kubectl fleet render takes 0.35 s with
// it and 1.22–1.30 s with go.yaml.in/yaml/v2's Marshal called directly
// (3.6×), which writes the same bytes on every document of the corpus
// (TestYAMLv2: 0 of 338 differ) but is 13× slower per object
// (BenchmarkYAML: 14 µs against 179 µs; sigs.k8s.io/yaml 563 µs).
package encode
