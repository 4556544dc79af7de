package fleet

import (
	"fmt"
	"sort"
	"strings"
)

// FieldError is a problem with one field of a fleet file. It prints as
// "fleet.yaml:9: clusters[0].context: message".
type FieldError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

// Error implements error.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found in a fleet file, in file order.
type ErrorList []*FieldError

// Error prints every problem, one a line.
func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.As find the individual field errors.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// errs collects field errors against one file's positions.
type errs struct {
	file string
	pos  map[string]int
	list ErrorList
}

// add records msg for field, at the line of the nearest known enclosing field.
func (e *errs) add(field, format string, args ...any) {
	e.list = append(e.list, &FieldError{File: e.file, Line: lineOf(e.pos, field), Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (e *errs) err() error {
	if len(e.list) == 0 {
		return nil
	}
	sort.SliceStable(e.list, func(i, j int) bool { return e.list[i].Line < e.list[j].Line })
	return e.list
}

// lineOf finds the line of field, or of its closest recorded parent.
func lineOf(pos map[string]int, field string) int {
	for f := field; f != ""; {
		if l, ok := pos[f]; ok {
			return l
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return pos[""]
}
