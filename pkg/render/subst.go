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

// Variables are the substitution variables of a cluster: every attribute by
// its key (scalars as text, other values as JSON), then FLEET_CLUSTER_NAME,
// FLEET_CLUSTER_GROUP, FLEET_CLUSTER_CONTEXT and FLEET_NAME.
func Variables(c *Cluster) map[string]string {
	vars := make(map[string]string, len(c.Attributes)+4)
	for k, v := range c.Attributes {
		vars[k] = scalarText(v)
	}
	vars["FLEET_CLUSTER_NAME"] = c.Name
	vars["FLEET_CLUSTER_GROUP"] = c.Group
	vars["FLEET_CLUSTER_CONTEXT"] = c.Context
	vars["FLEET_NAME"] = c.Fleet
	return vars
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
