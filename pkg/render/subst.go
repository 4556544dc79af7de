package render

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// SubstituteAnnotation opts an object out of variable substitution when set
// to "disabled" (for shell scripts in ConfigMaps and the like).
const SubstituteAnnotation = "fleet/substitute"

// UndefinedError is a ${var} with no value and no default.
type UndefinedError struct{ Name string }

// Error implements error.
func (e *UndefinedError) Error() string {
	return fmt.Sprintf("undefined variable ${%s} (define the attribute %q or write ${%s:=default})", e.Name, e.Name, e.Name)
}

// Substitute expands variables in text with the syntax of Flux's post-build
// substitution: ${var}, ${var:=default}, and $${var} for a literal ${var}.
// Any other "${" is an error, so a typo never ships silently; a "$" not
// followed by "{" is left alone.
func Substitute(text string, vars map[string]string) (string, error) {
	i := strings.Index(text, "${")
	if i < 0 {
		return text, nil
	}
	var b strings.Builder
	b.Grow(len(text))
	for i >= 0 {
		if i > 0 && text[i-1] == '$' {
			// "$${" is an escaped "${": drop one "$" and copy the rest.
			b.WriteString(text[:i-1])
			b.WriteString("${")
			text = text[i+2:]
			i = strings.Index(text, "${")
			continue
		}
		b.WriteString(text[:i])
		end := strings.IndexByte(text[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated variable reference %s", excerpt(text[i:]))
		}
		ref := text[i+2 : i+end]
		name, def, hasDefault := strings.Cut(ref, ":=")
		if !validName(name) {
			return "", fmt.Errorf("invalid variable reference ${%s}: use ${name} or ${name:=default}, $${...} for a literal, or the annotation %s: disabled", ref, SubstituteAnnotation)
		}
		v, ok := vars[name]
		switch {
		case ok:
			b.WriteString(v)
		case hasDefault:
			b.WriteString(def)
		default:
			return "", &UndefinedError{Name: name}
		}
		text = text[i+end+1:]
		i = strings.Index(text, "${")
	}
	b.WriteString(text)
	return b.String(), nil
}

// validName accepts the variable names Flux accepts: a letter or "_", then
// letters, digits or "_".
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func excerpt(s string) string {
	if len(s) > 20 {
		s = s[:20] + "…"
	}
	return strconv.Quote(s)
}

// Vars are a cluster's substitution variables: every attribute by its key,
// then FLEET_CLUSTER_NAME, FLEET_CLUSTER_GROUP, FLEET_CLUSTER_CONTEXT and
// FLEET_NAME.
type Vars struct {
	// Text is each variable as text: scalars as written, others as JSON.
	Text map[string]string
	// Typed is each variable's YAML value.
	Typed map[string]any
}

// VariablesOf returns the substitution variables of a cluster.
func VariablesOf(c *Cluster) Vars {
	v := Vars{Text: make(map[string]string, len(c.Attributes)+4), Typed: make(map[string]any, len(c.Attributes)+4)}
	for k, a := range c.Attributes {
		v.Typed[k] = a
	}
	v.Typed["FLEET_CLUSTER_NAME"] = c.Name
	v.Typed["FLEET_CLUSTER_GROUP"] = c.Group
	v.Typed["FLEET_CLUSTER_CONTEXT"] = c.Context
	v.Typed["FLEET_NAME"] = c.Fleet
	for k, a := range v.Typed {
		v.Text[k] = scalarText(a)
	}
	return v
}

// expand substitutes variables in every string (and map key) of a value
// parsed from YAML, returning a copy. A string that is one variable
// reference and nothing else takes the variable's YAML type, so
// `replicas: ${replicas}` with replicas: 4 gives the integer 4, as the same
// text substituted and read as YAML would; a default's text is read as a
// YAML scalar. Any other string stays a string.
func (vs Vars) expand(v any) (any, error) {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, "${") {
			return x, nil
		}
		if name, def, hasDefault, ok := wholeReference(x); ok {
			if val, ok := vs.Typed[name]; ok {
				return normalize(val), nil
			}
			if hasDefault {
				return scalarOf(def), nil
			}
		}
		return Substitute(x, vs.Text)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			nk, err := Substitute(k, vs.Text)
			if err != nil {
				return nil, err
			}
			if out[nk], err = vs.expand(val); err != nil {
				return nil, err
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			var err error
			if out[i], err = vs.expand(val); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}

// wholeReference matches a string that is exactly ${name} or
// ${name:=default}.
func wholeReference(s string) (name, def string, hasDefault, ok bool) {
	if !strings.HasPrefix(s, "${") || !strings.HasSuffix(s, "}") || strings.Count(s, "}") != 1 {
		return "", "", false, false
	}
	name, def, hasDefault = strings.Cut(s[2:len(s)-1], ":=")
	if !validName(name) {
		return "", "", false, false
	}
	return name, def, hasDefault, true
}

// scalarOf reads a default's text the way YAML reads a plain scalar:
// integers, floats, booleans and null are typed, anything else is text.
func scalarOf(s string) any {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	switch s {
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	case "null", "~":
		return nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xXpP_") {
		return f
	}
	return s
}

// normalize converts a YAML value to the types unstructured objects hold:
// int64 for integers, and fresh maps and slices.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case uint64:
		return float64(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = normalize(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = normalize(val)
		}
		return out
	}
	return v
}

func scalarText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}
