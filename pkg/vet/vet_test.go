package vet

import (
	"bytes"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// A problem two clusters share is counted once, said in full on the
// first and named after on the other; JSON says it on each.
func TestOutSaysASharedProblemOnce(t *testing.T) {
	for _, tt := range []struct {
		json bool
		want string
	}{
		{false, "[stg]  app web: chart not found\n[prod] app web: the same problem as on stg\nvet: 1 problem\n"},
		{true, `{"type":"problem","cluster":"stg","app":"web","message":"chart not found"}` + "\n" +
			`{"type":"problem","cluster":"prod","app":"web","message":"chart not found"}` + "\n" +
			`{"type":"summary","clusters":2,"problems":1}` + "\n"},
	} {
		var out bytes.Buffer
		v := NewOut(&out, tt.json)
		v.Prefix = output.NewPrefixer([]string{"stg", "prod"}, false)
		v.Problem("stg", Problem{App: "web", Message: "chart not found"})
		v.Problem("prod", Problem{App: "web", Message: "chart not found"})
		v.Summary(2, "")
		if out.String() != tt.want || v.Problems != 1 {
			t.Errorf("json %v: %d problems,\n%s\nwant\n%s", tt.json, v.Problems, out.String(), tt.want)
		}
	}
}
