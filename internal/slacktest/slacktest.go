// Package slacktest is a stand-in for Slack's Web API at the HTTP level,
// for tests without the internet: chat.postMessage and chat.update as
// Slack documents them (form-encoded requests, a bot token as a bearer,
// JSON answers with "ok", "channel" and "ts"), recording every call.
package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Call is one request the stand-in answered.
type Call struct {
	// Method is "chat.postMessage" or "chat.update".
	Method, Channel string
	// TS is the message an update edits; ThreadTS the message a reply
	// answers ("" for a message of its own).
	TS, ThreadTS string
	Text         string
	// Blocks are the message's blocks, as JSON.
	Blocks string
}

// Server is the stand-in.
type Server struct {
	// URL is the API's address (…/api/), for slack.OptionAPIURL.
	URL string
	// Token is the only bot token it accepts.
	Token string
	// Fail, when set, answers a call with this status (and no body), or
	// 0 to answer it.
	Fail func(c Call) int

	srv   *httptest.Server
	mu    sync.Mutex
	calls []Call
	seq   int
}

// New starts a stand-in accepting token; Close stops it.
func New(token string) *Server {
	s := &Server{Token: token}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/api/"
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Calls are the calls answered so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	if r.Method != http.MethodPost || (method != "chat.postMessage" && method != "chat.update") {
		http.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if token == "" {
		token = r.PostForm.Get("token")
	}
	answer := func(v map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	if token != s.Token {
		answer(map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	c := Call{Method: method, Channel: r.PostForm.Get("channel"), TS: r.PostForm.Get("ts"), ThreadTS: r.PostForm.Get("thread_ts"),
		Text: r.PostForm.Get("text"), Blocks: r.PostForm.Get("blocks")}
	if s.Fail != nil {
		if code := s.Fail(c); code != 0 {
			w.WriteHeader(code)
			return
		}
	}
	if c.Channel == "" {
		answer(map[string]any{"ok": false, "error": "channel_not_found"})
		return
	}
	s.mu.Lock()
	s.seq++
	ts := c.TS
	if method == "chat.postMessage" {
		ts = fmt.Sprintf("1764400000.%06d", s.seq)
	}
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	// Slack answers with the channel's ID, whatever name was given.
	answer(map[string]any{"ok": true, "channel": "C0FLEET", "ts": ts})
}
