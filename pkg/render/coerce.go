package render

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
)

// Text substitution (like Flux's) turns `replicas: ${replicas}` into the
// integer it should be, but kustomize drops the quotes of `value:
// "${port}"` before substitution sees them, so a value meant as text can
// come out a number or a boolean. coerceStrings turns such values back into
// text in the fields the Kubernetes API types as strings: label, annotation
// and selector maps, ConfigMap data, Secret stringData, and containers'
// image, command, args and env values.
//
// It writes nothing it was given: the maps and lists on the way to a
// value it turns into text are copies, and the rest is obj's, which
// other clusters' renders may share (expansion.value).
func coerceStrings(obj map[string]any) map[string]any {
	out, copied := walk(obj)
	m := cow{m: out.(map[string]any), copied: copied}
	if field := textFields[obj["kind"]]; field != "" {
		if v, changed := stringified(m.m[field]); changed {
			m.set(field, v)
		}
	}
	return m.m
}

// textFields are the kinds whose one field is a map of text.
var textFields = map[any]string{"ConfigMap": "data", "Secret": "stringData"}

// cow is a map written copy on write: its first change copies it.
type cow struct {
	m      map[string]any
	copied bool
}

func (c *cow) set(k string, v any) {
	if !c.copied {
		c.m, c.copied = maps.Clone(c.m), true
	}
	c.m[k] = v
}

// walk coerces the string fields found anywhere under v, and reports
// whether any was (v is then a copy on the way to them).
func walk(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		m := cow{m: x}
		for k, child := range x {
			nv, changed := walk(child)
			switch k {
			case "labels", "annotations", "matchLabels", "nodeSelector":
				if s, ok := stringified(nv); ok {
					nv, changed = s, true
				}
			case "containers", "initContainers", "ephemeralContainers":
				if s, ok := eachItem(nv, coerceContainer); ok {
					nv, changed = s, true
				}
			}
			if changed {
				m.set(k, nv)
			}
		}
		return m.m, m.copied
	case []any:
		return eachItem(x, walk)
	}
	return v, false
}

// eachItem applies f to each item of a list, copying the list at the
// first item f changes.
func eachItem(v any, f func(any) (any, bool)) (any, bool) {
	list, ok := v.([]any)
	if !ok {
		return v, false
	}
	var out []any
	for i, item := range list {
		if nv, changed := f(item); changed {
			if out == nil {
				out = slices.Clone(list)
			}
			out[i] = nv
		}
	}
	if out == nil {
		return v, false
	}
	return out, true
}

func coerceContainer(v any) (any, bool) {
	c, ok := v.(map[string]any)
	if !ok {
		return v, false
	}
	m := cow{m: c}
	if img, ok := c["image"]; ok && !isString(img) {
		m.set("image", text(img))
	}
	for _, k := range []string{"command", "args"} {
		if list, changed := eachItem(c[k], textItem); changed {
			m.set(k, list)
		}
	}
	env, changed := eachItem(c["env"], func(e any) (any, bool) {
		em, ok := e.(map[string]any)
		if val, has := em["value"]; !ok || !has || isString(val) {
			return e, false
		}
		out := maps.Clone(em)
		out["value"] = text(em["value"])
		return out, true
	})
	if changed {
		m.set("env", env)
	}
	return m.m, m.copied
}

func textItem(v any) (any, bool) {
	if isString(v) {
		return v, false
	}
	return text(v), true
}

// stringified is a map whose values that are not strings are turned into
// text, copied, or v as it is when there are none (or it is no map).
func stringified(v any) (any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, false
	}
	c := cow{m: m}
	for k, val := range m {
		if !isString(val) {
			c.set(k, text(val))
		}
	}
	return c.m, c.copied
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// text renders a value as the text it was substituted as: scalars as
// written, maps and lists as JSON.
func text(v any) any {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return v
		}
		return string(b)
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		return x.String()
	case nil:
		return ""
	}
	return v
}
