package reconcile

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
)

// TestLoopOnce: --once ends with the pass's exit code, its message
// already said by the pass.
func TestLoopOnce(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want int
	}{
		{"went through", nil, exit.OK},
		{"skipped", &exit.Error{Code: exit.Skipped, Err: errors.New("1 of 2 clusters skipped: unreachable")}, exit.Skipped},
		{"an error without a code", errors.New("render failed"), exit.Failed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			passes := 0
			err := Loop(context.Background(), time.Hour, true, Log{W: &bytes.Buffer{}}, func(context.Context, int) error { passes++; return tt.err })
			code := exit.OK
			if ee := (*exit.Error)(nil); errors.As(err, &ee) {
				code = ee.Code
				if ee.Err != nil {
					t.Errorf("the message %q would be said twice", ee.Err)
				}
			}
			if code != tt.want || passes != 1 {
				t.Errorf("code %d after %d passes, want %d after 1", code, passes, tt.want)
			}
		})
	}
}

// TestLoopSignal: a signal during a pass lets the pass finish (its
// context is not cancelled) and then the loop ends; the next pass never
// starts.
func TestLoopSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var log bytes.Buffer
	passes := 0
	err := Loop(ctx, time.Millisecond, false, Log{W: &log}, func(pctx context.Context, n int) error {
		passes++
		cancel()
		time.Sleep(20 * time.Millisecond)
		if pctx.Err() != nil {
			t.Error("the pass in flight was cancelled by the signal")
		}
		return nil
	})
	if err != nil || passes != 1 {
		t.Errorf("err %v after %d passes, want nil after 1", err, passes)
	}
	for _, want := range []string{"signalled: pass 1 finishes", "stopping: signalled"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log %q lacks %q", log.String(), want)
		}
	}
}
