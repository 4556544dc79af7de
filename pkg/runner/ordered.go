package runner

import "context"

// Ordered runs work(ctx, i) for every index i in [0, n), at most parallel
// at once, and calls emit(i, v) with each result on the calling goroutine,
// in index order, as soon as that result and every one before it are
// there. Work on index i starts only once index i-window has been
// emitted: at most window results (at least parallel) are being worked on
// or waiting for an earlier one, so what is held does not grow with n.
//
// Once emit returns an error, or ctx is done, no further work starts and
// nothing more is emitted; Ordered waits for the work in flight and
// returns that error, or ctx's.
func Ordered[T any](ctx context.Context, n, parallel, window int, work func(ctx context.Context, i int) T, emit func(i int, v T) error) error {
	if parallel < 1 {
		parallel = 1
	}
	if window < parallel {
		window = parallel
	}
	type result struct {
		i int
		v T
	}
	var (
		results  = make(chan result, window)
		ready    = make([]T, window)
		have     = make([]bool, window)
		started  int
		emitted  int
		inFlight int
		err      error
		zero     T
	)
	for {
		stop := err != nil || ctx.Err() != nil
		for !stop && started < n && started < emitted+window && inFlight < parallel {
			i := started
			started++
			inFlight++
			go func() { results <- result{i, work(ctx, i)} }()
		}
		if inFlight == 0 {
			break
		}
		r := <-results
		inFlight--
		if err != nil || ctx.Err() != nil {
			continue
		}
		ready[r.i%window], have[r.i%window] = r.v, true
		for emitted < n && have[emitted%window] {
			v := ready[emitted%window]
			ready[emitted%window], have[emitted%window] = zero, false
			if err = emit(emitted, v); err != nil {
				break
			}
			emitted++
		}
	}
	if err != nil {
		return err
	}
	if emitted < n {
		return ctx.Err()
	}
	return nil
}
