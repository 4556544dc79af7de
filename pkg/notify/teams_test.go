package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// workflow is a stand-in for a Teams Workflows webhook: it takes a
// message whose attachment is an Adaptive Card, answers 202, and keeps
// each card's text.
type workflow struct {
	mu    sync.Mutex
	cards []string
}

func (w *workflow) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var m struct {
		Type        string
		Attachments []struct {
			ContentType string
			Content     struct {
				Type, Version string
				Body          []map[string]any
			}
		}
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &m); err != nil || m.Type != "message" || len(m.Attachments) != 1 || r.URL.Query().Get("sig") != "s3cret" ||
		m.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" || m.Attachments[0].Content.Type != "AdaptiveCard" {
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cards = append(w.cards, string(b))
	rw.WriteHeader(http.StatusAccepted)
}

// A 1,000-cluster release posts cards only where someone must look: the
// hold, the first failures, the end.
func TestTeams(t *testing.T) {
	wf := &workflow{}
	srv := httptest.NewServer(wf)
	defer srv.Close()
	n := New([]Target{{Name: "teams", Sink: &Teams{URL: srv.URL + "/workflows/x?sig=s3cret"}}}, func(w string) { t.Error(w) })
	bigRelease(NewRecorder("shop", Release{ID: "r1", Verb: "apply"}, bigWaves(), n.Notify), 10)
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(wf.cards) != maxReplies+2 {
		t.Fatalf("%d cards, want %d: 10 failures, the hold, the end", len(wf.cards), maxReplies+2)
	}
	last := wf.cards[len(wf.cards)-1]
	for _, want := range []string{"shop: apply failed", `"title":"production/rest","value":"held: 0 succeeded, 0 failed, 980 not started"`} {
		if !strings.Contains(last, want) {
			t.Errorf("the last card does not say %s:\n%s", want, last)
		}
	}
	// The URL signs the workflow: a refusal names its host only.
	err := (&Teams{URL: srv.URL + "/workflows/x?sig=wrong"}).Send(context.Background(), Event{Type: ReleaseFinished, Outcome: "succeeded"})
	if err == nil || strings.Contains(err.Error(), "wrong") || !strings.Contains(err.Error(), "400 Bad Request") {
		t.Errorf("a refused card: %v", err)
	}
}
