package render

import (
	"math"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// nodeObject is an object kustomize built, as `kustomize build | kubectl
// apply` would apply it, read from its YAML node rather than printed and
// parsed again (which was half of a build's time): scalars decode as
// YAML reads them, numbers become what the JSON between YAML and the
// object makes of them (int64, float64 only when not a whole number), and
// size counts its keys and scalars (about its YAML's length). vars is
// whether a key or scalar holds "${". ok is false for what this does not
// decode exactly as the printed YAML would be parsed (an alias, a merge
// key, a key that is not a string, a timestamp or binary scalar, a tag of
// its own, a float JSON cannot hold, a null left empty): the caller
// parses the YAML then.
func nodeObject(n *yaml.Node) (obj map[string]any, size int64, vars, ok bool) {
	d := &nodeDecoder{}
	v, ok := d.value(n)
	if m, isMap := v.(map[string]any); ok && isMap {
		return m, d.size, d.vars, true
	}
	return nil, 0, false, false
}

type nodeDecoder struct {
	size int64
	vars bool
}

func (d *nodeDecoder) value(n *yaml.Node) (any, bool) {
	switch n.Kind {
	case yaml.MappingNode:
		return d.mapping(n)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, item := range n.Content {
			v, ok := d.value(item)
			if !ok {
				return nil, false
			}
			out[i] = v
		}
		return out, true
	case yaml.ScalarNode:
		return d.scalar(n)
	}
	return nil, false // an alias (kustomize gives no document node)
}

func (d *nodeDecoder) mapping(n *yaml.Node) (any, bool) {
	out := make(map[string]any, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != yaml.NodeTagString || k.Value == "<<" {
			return nil, false
		}
		if _, dup := out[k.Value]; dup {
			return nil, false
		}
		d.text(k.Value)
		v, ok := d.value(n.Content[i+1])
		if !ok {
			return nil, false
		}
		out[k.Value] = v
	}
	return out, true
}

func (d *nodeDecoder) scalar(n *yaml.Node) (any, bool) {
	switch n.ShortTag() {
	case yaml.NodeTagString:
		d.text(n.Value)
		return n.Value, true
	case yaml.NodeTagNull:
		// An empty one is printed "" in a flow mapping, which parses as
		// a string: the YAML says which.
		d.size += 4
		return nil, n.Value != ""
	case yaml.NodeTagBool, yaml.NodeTagInt, yaml.NodeTagFloat:
	default:
		return nil, false
	}
	d.size += int64(len(n.Value)) + 4
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, false
	}
	switch v := v.(type) {
	case bool:
		return v, true
	case int:
		return int64(v), true
	case int64:
		return v, true
	case uint64:
		if v <= math.MaxInt64 {
			return int64(v), true
		}
		return float64(v), true
	case float64:
		return jsonNumber(v)
	}
	return nil, false
}

// jsonNumber is the number JSON makes of f: a whole number that fits is
// an int64 (Go prints it without a fraction, and Kubernetes' JSON reads
// it as an integer), any other a float64; NaN and infinities it cannot
// hold.
func jsonNumber(f float64) (any, bool) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return nil, false
	case f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63:
		return int64(f), true
	}
	return f, true
}

func (d *nodeDecoder) text(s string) {
	d.size += int64(len(s)) + 4
	if !d.vars && strings.Contains(s, "${") {
		d.vars = true
	}
}
