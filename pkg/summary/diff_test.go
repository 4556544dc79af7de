package summary

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// TestDiffLine: what diff's summary says of a cluster; one that failed
// part way keeps the counts of what it did diff, as -o json does.
func TestDiffLine(t *testing.T) {
	fail := errors.New("app db: 1 object failed")
	tests := []struct {
		name string
		oc   runner.Outcome
		s    diff.Summary
		want string
	}{
		{"in sync", runner.Outcome{State: runner.Succeeded}, diff.Summary{Unchanged: 3}, "0 to create, 0 to change, 0 to prune, 3 unchanged"},
		{"conflicts", runner.Outcome{State: runner.Succeeded}, diff.Summary{Change: 1, Conflicts: 1}, "0 to create, 1 to change, 0 to prune, 0 unchanged (apply needs --force-conflicts for 1)"},
		{"failed part way", runner.Outcome{State: runner.Failed, Err: fail}, diff.Summary{Create: 2, Unchanged: 1, Errors: 1}, "error: app db: 1 object failed (of what it diffed: 2 to create, 0 to change, 0 to prune, 1 unchanged)"},
		{"failed at once", runner.Outcome{State: runner.Failed, Err: fail}, diff.Summary{}, "error: app db: 1 object failed"},
		{"skipped", runner.Outcome{State: runner.Skipped, Err: errors.New("unreachable")}, diff.Summary{}, "skipped: unreachable"},
		{"interrupted", runner.Outcome{State: runner.NotStarted}, diff.Summary{}, "not diffed (interrupted)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := diffLine(tt.oc, tt.s); got != tt.want {
				t.Errorf("diffLine = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDiffExit: diff's exit policy, kubectl diff's convention: 0 in
// sync, 1 differs, 2 an error (a cluster not diffed, the external diff
// program's), 3 all skipped unreachable, 130 interrupted; the external
// program runs only when a cluster differs.
func TestDiffExit(t *testing.T) {
	ok := func(c string, s diff.Summary) (runner.Outcome, diff.Summary) {
		return runner.Outcome{Cluster: c, State: runner.Succeeded}, s
	}
	inSync, differs := diff.Summary{Unchanged: 2}, diff.Summary{Change: 1, Unchanged: 1}
	failed := runner.Outcome{Cluster: "b", State: runner.Failed, Err: errors.New("boom")}
	unreachable := runner.Outcome{Cluster: "b", State: runner.Skipped, Err: &runner.SkipError{Reason: "unreachable", Unreachable: true}}
	skipped := runner.Outcome{Cluster: "b", State: runner.Skipped, Err: &runner.SkipError{Reason: "paused"}}
	extFails := errors.New("diff program: exit 2")
	tests := []struct {
		name        string
		a           diff.Summary // cluster a, diffed
		b           runner.Outcome
		gathered    error
		external    error // what the external program returns
		interrupted bool
		wantCode    int // -1: nil
		wantErr     string
		wantRun     bool // the external program ran
	}{
		{name: "in sync", a: inSync, b: runner.Outcome{Cluster: "b", State: runner.Succeeded}, wantCode: -1},
		{name: "differs", a: differs, b: runner.Outcome{Cluster: "b", State: runner.Succeeded}, wantCode: exit.Failed, wantRun: true},
		{name: "external fails", a: differs, b: runner.Outcome{Cluster: "b", State: runner.Succeeded}, external: extFails, wantCode: exit.DiffError, wantErr: extFails.Error(), wantRun: true},
		{name: "external in sync not run", a: inSync, b: runner.Outcome{Cluster: "b", State: runner.Succeeded}, external: extFails, wantCode: -1},
		{name: "gathering failed", a: differs, b: runner.Outcome{Cluster: "b", State: runner.Succeeded}, gathered: errors.New("disk full"), wantCode: exit.DiffError, wantErr: "disk full"},
		{name: "a cluster failed", a: differs, b: failed, wantCode: exit.DiffError, wantErr: "1 of 2 clusters could not be diffed", wantRun: true},
		{name: "interrupted", a: differs, b: runner.Outcome{Cluster: "b", State: runner.NotStarted}, interrupted: true, wantCode: exit.Interrupted, wantRun: true},
		{name: "unreachable skipped", a: differs, b: unreachable, wantCode: exit.Skipped, wantErr: "1 of 2 clusters skipped: unreachable", wantRun: true},
		{name: "skipped", a: inSync, b: skipped, wantCode: exit.DiffError, wantErr: "1 of 2 clusters skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oa, sa := ok("a", tt.a)
			d := Diff{Outcomes: []runner.Outcome{oa, tt.b}, Summaries: map[string]diff.Summary{"a": sa}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.interrupted {
				cancel()
			}
			ran := false
			err := d.Exit(ctx, tt.gathered, func() error { ran = true; return tt.external })
			if ran != tt.wantRun {
				t.Errorf("external program ran: %v, want %v", ran, tt.wantRun)
			}
			var ee *exit.Error
			switch {
			case tt.wantCode == -1 && err != nil:
				t.Fatalf("Exit = %v, want nil", err)
			case tt.wantCode == -1:
			case !errors.As(err, &ee) || ee.Code != tt.wantCode:
				t.Fatalf("Exit = %#v, want exit %d", err, tt.wantCode)
			case tt.wantErr == "" && ee.Err != nil, tt.wantErr != "" && (ee.Err == nil || ee.Err.Error() != tt.wantErr):
				t.Errorf("Exit = %v, want %q", err, tt.wantErr)
			}
		})
	}
	if err := (Diff{Outcomes: []runner.Outcome{{Cluster: "a", State: runner.Succeeded}}, Summaries: map[string]diff.Summary{"a": differs}}).Exit(context.Background(), nil, nil); err == nil {
		t.Error("Exit without an external program: nil, want exit 1")
	}
}

// TestWithPlan: a plan asked for (--out) and not written is exit 2 when
// the diff itself went well or only differs; any other error of the
// diff's stays, and the plan's is said.
func TestWithPlan(t *testing.T) {
	perr := errors.New("no plan written: cluster b was not diffed whole (failed)")
	diffErr := &exit.Error{Code: exit.DiffError, Err: errors.New("1 of 2 clusters could not be diffed")}
	tests := []struct {
		name     string
		err      error
		perr     error
		want     error // nil: the plan's error as exit 2
		wantSaid string
	}{
		{name: "written", err: diffErr, want: diffErr},
		{name: "written, in sync", err: nil, want: nil},
		{name: "in sync", err: nil, perr: perr},
		{name: "differs", err: &exit.Error{Code: exit.Failed}, perr: perr},
		{name: "diff failed", err: diffErr, perr: perr, want: diffErr, wantSaid: "error: " + perr.Error() + "\n"},
		{name: "interrupted", err: &exit.Error{Code: exit.Interrupted}, perr: perr, want: &exit.Error{Code: exit.Interrupted}, wantSaid: "error: " + perr.Error() + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w bytes.Buffer
			got := WithPlan(tt.err, tt.perr, &w)
			if w.String() != tt.wantSaid {
				t.Errorf("said %q, want %q", w.String(), tt.wantSaid)
			}
			var ee *exit.Error
			switch {
			case tt.perr == nil || tt.want != nil:
				if fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Errorf("WithPlan = %v, want %v", got, tt.want)
				}
			case !errors.As(got, &ee) || ee.Code != exit.DiffError || ee.Err != tt.perr:
				t.Errorf("WithPlan = %#v, want the plan's error as exit 2", got)
			}
		})
	}
}

// TestDiffFinish: the summary is a line per cluster, or -o json's
// results, before the exit.
func TestDiffFinish(t *testing.T) {
	d := Diff{Outcomes: []runner.Outcome{{Cluster: "a", State: runner.Succeeded}}, Summaries: map[string]diff.Summary{"a": {Create: 1}}}
	for _, jsonOut := range []bool{false, true} {
		var out bytes.Buffer
		p := output.NewPrinter(&out, jsonOut, output.NewPrefixer([]string{"a"}, false), 10)
		err := d.Finish(context.Background(), p, nil, nil)
		var ee *exit.Error
		if !errors.As(err, &ee) || ee.Code != exit.Failed {
			t.Errorf("json %v: Finish = %v, want exit 1", jsonOut, err)
		}
		want := "1 to create, 0 to change, 0 to prune, 0 unchanged"
		if jsonOut {
			want = `{"type":"summary","cluster":"a","create":1,"change":0,"prune":0,"unchanged":0,"conflicts":0,"errors":0}`
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("json %v: printed %q, want %q in it", jsonOut, out.String(), want)
		}
	}
}
