// Package condition compiles and evaluates an analysis's conditions:
// CEL expressions (cel-go) over one variable, result, that say whether a
// measurement succeeded ("result < 0.01") or failed.
package condition

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
)

// costLimit bounds one evaluation, so a condition over a large answer
// (a web provider's JSON) cannot spin: about a million steps.
const costLimit = 1_000_000

// env is the one CEL environment every condition compiles in: result,
// of any type (a number, a list of numbers, a JSON document).
var env = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(cel.Variable("result", cel.DynType))
})

// A Condition is one compiled CEL expression over result.
type Condition struct {
	text string
	prg  cel.Program
}

// compiled are the conditions compiled so far, by text: a fleet's
// conditions are compiled as its file loads, and again for every cluster
// that soaks; a program is safe for concurrent use.
var compiled sync.Map // string → *Condition

// Compile compiles text, once per process; its error says where the
// text is wrong, in CEL's words, on one line.
func Compile(text string) (*Condition, error) {
	if c, ok := compiled.Load(text); ok {
		return c.(*Condition), nil
	}
	c, err := compile(text)
	if err == nil {
		compiled.Store(text, c)
	}
	return c, err
}

func compile(text string) (*Condition, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("empty: a CEL expression over result, such as result < 0.01")
	}
	e, err := env()
	if err != nil {
		return nil, err
	}
	ast, iss := e.Compile(text)
	if iss.Err() != nil {
		return nil, fmt.Errorf("does not compile: %s", oneLine(iss.Err().Error()))
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("gives %s, not true or false: compare result with something (result < 0.01)", t)
	}
	prg, err := e.Program(ast, cel.CostLimit(costLimit))
	if err != nil {
		return nil, fmt.Errorf("does not compile: %s", oneLine(err.Error()))
	}
	return &Condition{text: text, prg: prg}, nil
}

// String is the condition as written.
func (c *Condition) String() string { return c.text }

// Eval says whether the condition holds for result: a float64, a list of
// them, or a decoded JSON document. An error is a condition that cannot
// be evaluated on this result (a field it names is missing, a list
// compared with a number).
func (c *Condition) Eval(result any) (bool, error) {
	out, _, err := c.prg.Eval(map[string]any{"result": result})
	if err != nil {
		return false, fmt.Errorf("%s: %s", c.text, oneLine(err.Error()))
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("%s is %v, not true or false", c.text, out.Value())
	}
	return b, nil
}

// oneLine joins CEL's multi-line messages (the expression, a caret
// under the fault) into one.
func oneLine(s string) string {
	var parts []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && strings.Trim(l, "|^ .") != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}
