package notify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Sink sends events somewhere: a webhook, Slack, Teams, GitHub.
type Sink interface {
	// Send delivers ev. The Notifier calls it from one goroutine per
	// sink, in the order of the events, with a context that ends at the
	// sink's timeout; an error that Permanent wraps is not retried.
	Send(ctx context.Context, ev Event) error
}

// Target is a sink and what it is sent.
type Target struct {
	// Name names it in warnings (the fleet file's sink name).
	Name string
	Sink Sink
	// Events are the types it wants; empty: every one.
	Events []Type
	// Groups, when set, limit it to the events of those groups' waves
	// (a group's own sinks); the release's events are sent too.
	Groups []string
	// Required: a failure to deliver is the run's failure (an exit code
	// of its own), not only a warning.
	Required bool
	// Timeout bounds each attempt (DefaultTimeout); Retries are the
	// attempts after the first (DefaultRetries), apart by Backoff.
	Timeout time.Duration
	Retries int
	Backoff time.Duration
}

// The defaults of a Target.
const (
	DefaultTimeout = 10 * time.Second
	DefaultRetries = 3
	DefaultBackoff = 500 * time.Millisecond
	// queueSize bounds the events waiting for one sink; past it they are
	// dropped (and counted as not sent).
	queueSize = 1024
)

// wants reports whether t is sent ev.
func (t *Target) wants(ev Event) bool {
	if len(t.Events) > 0 && !slices.Contains(t.Events, ev.Type) {
		return false
	}
	return len(t.Groups) == 0 || ev.Group == "" || slices.Contains(t.Groups, ev.Group)
}

// permanent is an error not worth another attempt.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// Permanent marks err as not worth retrying (a 4xx answer, a refused
// credential).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// errGaveUp is what an event Close gave up on was not sent for.
var errGaveUp = errors.New("the run ended before it was sent")

// ErrRequired is what Close returns when a required sink missed an
// event: the run's own exit code (exit.Notify).
var ErrRequired = errors.New("a required notification was not sent")

// Notifier sends each event to the targets that want it, each from a
// goroutine of its own, so that a slow or broken sink never holds the
// rollout: Notify never blocks.
type Notifier struct {
	queues []*queue
	warn   func(string)
}

// queue is one target's events and what became of them.
type queue struct {
	t      Target
	events chan Event
	done   chan struct{}
	// mu guards the rest.
	mu       sync.Mutex
	sent     int
	failed   int
	dropped  int
	firstErr error
	// stop ends the attempts in flight once Close gives up.
	stop context.CancelFunc
	ctx  context.Context
}

// New starts a Notifier for targets; warn is told, once for each target
// at Close, what it did not send (nil: nothing is said).
func New(targets []Target, warn func(string)) *Notifier {
	n := &Notifier{warn: warn}
	for _, t := range targets {
		t.Timeout = cmpOr(t.Timeout, DefaultTimeout)
		t.Backoff = cmpOr(t.Backoff, DefaultBackoff)
		if t.Retries < 0 {
			t.Retries = 0
		}
		q := &queue{t: t, events: make(chan Event, queueSize), done: make(chan struct{})}
		q.ctx, q.stop = context.WithCancel(context.Background())
		n.queues = append(n.queues, q)
		go q.run()
	}
	return n
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Notify hands ev to every target that wants it, without waiting.
func (n *Notifier) Notify(ev Event) {
	if n == nil {
		return
	}
	for _, q := range n.queues {
		if !q.t.wants(ev) {
			continue
		}
		select {
		case q.events <- ev:
		default:
			q.mu.Lock()
			q.dropped++
			q.mu.Unlock()
		}
	}
}

// Close sends what is still queued until ctx ends (a run killed mid-way
// gives it a few seconds), then warns, once for each target, of what was
// not sent, and returns ErrRequired (with the targets' errors) when a
// required one missed an event.
func (n *Notifier) Close(ctx context.Context) error {
	if n == nil {
		return nil
	}
	for _, q := range n.queues {
		close(q.events)
	}
	var errs []error
	for _, q := range n.queues {
		select {
		case <-q.done:
		case <-ctx.Done():
			q.stop()
			<-q.done
		}
		if w := q.warning(); w != "" {
			if n.warn != nil {
				n.warn(w)
			}
			if q.t.Required {
				errs = append(errs, errors.New(w))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrRequired, errors.Join(errs...))
	}
	return nil
}

// run sends the queue's events in order until it is closed; once stopped
// (Close gave up) it counts the rest as not sent.
func (q *queue) run() {
	defer close(q.done)
	defer q.stop()
	for ev := range q.events {
		err := errGaveUp
		if q.ctx.Err() == nil {
			err = q.send(ev)
		}
		q.mu.Lock()
		if err != nil {
			q.failed++
			if q.firstErr == nil {
				q.firstErr = err
			}
		} else {
			q.sent++
		}
		q.mu.Unlock()
	}
}

// send makes up to 1 + Retries attempts at ev, each within Timeout.
func (q *queue) send(ev Event) error {
	b := wait.Backoff{Duration: q.t.Backoff, Factor: 2, Jitter: 0.2, Steps: q.t.Retries + 1, Cap: 30 * time.Second}
	var err error
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(q.ctx, q.t.Timeout)
		err = q.t.Sink.Send(ctx, ev)
		cancel()
		if err == nil || errors.As(err, new(permanent)) || attempt >= q.t.Retries {
			return err
		}
		t := time.NewTimer(b.Step())
		select {
		case <-q.ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// warning says what the queue did not send, or "".
func (q *queue) warning() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	missed := q.failed + q.dropped
	if missed == 0 {
		return ""
	}
	total := q.sent + missed
	w := fmt.Sprintf("notify %s: %d of %d events not sent", q.t.Name, missed, total)
	if q.dropped > 0 {
		w += fmt.Sprintf(" (%d dropped: the sink fell behind)", q.dropped)
	}
	if q.firstErr != nil {
		w += ": " + q.firstErr.Error()
	}
	return w
}

// TestAll sends each target a Test event of fleet, once (no retry),
// each within its timeout, and returns each target's error, in order.
func TestAll(ctx context.Context, targets []Target, fleet string) []error {
	ev := Event{Type: Test, Time: time.Now().UTC(), Seq: 1, Fleet: fleet, Release: Release{ID: "test-" + time.Now().UTC().Format("20060102T150405Z"), Verb: "vet"}}
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, cmpOr(t.Timeout, DefaultTimeout))
			defer cancel()
			errs[i] = t.Sink.Send(ctx, ev)
		})
	}
	wg.Wait()
	return errs
}
