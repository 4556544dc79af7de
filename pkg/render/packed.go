package render

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// packed is a render's objects held compact, as CBOR (RFC 8949) in one
// buffer: a Deployment of 20 fields is 0.46 KB there, 2 KB as the maps a
// substituted render shares with its source's build, 6 KB as maps of its
// own. Kubernetes' own CBOR modes (k8s.io/apimachinery's cbor/direct,
// already in the binary) read back exactly the values a YAML or JSON
// object holds: integers as int64, floats as float64, strings whatever
// their bytes, null, lists and maps.
type packed struct {
	data []byte
	ends []int
}

// pack is objs packed; it fails on what CBOR cannot hold as JSON does (a
// NaN), and the objects are then kept as they are.
func pack(objs []*unstructured.Unstructured) (*packed, error) {
	p := &packed{ends: make([]int, 0, len(objs))}
	for _, o := range objs {
		b, err := direct.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("packing %s: %w", ObjectRef(o), err)
		}
		p.data = append(p.data, b...)
		p.ends = append(p.ends, len(p.data))
	}
	p.data = slices.Clip(p.data)
	return p, nil
}

// objects reads the objects back, each of its own.
func (p *packed) objects() ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, len(p.ends))
	start := 0
	for i, end := range p.ends {
		var m map[string]any
		if err := direct.Unmarshal(p.data[start:end], &m); err != nil {
			return nil, fmt.Errorf("reading packed object %d back: %w", i, err)
		}
		objs[i], start = &unstructured.Unstructured{Object: m}, end
	}
	return objs, nil
}

// Pack makes the result's objects such that Again makes them again when
// nothing else can (a render of the cluster's own: jsonnet, a chart, a
// file read once): they are packed, and whoever holds the result may let
// its Objects go for a twentieth of their memory or less. A result its
// source's build makes again is left as it is. It fails, changing
// nothing, for a failed render or objects CBOR cannot hold.
func (r *Result) Pack() error {
	switch {
	case r.Err != nil:
		return r.Err
	case r.again != nil:
		return nil
	}
	p, err := pack(r.Objects)
	if err != nil {
		return err
	}
	r.again = p.objects
	return nil
}

// Forget lets go of the result's objects and of what makes them again
// (the objects Pack packed, or this result's hold on the build the
// fleet shares): nothing reads them again.
func (r *Result) Forget() {
	r.Objects, r.again = nil, nil
}
