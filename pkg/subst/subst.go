// Package subst expands ${var} references in text, with the syntax of
// Flux's post-build substitution. It is the one grammar the render, the
// fleet file's checks of it and the analyses' queries share.
package subst

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

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
	// Hint, when set, is one more way out the message offers ("the
	// annotation fleet/substitute: disabled").
	Hint string
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
	what += ": use ${name} or ${name:=default}"
	if e.Hint == "" {
		return what + " ($${...} for a literal)"
	}
	return what + ", $${...} for a literal, or " + e.Hint
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
		if !ValidName(name) {
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

// ValidName accepts the variable names Flux accepts: a letter or "_", then
// letters, digits or "_".
func ValidName(s string) bool {
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

// Text is a value as a substitution writes it: scalars as written,
// mappings and lists as JSON.
func Text(v any) string {
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

// Names are the variables text refers to, in order, once each; "$${…}"
// refers to none. A reference that does not parse is left out
// (Substitute says it).
func Names(text string) []string {
	var out []string
	for {
		i := strings.Index(text, "${")
		if i < 0 {
			return out
		}
		if i > 0 && text[i-1] == '$' {
			text = text[i+2:]
			continue
		}
		end := strings.IndexByte(text[i:], '}')
		if end < 0 {
			return out
		}
		name, _, _ := strings.Cut(text[i+2:i+end], ":=")
		if ValidName(name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
		text = text[i+end+1:]
	}
}
