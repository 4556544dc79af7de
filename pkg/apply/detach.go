package apply

import (
	"context"
	"errors"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// ErrAbort, as what the cause of a context's end is (errors.Is: an
// error type says so with an Is method), makes Run and Test cancel the
// requests they have in flight, not only stop starting new ones: a lost
// lock (rollout.LostLockError), after which no write of the run may
// reach the cluster, since another run may be writing there. Any other
// end of the context (Ctrl-C) lets requests already sent finish or time
// out (--request-timeout).
var ErrAbort = errors.New("requests in flight aborted")

// detach returns the context of Run's and Test's requests: it carries
// ctx's values but ends only when ctx ends with a cause that is ErrAbort
// (a lost lock): then the requests in flight are cancelled too, with
// that cause. A Ctrl-C leaves them to finish; ctx is its stop
// (kube.StopOf): once it ends, no request starts.
//
// The watch on ctx lasts until ctx ends: the contexts Run and Test are
// given end with their cluster's writes (rollout.Locks.Writes), and one
// that never ends (context.Background) holds none.
func detach(ctx context.Context) context.Context {
	requests, abort := context.WithCancelCause(context.WithoutCancel(ctx))
	context.AfterFunc(ctx, func() {
		if cause := context.Cause(ctx); errors.Is(cause, ErrAbort) {
			abort(cause)
		}
	})
	return kube.WithStop(requests, ctx)
}
