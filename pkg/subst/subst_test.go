package subst

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSubstitute(t *testing.T) {
	vars := map[string]string{"name": "web", "replicas": "4", "empty": "", "A_1": "x"}
	tests := []struct {
		in, want, wantErr string
	}{
		{"plain text", "plain text", ""},
		{"${name}", "web", ""},
		{"image: ${name}:${replicas}", "image: web:4", ""},
		{"${A_1}${name}", "xweb", ""},
		{"${missing:=fallback}", "fallback", ""},
		{"${missing:=}", "", ""},
		{"${name:=fallback}", "web", ""},
		{"${empty:=fallback}", "", ""}, // defined, even if empty
		{"${missing:=a b:c}", "a b:c", ""},
		{"$${name}", "${name}", ""},
		{"a $${name} b ${name}", "a ${name} b web", ""},
		{"${name}$${name}", "web${name}", ""},
		{"$name and $ alone", "$name and $ alone", ""},
		{"cost: $5", "cost: $5", ""},
		{"${missing}", "", "undefined variable ${missing} (define the attribute"},
		{"${replcas}", "", "undefined variable ${replcas}: did you mean ${replicas}?"},
		{"x ${name", "", "unterminated variable reference"},
		{"${}", "", "invalid variable reference ${}"},
		{"${1abc}", "", "invalid variable reference ${1abc}"},
		{"${a-b}", "", "invalid variable reference ${a-b}"},
		{"${PORT:-8080}", "", "invalid variable reference ${PORT:-8080}"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Substitute(tt.in, vars)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q…", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	_, err := Substitute("${nope}", vars)
	var undef *UndefinedError
	if !errors.As(err, &undef) || undef.Name != "nope" {
		t.Errorf("want an UndefinedError for nope, got %v", err)
	}
}

func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{"${a}", "$${a}", "${a:=b}", "${", "$$$${a}}", "${a:=${b}}", "x}${y"} {
		f.Add(s)
	}
	vars := map[string]string{"a": "1", "b": "${a}"}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Substitute(in, vars)
		if err == nil && !strings.Contains(in, "${") && out != in {
			t.Errorf("text without ${ changed: %q → %q", in, out)
		}
		var (
			undef  *UndefinedError
			syntax *SyntaxError
		)
		switch {
		case err == nil, errors.As(err, &undef):
		case errors.As(err, &syntax):
			if syntax.Offset < 0 || syntax.Offset+2 > len(in) || in[syntax.Offset:syntax.Offset+2] != "${" {
				t.Errorf("%q: offset %d is not at a ${", in, syntax.Offset)
			}
			// Redacted, the message is fixed text and the offset: no Ref.
			syntax.Redacted = true
			what := "invalid"
			if syntax.Unterminated {
				what = "unterminated"
			}
			msg, _, _ := strings.Cut(syntax.Error(), ": use ${name}")
			if want := fmt.Sprintf("%s variable reference at byte %d (a Secret's value is not shown)", what, syntax.Offset); msg != want {
				t.Errorf("redacted error %q, want %q", msg, want)
			}
		default:
			t.Errorf("%q: error %T %v", in, err, err)
		}
	})
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                              "",
		"${a} and ${b:=x} and ${a}":          "a b",
		"$${a} ${regionX} ${region}":         "regionX region",
		"${1bad} ${ok} ${unterminated":       "ok",
		`x{cluster="${FLEET_CLUSTER_NAME}"}`: "FLEET_CLUSTER_NAME",
	} {
		if got := strings.Join(Names(in), " "); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
