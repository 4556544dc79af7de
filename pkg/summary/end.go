package summary

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/prompt"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Finish prints the summary on p (text with notes, or -o json) and says
// how the rollout ended, as the command's exit: 130 when interrupted
// (ctx done), 1 when a cluster did not finish or a question was answered
// no, Skipped's when clusters were skipped; verb is "apply".
func (r *Rollout) Finish(ctx context.Context, p *output.Printer, verb string) error {
	p.Close()
	if p.JSON {
		for _, res := range r.Results() {
			p.Event(res)
		}
	} else {
		r.Print(p.Out, p.Prefix, p.Many, p.Notes)
	}
	failed, total := r.Failed(), len(r.Outcomes)
	awaiting, approve := awaiting(r.Outcomes)
	switch refused := refused(r.Outcomes); {
	case ctx.Err() != nil:
		return &exit.Error{Code: exit.Interrupted}
	case awaiting > 0 && failed == awaiting:
		return &exit.Error{Code: exit.AwaitingApproval, Err: fmt.Errorf("%d of %d clusters await approval, as their group asks (approval: required): %s", awaiting, total, approve)}
	case refused == total:
		return &exit.Error{Code: exit.Failed, Err: fmt.Errorf("aborted (not confirmed): nothing written")}
	case refused > 0 && failed == refused:
		return &exit.Error{Code: exit.Failed, Err: fmt.Errorf("aborted (not confirmed): %d of %d clusters not written", refused, total)}
	case failed > 0:
		return &exit.Error{Code: exit.Failed, Err: fmt.Errorf("%d of %d clusters did not %s", failed, total, verb)}
	}
	return Skipped(r.Outcomes, exit.Failed)
}

// refused is how many clusters were not started because a protected
// group's question was answered no.
func refused(outcomes []runner.Outcome) int {
	n := 0
	for _, oc := range outcomes {
		if oc.State == runner.NotStarted && errors.Is(oc.Err, prompt.ErrNotConfirmed) {
			n++
		}
	}
	return n
}

// awaiting is how many clusters were not started because their group
// awaits approval, and what to run.
func awaiting(outcomes []runner.Outcome) (int, string) {
	n, groups := 0, []string{}
	for _, oc := range outcomes {
		var a *rollout.AwaitingApproval
		if oc.State == runner.NotStarted && errors.As(oc.Err, &a) {
			n++
			if !slices.Contains(groups, a.Group) {
				groups = append(groups, a.Group)
			}
		}
	}
	return n, rollout.ApproveCommand(groups...) + ", then run again"
}

// Skipped is the error for clusters skipped: exit 3 when all were
// unreachable (--skip-unreachable), else code; nil when none was.
func Skipped(outcomes []runner.Outcome, code int) error {
	n, unreachable := 0, 0
	for _, oc := range outcomes {
		var skip *runner.SkipError
		if oc.State == runner.Skipped && errors.As(oc.Err, &skip) {
			n++
			if skip.Unreachable {
				unreachable++
			}
		}
	}
	switch {
	case n == 0:
		return nil
	case unreachable == n:
		return &exit.Error{Code: exit.Skipped, Err: fmt.Errorf("%d of %d clusters skipped: unreachable", n, len(outcomes))}
	}
	return &exit.Error{Code: code, Err: fmt.Errorf("%d of %d clusters skipped", n, len(outcomes))}
}

// Each writes a line per cluster on w, after its prefix: what said says
// of a cluster that went through; "not started"; or its error, after
// what said says of it ("…; failed: …", failed naming the error: "" for
// the error alone). It returns how many did not go through.
func Each(w io.Writer, prefix *output.Prefixer, outcomes []runner.Outcome, said func(oc runner.Outcome) string, failed string) int {
	n := 0
	for _, oc := range outcomes {
		line := said(oc)
		switch {
		case oc.State == runner.NotStarted:
			line = "not started"
			n++
		case oc.Err != nil:
			n++
			msg := oc.Err.Error()
			if failed != "" {
				msg = failed + ": " + msg
			}
			line = strings.TrimPrefix(line+"; "+msg, "; ")
		}
		fmt.Fprintf(w, "%s%s\n", prefix.Prefix(oc.Cluster), line)
	}
	return n
}

// Verdict is the exit of a command that works on each cluster: 130 when
// interrupted (ctx done), 1 when failed of total clusters did not go
// through ("2 of 5 clusters not unlocked": what), else nil.
func Verdict(ctx context.Context, failed, total int, what string) error {
	switch {
	case ctx.Err() != nil:
		return &exit.Error{Code: exit.Interrupted}
	case failed > 0:
		return &exit.Error{Code: exit.Failed, Err: fmt.Errorf("%d of %d clusters %s", failed, total, what)}
	}
	return nil
}
