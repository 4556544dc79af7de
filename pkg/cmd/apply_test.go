package cmd

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

func TestAsk(t *testing.T) {
	for _, tt := range []struct {
		answer string
		ok     bool
	}{{"y\n", true}, {"YES\n", true}, {"n\n", false}, {"\n", false}, {"", false}, {"yep\n", false}} {
		var out bytes.Buffer
		err := ask(&out, bufio.NewReader(strings.NewReader(tt.answer)), "Apply to protected group production (prod-eu, prod-us)?")
		if (err == nil) != tt.ok {
			t.Errorf("answer %q: err %v", tt.answer, err)
		}
		if out.String() != "Apply to protected group production (prod-eu, prod-us)? [y/N] " {
			t.Errorf("question %q", out.String())
		}
	}
}
