package render

import (
	"github.com/kubectl-fleet/kubectl-fleet/pkg/subst"

	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// SubstituteAnnotation opts an object out of variable substitution when set
// to "disabled" (for shell scripts in ConfigMaps and the like).
const SubstituteAnnotation = "fleet/substitute"

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
		v.Text[k] = subst.Text(a)
	}
	return v
}

// expand substitutes variables in every string (and map key) of a value
// parsed from YAML, returning a copy; see expansion.value.
func (vs Vars) expand(v any) (any, error) {
	x := expansion{vars: vs, left: DefaultMaxBytes, max: DefaultMaxBytes}
	return x.value(v)
}

// expansion substitutes the variables of one target's objects.
type expansion struct {
	vars Vars
	// left is how many more bytes substitution may produce, of max.
	left, max int64
	// redact leaves the text of references out of errors (for Secrets).
	redact bool
}

// value substitutes variables in every string (and map key) of a value
// parsed from YAML. A string that is one variable reference and nothing
// else takes the variable's YAML type, so `replicas: ${replicas}` with
// replicas: 4 gives the integer 4, as the same text substituted and read
// as YAML would; a default's text is read as a YAML scalar. Any other
// string stays a string. Errors name the field.
//
// It writes nothing: a map or list in which nothing changed is returned
// as it is, and one in which something did is a copy that shares its
// unchanged children. A thousand clusters' renders of one source so
// share what their variables do not change (a fleet's renders are read,
// never changed: object.CopyMeta).
func (x *expansion) value(v any) (any, error) {
	out, _, err := x.changed(v)
	return out, err
}

// changed is value, and whether the result differs from v.
func (x *expansion) changed(v any) (any, bool, error) {
	switch v := v.(type) {
	case string:
		if !strings.Contains(v, "${") {
			return v, false, nil
		}
		if name, def, hasDefault, ok := wholeReference(v); ok {
			if val, ok := x.vars.Typed[name]; ok {
				return normalize(val), true, x.spend(int64(len(x.vars.Text[name])))
			}
			if hasDefault {
				return scalarOf(def), true, nil
			}
		}
		s, err := subst.Substitute(v, x.vars.Text)
		if err != nil {
			return nil, false, x.located(err, "")
		}
		return s, s != v, x.spend(int64(len(s)))
	case map[string]any:
		return x.mapValue(v)
	case []any:
		var out []any // nil until an item changes
		for i, val := range v {
			nv, changed, err := x.changed(val)
			if err != nil {
				return nil, false, x.located(err, fmt.Sprintf("[%d]", i))
			}
			if changed {
				if out == nil {
					out = slices.Clone(v)
				}
				out[i] = nv
			}
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	}
	return v, false, nil
}

// mapValue is changed for a map, whose keys are substituted too.
func (x *expansion) mapValue(v map[string]any) (any, bool, error) {
	var (
		out     map[string]any // nil until a key or a value changes
		renamed [][2]string    // keys substituted: old, new
	)
	one := func(k string, val any) error {
		nk, err := subst.Substitute(k, x.vars.Text)
		if err != nil {
			return x.located(err, fieldName(k))
		}
		nv, changed, err := x.changed(val)
		if err != nil {
			return x.located(err, fieldName(k))
		}
		if nk == k && !changed {
			return nil
		}
		if out == nil {
			out = maps.Clone(v)
		}
		out[k] = nv
		if nk != k {
			renamed = append(renamed, [2]string{k, nk})
			return x.spend(int64(len(nk)))
		}
		return nil
	}
	for k, val := range v {
		if err := one(k, val); err != nil {
			// Said the same every run: the first field, in order, that
			// fails.
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if err := one(k, v[k]); err != nil {
					return nil, false, err
				}
			}
			return nil, false, err
		}
	}
	if out == nil {
		return v, false, nil
	}
	// Every old key goes before any new one is set: a new key may be
	// another's old one.
	vals := make([]any, len(renamed))
	for i, r := range renamed {
		vals[i] = out[r[0]]
		delete(out, r[0])
	}
	for i, r := range renamed {
		out[r[1]] = vals[i]
	}
	return out, true, nil
}

// spend takes n bytes of substituted text from what is left.
func (x *expansion) spend(n int64) error {
	if x.left -= n; x.left < 0 {
		return overLimit("variable substitution output", x.max)
	}
	return nil
}

// located prefixes the field of a substitution error with step (a field
// name or an index) on its way up, and redacts it when it must.
func (x *expansion) located(err error, step string) error {
	var (
		undef  *subst.UndefinedError
		syntax *subst.SyntaxError
	)
	switch {
	case errors.As(err, &undef):
		undef.Field = joinField(step, undef.Field)
	case errors.As(err, &syntax):
		syntax.Field = joinField(step, syntax.Field)
		syntax.Redacted = syntax.Redacted || x.redact
		syntax.Hint = "the annotation " + SubstituteAnnotation + ": disabled"
	}
	return err
}

func joinField(step, rest string) string {
	if rest == "" || strings.HasPrefix(rest, "[") {
		return step + rest
	}
	if step == "" {
		return rest
	}
	return step + "." + rest
}

// fieldName writes a map key as a step of a field path: as it is when it
// is a plain name, else in brackets ("metadata.labels[app.kubernetes.io/name]").
func fieldName(k string) string {
	for _, r := range k {
		if r != '_' && r != '-' && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return "[" + k + "]"
		}
	}
	if k == "" {
		return `[""]`
	}
	return k
}

// wholeReference matches a string that is exactly ${name} or
// ${name:=default}.
func wholeReference(s string) (name, def string, hasDefault, ok bool) {
	if !strings.HasPrefix(s, "${") || !strings.HasSuffix(s, "}") || strings.Count(s, "}") != 1 {
		return "", "", false, false
	}
	name, def, hasDefault = strings.Cut(s[2:len(s)-1], ":=")
	if !subst.ValidName(name) {
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
