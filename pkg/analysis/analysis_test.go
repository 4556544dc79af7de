package analysis

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// answers is a provider that gives its answers in turn, the last again.
type answers []any

func (a *answers) Measure(context.Context) (any, error) {
	v := (*a)[0]
	if len(*a) > 1 {
		*a = (*a)[1:]
	}
	if err, ok := v.(error); ok {
		return nil, err
	}
	return v, nil
}

func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func TestRun(t *testing.T) {
	nan := math.NaN()
	down := errors.New("prometheus http://p:9090: connection refused")
	tests := []struct {
		name    string
		spec    fleet.Analysis
		answers answers
		// wantErr "" passes; taken is how many measurements were said.
		wantErr string
		taken   int
	}{
		{"all good", fleet.Analysis{SuccessCondition: "result < 0.01", Count: 3}, answers{0.001}, "", 3},
		{"one bad of three, tolerated", fleet.Analysis{SuccessCondition: "result < 0.01", Count: 3, FailureLimit: 1}, answers{0.001, 0.5, 0.002}, "", 3},
		{"bad ends it at once", fleet.Analysis{SuccessCondition: "result < 0.01", Count: 10}, answers{0.001, 0.034}, "analysis error-rate failed: 0.034: result < 0.01 does not hold (1 of 2 measurements, failureLimit 0)", 2},
		{"failure condition", fleet.Analysis{FailureCondition: "result > 0.1", Count: 2}, answers{0.05, 0.2}, "analysis error-rate failed: 0.2: result > 0.1 holds (1 of 2 measurements, failureLimit 0)", 2},
		{"no data is inconclusive", fleet.Analysis{SuccessCondition: "result < 0.01", Count: 3}, answers{nil}, "analysis error-rate inconclusive: no data (1 of 1 measurements, inconclusiveLimit 0)", 1},
		{"NaN is no data", fleet.Analysis{SuccessCondition: "result < 0.01", Count: 3, InconclusiveLimit: 5}, answers{nan}, "analysis error-rate inconclusive: no measurement succeeded (last: no data)", 3},
		{"never passes on no data alone", fleet.Analysis{SuccessCondition: "result < 0.01", Count: 2, InconclusiveLimit: 1}, answers{nil, 0.001}, "", 2},
		{"neither condition", fleet.Analysis{SuccessCondition: "result < 0.01", FailureCondition: "result > 0.1", Count: 2}, answers{0.05}, "analysis error-rate inconclusive: 0.05: neither condition holds", 1},
		{"down counts as failed", fleet.Analysis{SuccessCondition: "result < 0.01", Count: 3, FailureLimit: 1}, answers{down, down}, "analysis error-rate failed: prometheus http://p:9090: connection refused (2 of 2 measurements", 2},
		{"refused fails at once", fleet.Analysis{SuccessCondition: "result < 0.01", Count: 3, FailureLimit: 5}, answers{Refused(errors.New("prometheus http://p:9090 refused the query: parse error"))}, "analysis error-rate failed: prometheus http://p:9090 refused the query: parse error", 1},
		{"condition on a list", fleet.Analysis{SuccessCondition: "result < 0.01", Count: 1}, answers{[]float64{0.1, 0.2}}, "analysis error-rate failed: result < 0.01: no such overload", 1},
		{"a list", fleet.Analysis{SuccessCondition: "result.all(x, x < 0.5)", Count: 1}, answers{[]float64{0.1, nan, 0.2}}, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = "error-rate"
			a, err := Of(tt.spec, &tt.answers)
			if err != nil {
				t.Fatal(err)
			}
			a.Sleep = noSleep
			var said []Measurement
			err = a.Run(context.Background(), time.Now().Add(time.Hour), func(m Measurement) { said = append(said, m) })
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q…", err, tt.wantErr)
			}
			if len(said) != tt.taken {
				t.Errorf("%d measurements said, want %d: %+v", len(said), tt.taken, said)
			}
			for i, m := range said {
				if m.N != i+1 || m.Analysis != "error-rate" {
					t.Errorf("measurement %d: %+v", i, m)
				}
			}
		})
	}
}

// Without a count, an analysis measures every interval until the soak's
// end, and at least once.
func TestRunUntilEnd(t *testing.T) {
	a, err := Of(fleet.Analysis{Name: "up", SuccessCondition: "result == 1.0", Interval: 10 * time.Millisecond}, &answers{1.0})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	start := time.Now()
	if err := a.Run(context.Background(), start.Add(55*time.Millisecond), func(Measurement) { n++ }); err != nil {
		t.Fatal(err)
	}
	if n < 3 || n > 6 {
		t.Errorf("%d measurements in 55ms at 10ms", n)
	}
	n = 0
	if err := a.Run(context.Background(), time.Now(), func(Measurement) { n++ }); err != nil || n != 1 {
		t.Errorf("a soak already over: %d measurements, error %v", n, err)
	}
}

// Ctrl-C stops an analysis without a verdict of its own.
func TestRunInterrupted(t *testing.T) {
	a, err := Of(fleet.Analysis{Name: "up", SuccessCondition: "result == 1.0", Count: 100, Interval: time.Hour}, &answers{1.0})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if err := a.Run(ctx, time.Now().Add(time.Hour), func(Measurement) {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}
