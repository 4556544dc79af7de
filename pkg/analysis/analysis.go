// Package analysis measures a cluster's metrics while it soaks: each of
// a group's or batch's analyses (fleet.Analysis) queried at its
// interval, its result judged by CEL conditions (pkg/condition), until
// it passed, or failed more often than its limits allow.
//
// No data never passes: an empty answer or NaN is inconclusive, and an
// analysis that never succeeded fails. A query the provider refuses (bad
// PromQL, 401, 404) fails it at once; one it cannot answer now (down,
// 5xx, slow past the timeout) counts as a failed measurement.
package analysis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/condition"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// Outcome is what one measurement said.
type Outcome string

// The outcomes of a measurement.
const (
	Successful   Outcome = "successful"
	Failed       Outcome = "failed"
	Inconclusive Outcome = "inconclusive"
	// Error is a measurement the provider could not take (counted as
	// failed).
	Error Outcome = "error"
)

// Measurement is one measurement of an analysis on a cluster.
type Measurement struct {
	Analysis string
	// N is the measurement's number, from 1; Count how many the analysis
	// takes (0: until the soak ends).
	N, Count int
	// Value is the result as text ("0.0042", "[0.1, 0.2]", "no data").
	Value   string
	Outcome Outcome
	// Condition is the condition that decided ("result < 0.01"), and
	// Holds whether it held.
	Condition string
	Holds     bool
	Err       error
}

// Provider takes one measurement's result: a float64, a list of them, a
// decoded JSON document, or nil for no data. An error wrapped by
// Refused is one asking again will not mend.
type Provider interface {
	Measure(ctx context.Context) (any, error)
}

// refused is an error a provider will give again: the analysis fails at
// once.
type refused struct{ error }

func (r refused) Unwrap() error { return r.error }

// Refused marks err as one asking again will not mend (a query that
// does not parse, credentials refused).
func Refused(err error) error { return refused{err} }

// Analysis is one analysis of one cluster, ready to run.
type Analysis struct {
	Spec     fleet.Analysis
	Provider Provider
	// Sleep waits d or until ctx ends (nil: a timer); tests make time
	// pass faster.
	Sleep            func(ctx context.Context, d time.Duration) error
	success, failure *condition.Condition
}

// Of is a's analysis over p, its conditions those the fleet file's
// checks compiled already (condition.Compile, once per process: an
// error here is a file not checked).
func Of(a fleet.Analysis, p Provider) (*Analysis, error) {
	out := &Analysis{Spec: a, Provider: p}
	var err error
	if a.SuccessCondition != "" {
		if out.success, err = condition.Compile(a.SuccessCondition); err != nil {
			return nil, fmt.Errorf("successCondition %w", err)
		}
	}
	if a.FailureCondition != "" {
		if out.failure, err = condition.Compile(a.FailureCondition); err != nil {
			return nil, fmt.Errorf("failureCondition %w", err)
		}
	}
	if out.success == nil && out.failure == nil {
		return nil, errors.New("no successCondition or failureCondition")
	}
	return out, nil
}

// Run measures until the analysis passed or failed: Count measurements
// Interval apart (InitialDelay before the first), or with no Count one
// every Interval until end, and at least one. Each measurement is told
// to said as it is taken. It returns nil when the analysis passed, else
// why it failed, with its last value and condition; ctx's error when it
// ended first.
func (a *Analysis) Run(ctx context.Context, end time.Time, said func(Measurement)) error {
	interval := a.Spec.Interval
	if interval <= 0 {
		interval = fleet.DefaultAnalysisInterval
	}
	if err := a.sleep(ctx, a.Spec.InitialDelay); err != nil {
		return err
	}
	var t tally
	for n := 1; ; n++ {
		m := a.measure(ctx, n)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		said(m)
		if err := t.add(a.Spec, m); err != nil {
			return err
		}
		last := n == a.Spec.Count || (a.Spec.Count == 0 && !time.Now().Add(interval).Before(end))
		if last {
			return t.end(a.Spec, m)
		}
		if err := a.sleep(ctx, interval); err != nil {
			return err
		}
	}
}

func (a *Analysis) sleep(ctx context.Context, d time.Duration) error {
	if a.Sleep != nil {
		return a.Sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// measure takes measurement n and judges it.
func (a *Analysis) measure(ctx context.Context, n int) Measurement {
	m := Measurement{Analysis: a.Spec.Name, N: n, Count: a.Spec.Count}
	v, err := a.Provider.Measure(ctx)
	if err != nil {
		m.Outcome, m.Value, m.Err = Error, "no answer", err
		return m
	}
	v = normal(v)
	m.Value = text(v)
	if v == nil {
		m.Outcome = Inconclusive
		return m
	}
	if a.failure != nil {
		m.Condition = a.failure.String()
		failed, err := a.failure.Eval(v)
		switch {
		case err != nil:
			m.Outcome, m.Err = Error, err
			return m
		case failed:
			m.Outcome, m.Holds = Failed, true
			return m
		}
	}
	if a.success == nil {
		m.Outcome = Successful
		return m
	}
	m.Condition = a.success.String()
	ok, err := a.success.Eval(v)
	switch {
	case err != nil:
		m.Outcome, m.Err = Error, err
	case ok:
		m.Outcome, m.Holds = Successful, true
	case a.failure != nil:
		m.Outcome = Inconclusive // neither condition held
	default:
		m.Outcome = Failed
	}
	return m
}

// tally counts an analysis's measurements against its limits.
type tally struct{ successful, failed, inconclusive int }

// add counts m, and returns why the analysis failed when it did.
func (t *tally) add(spec fleet.Analysis, m Measurement) error {
	switch m.Outcome {
	case Successful:
		t.successful++
	case Inconclusive:
		if t.inconclusive++; t.inconclusive > spec.InconclusiveLimit {
			return fmt.Errorf("analysis %s inconclusive: %s (%d of %d measurements, inconclusiveLimit %d)", spec.Name, why(m), t.inconclusive, m.N, spec.InconclusiveLimit)
		}
	default:
		if errors.As(m.Err, new(refused)) {
			return fmt.Errorf("analysis %s failed: %v", spec.Name, m.Err)
		}
		if t.failed++; t.failed > spec.FailureLimit {
			return fmt.Errorf("analysis %s failed: %s (%d of %d measurements, failureLimit %d)", spec.Name, why(m), t.failed, m.N, spec.FailureLimit)
		}
	}
	return nil
}

// end is the analysis's outcome once its last measurement was counted:
// passed, unless none of them succeeded.
func (t *tally) end(spec fleet.Analysis, last Measurement) error {
	if t.successful == 0 {
		return fmt.Errorf("analysis %s inconclusive: no measurement succeeded (last: %s)", spec.Name, why(last))
	}
	return nil
}

// why is a measurement in words: "0.034: result < 0.01 does not
// hold", "no data", or the provider's error.
func why(m Measurement) string {
	switch {
	case m.Err != nil:
		return m.Err.Error()
	case m.Value == noData:
		return noData
	case m.Outcome == Inconclusive:
		return m.Value + ": neither condition holds"
	case m.Condition == "":
		return m.Value
	case m.Holds:
		return m.Value + ": " + m.Condition + " holds"
	}
	return m.Value + ": " + m.Condition + " does not hold"
}

const noData = "no data"

// normal is a result with no data made nil: NaN (0/0, a rate of no
// requests), an empty list.
func normal(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) {
			return nil
		}
	case []float64:
		kept := x[:0:0]
		for _, f := range x {
			if !math.IsNaN(f) {
				kept = append(kept, f)
			}
		}
		if len(kept) == 0 {
			return nil
		}
		return kept
	case []any:
		if len(x) == 0 {
			return nil
		}
	}
	return v
}

// text is a result as a measurement's line shows it.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return noData
	case float64:
		return strconv.FormatFloat(x, 'g', 6, 64)
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = strconv.FormatFloat(f, 'g', 6, 64)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	s := fmt.Sprint(v)
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}
