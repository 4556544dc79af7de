package kube

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestWriteTimeoutFollowsTheSlowestAnswer(t *testing.T) {
	delay := make(chan time.Duration, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(<-delay)
	}))
	defer srv.Close()
	s := &slowest{}
	c := &Client{slowest: s}
	hc := &http.Client{Transport: s.wrap(http.DefaultTransport)}
	get := func(d time.Duration) {
		delay <- d
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := WriteTimeout(c); got != MinWriteTimeout {
		t.Errorf("before any answer: %s, want %s", got, MinWriteTimeout)
	}
	get(10 * time.Millisecond)
	if got := WriteTimeout(c); got != MinWriteTimeout {
		t.Errorf("after a quick answer: %s, want %s", got, MinWriteTimeout)
	}
	get(1200 * time.Millisecond)
	get(10 * time.Millisecond)
	if got := WriteTimeout(c); got < 3600*time.Millisecond || got > 4*time.Second {
		t.Errorf("after an answer in 1.2 s: %s, want three times it", got)
	}
	s.observe(time.Minute)
	if got := WriteTimeout(c); got != MaxWriteTimeout {
		t.Errorf("after an answer in a minute: %s, want %s", got, MaxWriteTimeout)
	}
	// A request that got no answer is not a latency.
	srv.Close()
	s2 := &slowest{}
	if _, err := (&http.Client{Transport: s2.wrap(http.DefaultTransport)}).Get(srv.URL); err == nil {
		t.Fatal("a closed server answered")
	}
	if got := WriteTimeout(&Client{slowest: s2}); got != MinWriteTimeout {
		t.Errorf("after a request with no answer: %s, want %s", got, MinWriteTimeout)
	}
	if got := WriteTimeout(nil); got != MinWriteTimeout {
		t.Errorf("no client: %s", got)
	}
}
