package vet

import (
	"fmt"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// Encrypted says, once each, the SOPS-encrypted files the render read as
// they are, no key here decrypting them: their values were checked
// encrypted, and diff and apply will refuse them here.
func (v *Out) Encrypted(files []sopsfile.File) {
	for _, f := range files {
		msg := f.NoKey() + ": its values are checked encrypted, and diff and apply need the key"
		if v.json {
			v.event(Warning{Type: "warning", Message: msg})
		} else {
			fmt.Fprintln(v.w, "warning: "+msg)
		}
	}
}

// Exposed adds to each result a warning for every object other than a
// Secret that holds a value decrypted from SOPS, where anyone who can
// read the object sees it. A value of at least sopsfile.MinValue bytes
// is looked for, as it is.
func Exposed(results []render.Result, values []string) {
	if len(values) == 0 {
		return
	}
	for i, r := range results {
		for _, o := range r.Objects {
			if strings.Contains(o.GetKind(), "Secret") || !holdsAny(o.Object, values) {
				continue
			}
			results[i].Warnings = append(results[i].Warnings, fmt.Sprintf("%s holds a value decrypted from SOPS outside a Secret, where whoever can read a %s sees it", render.ObjectRef(o), o.GetKind()))
		}
	}
}

// holdsAny reports whether a string in v holds one of values.
func holdsAny(v any, values []string) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			if holdsAny(e, values) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if holdsAny(e, values) {
				return true
			}
		}
	case string:
		for _, s := range values {
			if strings.Contains(v, s) {
				return true
			}
		}
	}
	return false
}
