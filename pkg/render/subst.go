package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// SubstituteAnnotation opts an object out of variable substitution when set
// to "disabled" (for shell scripts in ConfigMaps and the like).
const SubstituteAnnotation = "fleet/substitute"

// UndefinedError is a ${var} with no value and no default.
type UndefinedError struct {
	Name string
	// Field is where the reference is in its object ("data.url"), when known.
	Field string
	// Near is the defined variable the name is closest to (a typo), or "".
	Near string
}

// Error implements error.
func (e *UndefinedError) Error() string {
	if e.Near != "" {
		return fmt.Sprintf("undefined variable ${%s}%s: did you mean ${%s}? (else define the attribute %q or write ${%s:=default})", e.Name, inField(e.Field), e.Near, e.Name, e.Name)
	}
	return fmt.Sprintf("undefined variable ${%s}%s (define the attribute %q or write ${%s:=default})", e.Name, inField(e.Field), e.Name, e.Name)
}

// SyntaxError is a "${" that does not start a valid variable reference.
type SyntaxError struct {
	// Unterminated is set when no "}" follows.
	Unterminated bool
	// Ref is the reference as written: "${a-b}", or the start of the text
	// after an unterminated "${".
	Ref string
	// Offset is the byte offset of the "${" in its string.
	Offset int
	// Field is where the string is in its object, when known.
	Field string
	// Redacted leaves Ref out of the message, for Secrets.
	Redacted bool
}

// Error implements error.
func (e *SyntaxError) Error() string {
	what := "invalid variable reference"
	if e.Unterminated {
		what = "unterminated variable reference"
	}
	if e.Redacted {
		what += fmt.Sprintf(" at byte %d", e.Offset)
	} else if e.Unterminated {
		what += " " + excerpt(e.Ref)
	} else {
		what += " " + e.Ref
	}
	what += inField(e.Field)
	if e.Redacted {
		what += " (a Secret's value is not shown)"
	}
	if e.Unterminated {
		return what
	}
	return what + fmt.Sprintf(": use ${name} or ${name:=default}, $${...} for a literal, or the annotation %s: disabled", SubstituteAnnotation)
}

func inField(f string) string {
	if f == "" {
		return ""
	}
	return " in " + f
}

// Substitute expands variables in text with the syntax of Flux's post-build
// substitution: ${var}, ${var:=default}, and $${var} for a literal ${var}.
// Any other "${" is an error, so a typo never ships silently; a "$" not
// followed by "{" is left alone. Errors are an *UndefinedError or a
// *SyntaxError.
func Substitute(text string, vars map[string]string) (string, error) {
	i := strings.Index(text, "${")
	if i < 0 {
		return text, nil
	}
	var b strings.Builder
	b.Grow(len(text))
	offset := 0 // of text in the original
	for i >= 0 {
		if i > 0 && text[i-1] == '$' {
			// "$${" is an escaped "${": drop one "$" and copy the rest.
			b.WriteString(text[:i-1])
			b.WriteString("${")
			text, offset = text[i+2:], offset+i+2
			i = strings.Index(text, "${")
			continue
		}
		b.WriteString(text[:i])
		end := strings.IndexByte(text[i:], '}')
		if end < 0 {
			return "", &SyntaxError{Unterminated: true, Ref: text[i:], Offset: offset + i}
		}
		ref := text[i+2 : i+end]
		name, def, hasDefault := strings.Cut(ref, ":=")
		if !validName(name) {
			return "", &SyntaxError{Ref: "${" + ref + "}", Offset: offset + i}
		}
		v, ok := vars[name]
		switch {
		case ok:
			b.WriteString(v)
		case hasDefault:
			b.WriteString(def)
		default:
			return "", &UndefinedError{Name: name, Near: output.Closest(name, slices.Sorted(maps.Keys(vars)))}
		}
		text, offset = text[i+end+1:], offset+i+end+1
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
		s, err := Substitute(v, x.vars.Text)
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
		nk, err := Substitute(k, x.vars.Text)
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
		undef  *UndefinedError
		syntax *SyntaxError
	)
	switch {
	case errors.As(err, &undef):
		undef.Field = joinField(step, undef.Field)
	case errors.As(err, &syntax):
		syntax.Field = joinField(step, syntax.Field)
		syntax.Redacted = syntax.Redacted || x.redact
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
