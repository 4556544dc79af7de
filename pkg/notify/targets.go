package notify

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// TargetsOf are the sinks of f's notify: lists, the fleet's and each
// group's (limited to that group's waves), their credentials read now
// (from the environment or files) and each told to secret (the run's
// mask). An error names the sink and where its credential was to come
// from, never the credential.
func TargetsOf(f *fleet.Fleet, client *http.Client, secret func(string)) ([]Target, error) {
	r := reader{f: f, secret: secret}
	var out []Target
	add := func(n *fleet.Notify, group string) error {
		t := Target{Name: n.Name, Required: n.Required, Timeout: n.Timeout, Retries: DefaultRetries}
		if group != "" {
			t.Name, t.Groups = group+"/"+n.Name, []string{group}
		}
		for _, ev := range n.Events {
			typ, err := ParseType(ev)
			if err != nil {
				return fmt.Errorf("notify %s: %w", t.Name, err)
			}
			t.Events = append(t.Events, typ)
		}
		var err error
		switch {
		case n.Slack != nil:
			t.Sink, err = slackOf(r, n.Slack, client)
		case n.GitHub != nil:
			t.Sink, err = gitHubOf(r, n.GitHub, client)
		case n.Teams != nil:
			t.Sink, err = teamsOf(r, n.Teams, client)
		default:
			t.Sink, err = webhookOf(r, n.Webhook, client)
		}
		if err != nil {
			return fmt.Errorf("notify %s: %w", t.Name, err)
		}
		out = append(out, t)
		return nil
	}
	for i := range f.Notify {
		if err := add(&f.Notify[i], ""); err != nil {
			return nil, err
		}
	}
	for _, g := range f.Groups {
		for i := range g.Notify {
			if err := add(&g.Notify[i], g.Name); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// webhookOf is the sink of a webhook of f, its URL and secret read.
func webhookOf(f reader, w *fleet.Webhook, client *http.Client) (*Webhook, error) {
	if w == nil {
		return nil, fmt.Errorf("no sink kind")
	}
	hook := &Webhook{URL: w.URL, Client: client}
	if w.URLFrom != nil {
		u, err := readURL(f, w.URLFrom)
		if err != nil {
			return nil, err
		}
		hook.URL = u
	}
	if w.SecretFrom != nil {
		s, err := f.Read(w.SecretFrom)
		if err != nil {
			return nil, fmt.Errorf("its secret: %w", err)
		}
		hook.Secret = []byte(s)
	}
	return hook, nil
}

// slackOf is the sink of a Slack of f, its token read.
func slackOf(f reader, s *fleet.Slack, client *http.Client) (*Slack, error) {
	token, err := f.Read(s.TokenFrom)
	if err != nil {
		return nil, fmt.Errorf("its token: %w", err)
	}
	return NewSlack(s.Channel, token, s.APIURL, client), nil
}

// gitHubOf is the sink of a GitHub of f: its token read, its repository,
// commit and pull request the Actions run's when not given.
func gitHubOf(f reader, g *fleet.GitHub, client *http.Client) (*GitHub, error) {
	token, err := f.Read(g.TokenFrom)
	if err != nil {
		return nil, fmt.Errorf("its token: %w", err)
	}
	repo := cmp.Or(g.Repository, os.Getenv("GITHUB_REPOSITORY"))
	if repo == "" {
		return nil, fmt.Errorf("no repository: give github.repository, or run in GitHub Actions ($GITHUB_REPOSITORY)")
	}
	sha, pr := actionsCommit()
	sink, err := NewGitHub(repo, sha, pr, token, g.APIURL, client)
	if err != nil {
		return nil, err
	}
	if g.PerCluster > 0 {
		sink.PerCluster = g.PerCluster
	}
	return sink, nil
}

// actionsCommit is, in GitHub Actions, the commit a run's statuses
// belong on and its pull request: a pull request's head (not the merge
// commit checked out) and number, else $GITHUB_SHA; outside Actions, ""
// and 0.
func actionsCommit() (sha string, pr int) {
	if path := os.Getenv("GITHUB_EVENT_PATH"); path != "" {
		var ev struct {
			PullRequest struct {
				Number int `json:"number"`
				Head   struct {
					SHA string `json:"sha"`
				} `json:"head"`
			} `json:"pull_request"`
		}
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &ev) == nil && ev.PullRequest.Number > 0 {
			return ev.PullRequest.Head.SHA, ev.PullRequest.Number
		}
	}
	return os.Getenv("GITHUB_SHA"), 0
}

// readURL reads a URL that is a credential, checked to be http or https.
func readURL(f reader, c *fleet.Credential) (string, error) {
	u, err := f.Read(c)
	if err != nil {
		return "", fmt.Errorf("its URL: %w", err)
	}
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return "", fmt.Errorf("its URL (%s) is not an http or https URL", c)
	}
	return u, nil
}

// teamsOf is the sink of a Teams of f, its URL read.
func teamsOf(f reader, t *fleet.Teams, client *http.Client) (*Teams, error) {
	u, err := readURL(f, t.URLFrom)
	if err != nil {
		return nil, err
	}
	return &Teams{URL: u, Client: client}, nil
}

// reader reads a fleet's credentials and tells each to secret.
type reader struct {
	f      *fleet.Fleet
	secret func(string)
}

// Read is the credential c (fleet.Fleet.Read), told to secret.
func (r reader) Read(c *fleet.Credential) (string, error) {
	v, err := r.f.Read(c)
	if err == nil && r.secret != nil {
		r.secret(v)
	}
	return v, err
}
