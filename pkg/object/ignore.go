package object

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// IgnoreRule names fields of some objects whose differences are not drift,
// like Argo CD's ignoreDifferences: diff and status leave them out, and
// apply keeps their live values (a replica count an autoscaler manages).
// Empty Group, Name and Namespace match any; Kind "*" matches any kind.
type IgnoreRule struct {
	Group        string   `yaml:"group" json:"group,omitempty"`
	Kind         string   `yaml:"kind" json:"kind" jsonschema:"required"`
	Name         string   `yaml:"name" json:"name,omitempty"`
	Namespace    string   `yaml:"namespace" json:"namespace,omitempty"`
	JSONPointers []string `yaml:"jsonPointers" json:"jsonPointers" jsonschema:"required"`
}

// Matches reports whether the rule covers o.
func (r IgnoreRule) Matches(o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	return (r.Kind == "*" || r.Kind == gvk.Kind) &&
		(r.Group == "" || r.Group == "*" || r.Group == gvk.Group) &&
		(r.Name == "" || r.Name == o.GetName()) &&
		(r.Namespace == "" || r.Namespace == o.GetNamespace())
}

// pointersFor returns the parsed pointers of every rule that covers o.
func pointersFor(o *unstructured.Unstructured, rules []IgnoreRule) [][]string {
	var out [][]string
	for _, r := range rules {
		if !r.Matches(o) {
			continue
		}
		for _, p := range r.JSONPointers {
			if tokens, err := ParsePointer(p); err == nil {
				out = append(out, tokens)
			}
		}
	}
	return out
}

// Ignored reports whether any rule covers o.
func Ignored(o *unstructured.Unstructured, rules []IgnoreRule) bool {
	return o != nil && len(pointersFor(o, rules)) > 0
}

// WithoutIgnored returns a copy of o without the fields the rules that
// cover it name; o itself when none does. nil stays nil.
func WithoutIgnored(o *unstructured.Unstructured, rules []IgnoreRule) *unstructured.Unstructured {
	if o == nil {
		return nil
	}
	ptrs := pointersFor(o, rules)
	if len(ptrs) == 0 {
		return o
	}
	o = o.DeepCopy()
	for _, p := range ptrs {
		o.Object, _ = remove(o.Object, p).(map[string]any)
	}
	return o
}

// KeepLive makes a rendered object leave the ignored fields as they are
// live, as Argo CD's RespectIgnoreDifferences does: where both set a field
// the live value is applied, and a field the live object no longer has is
// not applied. Fields the render does not set are left alone, and a new
// object (live nil) gets the rendered values. It changes obj in place, on
// a copy of its fields (obj may share them with others: CopyMeta).
func KeepLive(obj, live *unstructured.Unstructured, rules []IgnoreRule) {
	if live == nil {
		return
	}
	pointers := pointersFor(obj, rules)
	if len(pointers) > 0 {
		obj.Object = runtime.DeepCopyJSON(obj.Object)
	}
	for _, p := range pointers {
		if _, ok := get(obj.Object, p); !ok {
			continue
		}
		if v, ok := get(live.Object, p); ok {
			replace(obj.Object, p, runtime.DeepCopyJSONValue(v))
		} else {
			obj.Object, _ = remove(obj.Object, p).(map[string]any)
		}
	}
}

// ParsePointer parses a JSON pointer (RFC 6901) into its reference tokens.
// The empty pointer, the whole object, is refused: ignoring everything is
// not a rule.
func ParsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer: it must start with /, as in /spec/replicas", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf("%q is not a JSON pointer: ~ must be followed by 0 or 1 (~0 is ~, ~1 is /)", p)
			}
		}
		tokens[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
	}
	switch tokens[0] {
	case "apiVersion", "kind":
		return nil, fmt.Errorf("%q: the object's %s cannot be ignored", p, tokens[0])
	case "metadata":
		if len(tokens) == 1 || tokens[1] == "name" || tokens[1] == "namespace" {
			return nil, fmt.Errorf("%q: the object's identity cannot be ignored", p)
		}
	}
	return tokens, nil
}

// get returns the value at a pointer.
func get(v any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[t]; !ok {
				return nil, false
			}
		case []any:
			i, ok := index(t, len(c))
			if !ok {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// replace sets the value at a pointer whose parent exists.
func replace(v any, tokens []string, value any) {
	parent, ok := get(v, tokens[:len(tokens)-1])
	if !ok {
		return
	}
	last := tokens[len(tokens)-1]
	switch c := parent.(type) {
	case map[string]any:
		c[last] = value
	case []any:
		if i, ok := index(last, len(c)); ok {
			c[i] = value
		}
	}
}

// remove returns v without the value at a pointer.
func remove(v any, tokens []string) any {
	if len(tokens) == 0 {
		return v
	}
	switch c := v.(type) {
	case map[string]any:
		child, ok := c[tokens[0]]
		if !ok {
			return v
		}
		if len(tokens) == 1 {
			delete(c, tokens[0])
		} else {
			c[tokens[0]] = remove(child, tokens[1:])
		}
	case []any:
		i, ok := index(tokens[0], len(c))
		if !ok {
			return v
		}
		if len(tokens) == 1 {
			return append(c[:i:i], c[i+1:]...)
		}
		c[i] = remove(c[i], tokens[1:])
	}
	return v
}

func index(t string, n int) (int, bool) {
	i, err := strconv.Atoi(t)
	return i, err == nil && i >= 0 && i < n && strconv.Itoa(i) == t
}
