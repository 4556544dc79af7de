package condition

import (
	"strings"
	"testing"
)

func TestCompile(t *testing.T) {
	tests := []struct {
		text, wantErr string
	}{
		{"result < 0.01", ""},
		{"result[0] >= 0.95 && result[1] >= 0.95", ""},
		{"result.status == 'ok'", ""},
		{"", "empty"},
		{"result <", "does not compile"},
		{"result + 1", "gives int, not true or false"},
		{"result", ""}, // dyn: a boolean answer is a condition
		{"'ok'", "gives string, not true or false"},
		{"results < 1", "does not compile: ERROR: <input>:1:1: undeclared reference to 'results'"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			_, err := Compile(tt.text)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("error on several lines: %q", err)
			}
		})
	}
}

func TestEval(t *testing.T) {
	tests := []struct {
		text    string
		result  any
		want    bool
		wantErr string
	}{
		{"result < 0.01", 0.004, true, ""},
		{"result < 0.01", 0.2, false, ""},
		{"result[0] < 1.0", []float64{0.5}, true, ""},
		{"result.status == 'ok'", map[string]any{"status": "ok"}, true, ""},
		{"result.status == 'ok'", map[string]any{"state": "ok"}, false, "no such key"},
		{"result < 0.01", []float64{0.1, 0.2}, false, "no such overload"},
		{"result", 0.5, false, "is 0.5, not true or false"},
		{"size(result) > 0 && result.all(x, x < 1.0)", []any{0.1, 0.2}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			c, err := Compile(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Eval(tt.result)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case got != tt.want:
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// A condition that would walk a huge answer for ever is stopped.
func TestEvalCostLimit(t *testing.T) {
	c, err := Compile("result.all(x, result.all(y, result.all(z, x + y + z >= 0.0)))")
	if err != nil {
		t.Fatal(err)
	}
	list := make([]any, 500)
	for i := range list {
		list[i] = float64(i)
	}
	if _, err := c.Eval(list); err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Fatalf("error %v, want the cost limit", err)
	}
}
