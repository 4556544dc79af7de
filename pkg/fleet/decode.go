package fleet

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// decoder decodes a YAML node tree into Go values strictly: unknown and
// repeated keys are errors, and the line of every field is recorded so that
// later checks can point at it.
type decoder struct {
	errs *errs
	// named are the names given so far, by list: "clusters/prod-eu".
	named map[string]bool
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if _, seen := d.errs.pos[path]; !seen {
		d.errs.pos[path] = n.Line
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	switch v.Type() {
	case durationType:
		d.duration(n, v, path)
		return
	case amountType:
		d.amount(n, v, path)
		return
	case approvalType:
		if n.Kind == yaml.ScalarNode { // "approval: required"
			switch n.Value {
			case "required":
				v.Set(reflect.ValueOf(Approval{Required: true}))
			case "none", "":
			default:
				d.errs.add(path, "want required, none or {required: true, expires: 72h}, got %s", describe(n))
			}
			return
		}
	case batchType:
		if n.Kind == yaml.ScalarNode { // "- 10%": a batch of that size
			var a Amount
			d.amount(n, reflect.ValueOf(&a).Elem(), path+".size")
			v.Set(reflect.ValueOf(Batch{Size: &a}))
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		// Optional: present (even empty) or nil. A value with errors stays
		// nil, so that it is not also reported as empty.
		p := reflect.New(v.Type().Elem())
		before := len(d.errs.list)
		d.decode(n, p.Elem(), path)
		if len(d.errs.list) == before {
			v.Set(p)
		}
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.errs.add(path, "want a mapping, got %s", describe(n))
			return
		}
		fields := structFields(v.Type())
		d.eachKey(n, path, func(key string, val *yaml.Node, p string) {
			i, ok := fields[key]
			if !ok {
				d.errs.add(p, "unknown field %q (%s)", key, known(key, v.Type()))
				return
			}
			d.decode(val, v.Field(i), p)
		})
	case reflect.Slice:
		d.list(n, v, path)
	case reflect.Map:
		d.mapping(n, v, path)
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.errs.add(path, "%s", cleanYAMLError(err))
			return
		}
		v.Set(reflect.ValueOf(&x).Elem())
	default:
		if n.Kind != yaml.ScalarNode {
			d.errs.add(path, "want %s, got %s", kindName(v.Kind()), describe(n))
			return
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.errs.add(path, "want %s, got %q", kindName(v.Kind()), n.Value)
		}
	}
}

var durationType = reflect.TypeOf(time.Duration(0))

// duration decodes a duration in Go's syntax only: a bare number would be
// nanoseconds.
func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	dur, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || err != nil {
		d.errs.add(path, "want a duration such as 90s, 10m or 1h30m, got %s", describe(n))
		return
	}
	v.SetInt(int64(dur))
}

var (
	amountType   = reflect.TypeOf(Amount{})
	batchType    = reflect.TypeOf(Batch{})
	approvalType = reflect.TypeOf(Approval{})
)

// amount decodes a number of clusters or a percentage ("10%").
func (d *decoder) amount(n *yaml.Node, v reflect.Value, path string) {
	a, err := ParseAmount(n.Value)
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!str") || err != nil || !a.Percent && n.Tag == "!!str" {
		d.errs.add(path, "want a number of clusters or a percentage of the group's (3, 10%%), got %s", describe(n))
		return
	}
	v.Set(reflect.ValueOf(a))
}

// list decodes a sequence into the slice v.
func (d *decoder) list(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.errs.add(path, "want a list, got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		d.name(item, p)
		d.decode(item, s.Index(i), p)
	}
	v.Set(s)
}

// name records the name of a cluster, group or app at path, for errors
// to say it by: the first item of a name only, a repeated one is said by
// its path.
func (d *decoder) name(n *yaml.Node, path string) {
	at, list := item(path)
	if at != path || n.Kind != yaml.MappingNode {
		return // not a cluster, group or app
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value != "name" || v.Kind != yaml.ScalarNode || v.Value == "" {
			continue
		}
		if key := list + "/" + v.Value; !d.named[key] {
			d.named[key] = true
			d.errs.names[path] = v.Value
		}
		return
	}
}

// mapping decodes a mapping into the map v.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errs.add(path, "want a mapping, got %s", describe(n))
		return
	}
	m := reflect.MakeMap(v.Type())
	d.eachKey(n, path, func(key string, val *yaml.Node, p string) {
		e := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, e, p)
		m.SetMapIndex(reflect.ValueOf(key), e)
	})
	v.Set(m)
}

// eachKey walks a mapping's keys in order, refusing repeated keys.
func (d *decoder) eachKey(n *yaml.Node, path string, fn func(key string, val *yaml.Node, p string)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		d.errs.pos[p] = k.Line
		if k.Kind != yaml.ScalarNode {
			d.errs.add(p, "a key must be a string")
			continue
		}
		if k.Tag == "!!merge" {
			d.errs.add(p, "merge keys (<<) are not supported")
			continue
		}
		if seen[k.Value] {
			d.errs.add(p, "field %q appears more than once", k.Value)
			continue
		}
		seen[k.Value] = true
		fn(k.Value, val, p)
	}
}

// known says what an unknown field may have meant: "did you mean
// \"context\"?", else the fields t has.
func known(key string, t reflect.Type) string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" && t.Field(i).IsExported() {
			names = append(names, name)
		}
	}
	if hint := output.DidYouMean(key, names); hint != "" {
		return hint
	}
	return "fields: " + strings.Join(names, ", ")
}

// structFields maps yaml names to field indexes.
func structFields(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		m[name] = i
	}
	return m
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return strconv.Quote(n.Value)
	}
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.String:
		return "a string"
	}
	return k.String()
}

func cleanYAMLError(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}
