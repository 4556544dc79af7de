package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
)

// Loop runs pass after pass, Interval apart, until ctx is done (a
// signal), or once. A signal during a pass lets the pass finish (it runs
// on a context that is not cancelled), then Loop returns nil; during the
// sleep it returns at once. With once, Loop returns the pass's exit: nil,
// or an exit.Error with its code (exit.Failed for an error without one),
// its message already said by the pass.
func Loop(ctx context.Context, interval time.Duration, once bool, log Log, pass func(ctx context.Context, n int) error) error {
	for n := 1; ; n++ {
		passDone, said := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(said)
			select {
			case <-ctx.Done():
				log.Say(Note(fmt.Sprintf("signalled: pass %d finishes, then reconcile exits (a second signal exits at once)", n)))
			case <-passDone:
			}
		}()
		err := pass(context.WithoutCancel(ctx), n)
		close(passDone)
		<-said // its line, if any, before the loop's next
		if once {
			var ee *exit.Error
			switch {
			case err == nil:
				return nil
			case errors.As(err, &ee):
				return &exit.Error{Code: ee.Code}
			}
			return &exit.Error{Code: exit.Failed}
		}
		select {
		case <-ctx.Done():
			log.Say(Note("stopping: signalled"))
			return nil
		case <-time.After(interval):
		}
	}
}
