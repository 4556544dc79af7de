package notify

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// TargetsOf are the sinks of f's notify: lists, the fleet's and each
// group's (limited to that group's waves), their credentials read now
// (from the environment or files). An error names the sink and where its
// credential was to come from, never the credential.
func TargetsOf(f *fleet.Fleet, client *http.Client) ([]Target, error) {
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
			t.Sink, err = slackOf(f, n.Slack, client)
		default:
			t.Sink, err = webhookOf(f, n.Webhook, client)
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
func webhookOf(f *fleet.Fleet, w *fleet.Webhook, client *http.Client) (*Webhook, error) {
	if w == nil {
		return nil, fmt.Errorf("no sink kind")
	}
	hook := &Webhook{URL: w.URL, Client: client}
	if w.URLFrom != nil {
		u, err := f.Read(w.URLFrom)
		if err != nil {
			return nil, fmt.Errorf("its URL: %w", err)
		}
		if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
			return nil, fmt.Errorf("its URL (%s) is not an http or https URL", w.URLFrom)
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
func slackOf(f *fleet.Fleet, s *fleet.Slack, client *http.Client) (*Slack, error) {
	token, err := f.Read(s.TokenFrom)
	if err != nil {
		return nil, fmt.Errorf("its token: %w", err)
	}
	return NewSlack(s.Channel, token, s.APIURL, client), nil
}
