package fleet

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// FieldError is a problem with one field of a fleet file. It prints as
// "fleet.yaml:9: cluster prod-eu: context: message": a field of a
// cluster, group or app is said under its name (Subject) when it has
// one, else by its path ("clusters[0].context").
type FieldError struct {
	File  string
	Line  int
	Field string
	// Subject names the cluster, group or app Field is in ("cluster
	// prod-eu"); "" when it is in none, or that has no name.
	Subject string
	Msg     string
}

// Error implements error.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	field := e.Field
	if e.Subject != "" {
		b.WriteString(e.Subject)
		b.WriteString(": ")
		field = within(e.Field)
	}
	if field != "" {
		b.WriteString(field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// named are the lists whose items have names, and what an item is.
var named = map[string]string{"clusters": "cluster", "groups": "group", "apps": "app"}

// item is the path of the named list's item field is in ("apps[0]" of
// "apps[0].helm.chart"), and its list; "" when it is in none.
func item(field string) (path, list string) {
	list, rest, ok := strings.Cut(field, "[")
	end := strings.IndexByte(rest, ']')
	if !ok || named[list] == "" || end < 0 {
		return "", ""
	}
	return field[:len(list)+1+end+1], list
}

// within is field's path inside its item: "helm.chart" of
// "apps[0].helm.chart".
func within(field string) string {
	path, _ := item(field)
	return strings.TrimPrefix(field[len(path):], ".")
}

// subject names the item field is in ("app web"), from names (an item's
// path to its name); "" when it has none.
func subject(names map[string]string, field string) string {
	path, list := item(field)
	if name := names[path]; name != "" {
		return named[list] + " " + name
	}
	return ""
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
	// names are the names of the clusters, groups and apps by path
	// ("apps[0]"), each name once: a repeated one is said by its path.
	names map[string]string
	list  ErrorList
}

// add records msg for field, at the line of the nearest known enclosing field.
func (e *errs) add(field, format string, args ...any) {
	e.list = append(e.list, &FieldError{File: e.file, Line: lineOf(e.pos, field), Field: field, Subject: subject(e.names, field), Msg: fmt.Sprintf(format, args...)})
}

// has reports whether an error was recorded for field already.
func (e *errs) has(field string) bool {
	return slices.ContainsFunc(e.list, func(fe *FieldError) bool { return fe.Field == field })
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
