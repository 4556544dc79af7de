package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sinkFunc is a Sink of a function.
type sinkFunc func(ctx context.Context, ev Event) error

func (f sinkFunc) Send(ctx context.Context, ev Event) error { return f(ctx, ev) }

// A sink that fails is retried, then given up on with one warning; a
// refusal (Permanent) is not retried; neither holds Notify.
func TestNotifierRetriesThenWarnsOnce(t *testing.T) {
	var flaky, refused atomic.Int32
	var warnings []string
	n := New([]Target{
		{Name: "flaky", Retries: 2, Backoff: time.Millisecond, Sink: sinkFunc(func(context.Context, Event) error {
			if flaky.Add(1)%3 != 0 {
				return errors.New("503 Service Unavailable")
			}
			return nil
		})},
		{Name: "refused", Retries: 5, Backoff: time.Millisecond, Sink: sinkFunc(func(context.Context, Event) error {
			refused.Add(1)
			return Permanent(errors.New("401 Unauthorized"))
		})},
	}, func(w string) { warnings = append(warnings, w) })
	for i := range 3 {
		n.Notify(Event{Type: WaveStarted, Seq: i + 1})
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v (no sink is required)", err)
	}
	if got := flaky.Load(); got != 9 {
		t.Errorf("the flaky sink was tried %d times, want 9 (3 events, each on its third attempt)", got)
	}
	if got := refused.Load(); got != 3 {
		t.Errorf("the refusing sink was tried %d times, want 3 (no retry)", got)
	}
	if len(warnings) != 1 || warnings[0] != "notify refused: 3 of 3 events not sent: 401 Unauthorized" {
		t.Errorf("warnings: %q", warnings)
	}
}

// A sink that hangs is bounded by its timeout, and Close gives up on it
// when its context ends: a required one is then the run's error.
func TestNotifierHangingRequired(t *testing.T) {
	hung := make(chan struct{})
	defer close(hung)
	n := New([]Target{{Name: "hangs", Required: true, Timeout: 50 * time.Millisecond, Retries: 1, Backoff: time.Millisecond,
		Sink: sinkFunc(func(ctx context.Context, _ Event) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-hung:
				return nil
			}
		})}}, nil)
	start := time.Now()
	for i := range 100 {
		n.Notify(Event{Seq: i + 1}) // never blocks
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Notify took %v with a hanging sink", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := n.Close(ctx)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v past its context", d)
	}
	if !errors.Is(err, ErrRequired) || !strings.Contains(err.Error(), "notify hangs: 100 of 100 events not sent: context deadline exceeded") {
		t.Errorf("Close: %v", err)
	}
}

// Targets get the events they ask for: a type list, a group's waves.
func TestTargetWants(t *testing.T) {
	tg := Target{Events: []Type{WaveHeld, ReleaseFinished}, Groups: []string{"production"}}
	for _, tc := range []struct {
		ev   Event
		want bool
	}{
		{Event{Type: WaveHeld, Group: "production"}, true},
		{Event{Type: WaveHeld, Group: "staging"}, false},
		{Event{Type: ReleaseFinished}, true},
		{Event{Type: WaveStarted, Group: "production"}, false},
	} {
		if got := tg.wants(tc.ev); got != tc.want {
			t.Errorf("%s of %q: %v, want %v", tc.ev.Type, tc.ev.Group, got, tc.want)
		}
	}
}

// The webhook posts a structured CloudEvent signed over its body; a 500
// is retried, a 404 is not, a server that is down is said without the
// URL's path or query (a webhook's credential).
func TestWebhook(t *testing.T) {
	secret := []byte("s3cret")
	var (
		mu     sync.Mutex
		bodies [][]byte
		status = []int{500, 200}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/cloudevents+json" || !Verify(secret, body, r.Header.Get(SignatureHeader)) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, body)
		code := 404
		if len(status) > 0 {
			code, status = status[0], status[1:]
		}
		w.WriteHeader(code)
	}))
	defer srv.Close()
	hook := &Webhook{URL: srv.URL + "/hooks/T0KEN?key=SECRETKEY", Secret: secret}
	ev := Event{Type: ClusterFailed, Seq: 3, Time: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), Fleet: "shop", Release: Release{ID: "r1"},
		Wave: "staging", Failure: &Failure{Cluster: "stg-2", Gate: "check smoke", Message: "exit status 1"}}
	n := New([]Target{{Name: "hook", Sink: hook, Retries: 1, Backoff: time.Millisecond}}, nil)
	n.Notify(ev)
	n.Notify(Event{Type: ReleaseFinished, Seq: 4, Fleet: "shop", Release: Release{ID: "r1"}, Time: ev.Time})
	var warned []string
	n.warn = func(w string) { warned = append(warned, w) }
	_ = n.Close(context.Background())
	if len(bodies) != 3 {
		t.Fatalf("%d posts, want 3 (a 500 retried, then a 200; a 404 not retried)", len(bodies))
	}
	var ce struct {
		SpecVersion, Type, Source, ID, Subject, DataContentType string
		Data                                                    Event
	}
	if err := json.Unmarshal(bodies[1], &ce); err != nil {
		t.Fatal(err)
	}
	if ce.SpecVersion != "1.0" || ce.Type != "io.kubectl-fleet.cluster.failed.v1" || ce.Source != "/kubectl-fleet/fleets/shop" || ce.ID != "r1.3" || ce.Subject != "stg-2" || ce.Data.Failure.Gate != "check smoke" {
		t.Errorf("the CloudEvent: %+v", ce)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "1 of 2 events not sent: POST http://127.0.0.1") || !strings.Contains(warned[0], "404") {
		t.Errorf("warnings: %q", warned)
	}
	// Down: the error names the host, never the path or query.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	err = (&Webhook{URL: down + "/hooks/T0KEN?key=SECRETKEY"}).Send(context.Background(), ev)
	if err == nil || strings.Contains(err.Error(), "T0KEN") || strings.Contains(err.Error(), "SECRETKEY") || !strings.Contains(err.Error(), down) {
		t.Errorf("a server that is down: %v", err)
	}
	for _, w := range warned {
		if strings.Contains(w, "T0KEN") || strings.Contains(w, "SECRETKEY") {
			t.Errorf("a warning prints the URL's credential: %s", w)
		}
	}
}

// TestAll sends each sink one test event, at once, without retries, each
// bounded by its timeout.
func TestTestAll(t *testing.T) {
	var tries atomic.Int32
	got := TestAll(context.Background(), []Target{
		{Name: "ok", Sink: sinkFunc(func(_ context.Context, ev Event) error {
			if ev.Type != Test || ev.Fleet != "shop" {
				return fmt.Errorf("got %s of %s", ev.Type, ev.Fleet)
			}
			return nil
		})},
		{Name: "fails", Sink: sinkFunc(func(context.Context, Event) error { tries.Add(1); return errors.New("503") })},
		{Name: "hangs", Timeout: 20 * time.Millisecond, Sink: sinkFunc(func(ctx context.Context, _ Event) error { <-ctx.Done(); return ctx.Err() })},
	}, "shop")
	if got[0] != nil || got[1] == nil || tries.Load() != 1 || !errors.Is(got[2], context.DeadlineExceeded) {
		t.Errorf("errors %v, %d tries of the failing sink", got, tries.Load())
	}
}
