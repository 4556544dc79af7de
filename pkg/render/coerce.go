package render

import (
	"encoding/json"
	"strconv"
)

// Text substitution (like Flux's) turns `replicas: ${replicas}` into the
// integer it should be, but kustomize drops the quotes of `value:
// "${port}"` before substitution sees them, so a value meant as text can
// come out a number or a boolean. coerceStrings turns such values back into
// text in the fields the Kubernetes API types as strings: label, annotation
// and selector maps, ConfigMap data, Secret stringData, and containers'
// image, command, args and env values.
func coerceStrings(obj map[string]any) {
	if kind, _ := obj["kind"].(string); kind == "ConfigMap" {
		stringifyMap(obj["data"])
	} else if kind == "Secret" {
		stringifyMap(obj["stringData"])
	}
	walk(obj)
}

func walk(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			switch k {
			case "labels", "annotations", "matchLabels", "nodeSelector":
				stringifyMap(child)
			case "containers", "initContainers", "ephemeralContainers":
				if list, ok := child.([]any); ok {
					for _, c := range list {
						coerceContainer(c)
					}
				}
			}
			walk(child)
		}
	case []any:
		for _, child := range x {
			walk(child)
		}
	}
}

func coerceContainer(v any) {
	c, ok := v.(map[string]any)
	if !ok {
		return
	}
	if img, ok := c["image"]; ok && !isString(img) {
		c["image"] = text(img)
	}
	for _, k := range []string{"command", "args"} {
		if list, ok := c[k].([]any); ok {
			for i := range list {
				list[i] = text(list[i])
			}
		}
	}
	if env, ok := c["env"].([]any); ok {
		for _, e := range env {
			if m, ok := e.(map[string]any); ok {
				if val, ok := m["value"]; ok && !isString(val) {
					m["value"] = text(val)
				}
			}
		}
	}
}

func stringifyMap(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, val := range m {
		if !isString(val) { // strings are left as they are, unwritten
			m[k] = text(val)
		}
	}
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
