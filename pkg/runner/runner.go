// Package runner fans work out over clusters in waves: the groups of the
// fleet file in order, each with its own parallelism and failure budget. It
// records every cluster's outcome, including those never started.
package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
)

// Every is one wave of all the named clusters that tolerates any failure:
// for commands that only read.
func Every(names []string) []Wave {
	return []Wave{{Name: "all", Clusters: names, MaxFailures: len(names)}}
}

// Wave is one group's clusters, or one batch of them, and its rollout
// policy.
type Wave struct {
	// Name is the group's, or "group/batch"; Group and Batch say which.
	Name         string
	Group, Batch string
	Clusters     []string
	// Needs are the earlier waves that must have gone through for this
	// one to start; nil: every earlier wave. A wave one of them stopped
	// after is not started, and holds the waves that need it in turn.
	Needs []string
	// MaxParallel bounds the clusters worked on at once; 0: no bound but
	// the run's.
	MaxParallel int
	// MaxFailures is how many failed clusters the wave tolerates before
	// the rollout stops.
	MaxFailures int
	// Brake, if set, is asked before the wave starts (its confirmation,
	// windows, pauses, promotion and approvals: rollout.Brake); an
	// error leaves the wave and every later one not started.
	Brake func() error
	// After, if set, runs once the wave went through within its failure
	// budget, with the clusters that succeeded (a soak): the clusters it
	// returns errors for have failed after all, and count against the
	// budget.
	After func(ctx context.Context, succeeded []string) map[string]error
	// Started, if set, is told once the wave's brakes let it go, before
	// its first cluster starts; Ended, if set, once a started wave is
	// over (its After included), with its clusters' outcomes.
	Started func()
	Ended   func(outcomes []Outcome)
}

// State is where a cluster ended up.
type State string

// The states.
const (
	Succeeded  State = "succeeded"
	Failed     State = "failed"
	NotStarted State = "not started"
	// Skipped: the cluster had nothing to do that could be done (a
	// rollback to a revision it does not have); it does not count against
	// the wave's failure budget.
	Skipped State = "skipped"
)

// Count is how many of outcomes ended in each state.
func Count(outcomes []Outcome) map[State]int {
	n := map[State]int{}
	for _, o := range outcomes {
		n[o.State]++
	}
	return n
}

// SkipError is what fn returns for a cluster it skipped, and why.
type SkipError struct {
	Reason string
	// Unreachable: the cluster could not be reached (--skip-unreachable).
	Unreachable bool
}

func (e *SkipError) Error() string { return e.Reason }

// Skipped says the error is a skip (output/progress tells it so).
func (e *SkipError) Skipped() bool { return true }

// Outcome is one cluster's result.
type Outcome struct {
	Cluster string
	Wave    string
	// Batch is the wave's batch of its group, "" for a group without.
	Batch string
	State State
	// Err is why the cluster failed, or why it was not started.
	Err error
}

// Run calls fn for every cluster of every wave, waves in order, at most
// parallel clusters at once (0: no bound). Once a wave has more failures
// than it tolerates, or ctx is done, no further cluster is started; the
// ones in flight finish. Outcomes are in wave and cluster order.
func Run(ctx context.Context, waves []Wave, parallel int, fn func(ctx context.Context, cluster string) error) []Outcome {
	var out []Outcome
	held := map[string]error{} // the waves that stopped, and why
	var earlier []string
	for _, w := range waves {
		outcomes := make([]Outcome, len(w.Clusters))
		why := w.heldBy(held, earlier)
		if why == nil && ctx.Err() != nil {
			why = ErrInterrupted
		}
		for i, c := range w.Clusters {
			outcomes[i] = Outcome{Cluster: c, Wave: w.Name, Batch: w.Batch, State: NotStarted, Err: why}
		}
		stopped := why != nil
		if !stopped && w.Brake != nil {
			if err := w.Brake(); err != nil {
				for i := range outcomes {
					outcomes[i].Err = err
				}
				stopped, why = true, err
			}
		}
		started := !stopped
		if started {
			if w.Started != nil {
				w.Started()
			}
			stopped = runWave(ctx, w, parallel, fn, outcomes)
		}
		if !stopped && w.After != nil && ctx.Err() == nil {
			stopped = after(ctx, w, outcomes)
		}
		if stopped && why == nil {
			why = overBudget(w, outcomes)
			if ctx.Err() != nil {
				why = ErrInterrupted
			}
		}
		if stopped {
			held[w.Name] = cmp.Or(why, fmt.Errorf("%s stopped", w.Name))
		}
		for i := range outcomes {
			// The wave's own clusters it stopped before starting them.
			if outcomes[i].State == NotStarted && outcomes[i].Err == nil {
				outcomes[i].Err = why
			}
		}
		if started && w.Ended != nil {
			w.Ended(outcomes)
		}
		out = append(out, outcomes...)
		earlier = append(earlier, w.Name)
	}
	return out
}

// heldBy is why w does not start: the reason of the first wave it needs
// (Needs; nil: every earlier one) that stopped, else nil.
func (w Wave) heldBy(held map[string]error, earlier []string) error {
	needs := w.Needs
	if needs == nil {
		needs = earlier
	}
	for _, n := range needs {
		if why, ok := held[n]; ok {
			return why
		}
	}
	return nil
}

// ErrInterrupted is why the clusters not started after Ctrl-C were not.
var ErrInterrupted = errors.New("interrupted")

// AtOnce is how many of the wave's clusters run at once with parallel
// (none past its MaxParallel, nor past parallel when it is positive): the
// first AtOnce of its Clusters start together.
func (w Wave) AtOnce(parallel int) int {
	n := len(w.Clusters)
	if w.MaxParallel > 0 {
		n = min(n, w.MaxParallel)
	}
	if parallel > 0 {
		n = min(n, parallel)
	}
	return n
}

// runWave runs one wave and reports whether the rollout must stop.
func runWave(ctx context.Context, w Wave, parallel int, fn func(context.Context, string) error, outcomes []Outcome) bool {
	sem := make(chan struct{}, max(1, w.AtOnce(parallel)))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures int
	)
	over := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return failures > w.MaxFailures
	}
	for i, c := range w.Clusters {
		sem <- struct{}{}
		if over() || ctx.Err() != nil {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := fn(ctx, c)
			if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
				// Stopped by the run's cancellation (Ctrl-C), not by the cluster.
				err = fmt.Errorf("interrupted: %w", err)
			}
			mu.Lock()
			defer mu.Unlock()
			var skip *SkipError
			switch {
			case errors.As(err, &skip):
				outcomes[i].State, outcomes[i].Err = Skipped, err
			case err != nil:
				outcomes[i].State, outcomes[i].Err = Failed, err
				failures++
			default:
				outcomes[i].State = Succeeded
			}
		}()
	}
	wg.Wait()
	return over() || ctx.Err() != nil
}

// after runs a wave's After hook and fails the clusters it names; it
// reports whether the wave is now over its failure budget.
func after(ctx context.Context, w Wave, outcomes []Outcome) bool {
	var succeeded []string
	failed := 0
	for _, o := range outcomes {
		switch o.State {
		case Succeeded:
			succeeded = append(succeeded, o.Cluster)
		case Failed:
			failed++
		}
	}
	if len(succeeded) == 0 {
		return false
	}
	errs := w.After(ctx, succeeded)
	for i := range outcomes {
		if err := errs[outcomes[i].Cluster]; err != nil && outcomes[i].State == Succeeded {
			outcomes[i].State, outcomes[i].Err = Failed, err
			failed++
		}
	}
	return failed > w.MaxFailures || ctx.Err() != nil
}

// overBudget says why a wave stopped the rollout: more of its clusters
// failed than it tolerates. Nil when it did not fail (its gate refused).
func overBudget(w Wave, outcomes []Outcome) error {
	failed := 0
	for _, o := range outcomes {
		if o.State == Failed {
			failed++
		}
	}
	if failed <= w.MaxFailures {
		return nil
	}
	return fmt.Errorf("%s failed (%d of %d clusters; maxFailures %d)", w.Name, failed, len(outcomes), w.MaxFailures)
}
