// Package githubtest is a stand-in for the GitHub REST API at the HTTP
// level, for tests without the internet: commit statuses, deployments
// and their statuses, and issue comments, as GitHub documents their
// requests and answers (a token as a bearer, JSON), recording what was
// written.
package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// Deployment is a deployment and its statuses' states, in order.
type Deployment struct {
	ID          int64
	Ref         string
	Environment string
	States      []string
}

// Server is the stand-in for one repository.
type Server struct {
	// URL is the API's address, as a GitHub Enterprise Server's
	// (…/api/v3/).
	URL string
	// Token is the only token it accepts.
	Token string
	// Repo is "owner/name".
	Repo string

	srv *httptest.Server
	mu  sync.Mutex
	// Requests counts the requests answered with the token.
	Requests    int
	statuses    map[string]string // sha/context → state
	deployments []*Deployment
	comments    map[int64]string
	order       []int64 // comment IDs in order
	issueOf     map[int64]int
	nextID      int64
}

// New starts a stand-in of repo accepting token; Close stops it.
func New(repo, token string) *Server {
	s := &Server{Token: token, Repo: repo, statuses: map[string]string{}, comments: map[int64]string{}, issueOf: map[int64]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/api/v3/"
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Statuses are the commit statuses' latest states, by "sha context".
func (s *Server) Statuses() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.statuses {
		out[k] = v
	}
	return out
}

// Deployments are the deployments made, in order.
func (s *Server) Deployments() []Deployment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Deployment
	for _, d := range s.deployments {
		c := *d
		c.States = append([]string(nil), d.States...)
		out = append(out, c)
	}
	return out
}

// Comments are issue number's comments' bodies, in order.
func (s *Server) Comments(number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range s.order {
		if s.issueOf[id] == number {
			out = append(out, s.comments[id])
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		reply(http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	prefix := "/api/v3/repos/" + s.Repo + "/"
	if r.Method == http.MethodGet && r.URL.Path == strings.TrimSuffix(prefix, "/") {
		s.mu.Lock()
		s.Requests++
		s.mu.Unlock()
		reply(http.StatusOK, map[string]any{"full_name": s.Repo})
		return
	}
	if !strings.HasPrefix(r.URL.Path, prefix) {
		reply(http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, prefix), "/")
	var body map[string]any
	if r.Body != nil && r.Method != http.MethodGet {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			reply(http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON"})
			return
		}
	}
	str := func(k string) string { v, _ := body[k].(string); return v }
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Requests++
	s.nextID++
	id := s.nextID
	switch {
	case r.Method == http.MethodPost && len(parts) == 2 && parts[0] == "statuses":
		s.statuses[parts[1]+" "+str("context")] = str("state")
		reply(http.StatusCreated, map[string]any{"id": id, "state": str("state"), "context": str("context")})
	case r.Method == http.MethodPost && len(parts) == 1 && parts[0] == "deployments":
		s.deployments = append(s.deployments, &Deployment{ID: id, Ref: str("ref"), Environment: str("environment")})
		reply(http.StatusCreated, map[string]any{"id": id, "ref": str("ref"), "environment": str("environment")})
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "deployments" && parts[2] == "statuses":
		n, _ := strconv.ParseInt(parts[1], 10, 64)
		for _, d := range s.deployments {
			if d.ID == n {
				d.States = append(d.States, str("state"))
				reply(http.StatusCreated, map[string]any{"id": id, "state": str("state")})
				return
			}
		}
		reply(http.StatusNotFound, map[string]string{"message": "Not Found"})
	case len(parts) == 3 && parts[0] == "issues" && parts[2] == "comments":
		n, _ := strconv.Atoi(parts[1])
		if r.Method == http.MethodGet {
			var list []map[string]any
			for _, cid := range s.order {
				if s.issueOf[cid] == n {
					list = append(list, map[string]any{"id": cid, "body": s.comments[cid]})
				}
			}
			reply(http.StatusOK, list)
			return
		}
		s.comments[id], s.issueOf[id] = str("body"), n
		s.order = append(s.order, id)
		reply(http.StatusCreated, map[string]any{"id": id, "body": str("body")})
	case r.Method == http.MethodPatch && len(parts) == 3 && parts[0] == "issues" && parts[1] == "comments":
		n, _ := strconv.ParseInt(parts[2], 10, 64)
		if _, ok := s.comments[n]; !ok {
			reply(http.StatusNotFound, map[string]string{"message": "Not Found"})
			return
		}
		s.comments[n] = str("body")
		reply(http.StatusOK, map[string]any{"id": n, "body": str("body")})
	default:
		reply(http.StatusNotFound, map[string]string{"message": fmt.Sprintf("Not Found: %s %s", r.Method, r.URL.Path)})
	}
}
