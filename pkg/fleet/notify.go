package fleet

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// Notify is a sink a rollout tells of its release's events (package
// notify): exactly one of its kinds, a webhook, Slack, GitHub or Teams. A fleet's sinks hear every event; a
// group's, the events of its own waves and the release's.
type Notify struct {
	// Name names the sink in warnings and in vet; unique in its list.
	Name string `yaml:"name" jsonschema:"required"`
	// Events are the events it is sent (NotifyEvents); empty: all.
	Events []string `yaml:"events"`
	// Required makes an event it could not be sent the run's failure
	// (exit code 7) rather than a warning.
	Required bool `yaml:"required"`
	// Timeout bounds each attempt to send (10s); a failed attempt is
	// tried 3 more times, with backoff.
	Timeout time.Duration `yaml:"timeout"`
	// Webhook posts CloudEvents.
	Webhook *Webhook `yaml:"webhook"`
	// Slack keeps one message per release in a channel.
	Slack *Slack `yaml:"slack"`
	// GitHub sets commit statuses and deployments, and a pull request
	// comment.
	GitHub *GitHub `yaml:"github"`
	// Teams posts Adaptive Cards through a Workflows webhook.
	Teams *Teams `yaml:"teams"`
}

// Teams posts Adaptive Cards to a channel through a Microsoft Teams
// Workflows webhook, whose URL is a credential: from urlFrom.
type Teams struct {
	URLFrom *Credential `yaml:"urlFrom" jsonschema:"required"`
}

// GitHub tells a commit and its pull request of each release: a commit
// status per cluster (per wave past perCluster), a deployment per group
// with its statuses, a pull request comment edited in place. In GitHub
// Actions the commit and pull request are the run's
// ($GITHUB_EVENT_PATH's pull request, else $GITHUB_SHA); elsewhere the
// fleet file's work tree's HEAD, and no comment.
type GitHub struct {
	// Repository is "owner/name"; "": $GITHUB_REPOSITORY.
	Repository string `yaml:"repository"`
	// TokenFrom is a token with statuses, deployments and pull requests
	// write (Actions' GITHUB_TOKEN with those permissions).
	TokenFrom *Credential `yaml:"tokenFrom" jsonschema:"required"`
	// APIURL is a GitHub Enterprise Server's API (https://HOST/api/v3/).
	APIURL string `yaml:"apiURL"`
	// PerCluster is how many clusters a wave may have for each to get a
	// status of its own (20); a larger wave gets one.
	PerCluster int `yaml:"perCluster"`
}

// Slack keeps one message per release in a channel, edited as the
// release moves, with failures, holds and rollbacks in its thread: a
// bot token's (chat:write), from tokenFrom.
type Slack struct {
	// Channel is the channel's ID (C0123…) or name (#deploys).
	Channel   string      `yaml:"channel" jsonschema:"required"`
	TokenFrom *Credential `yaml:"tokenFrom" jsonschema:"required"`
	// APIURL replaces https://slack.com/api/: a proxy's, or a test's.
	APIURL string `yaml:"apiURL"`
}

// Webhook posts each event as a CloudEvent (JSON) to a URL, signed when
// a secret is given. The URL is written in the file only when it holds
// no credential: no user, password or query; a URL that does (a Slack or
// Teams webhook's) comes from urlFrom.
type Webhook struct {
	URL     string      `yaml:"url"`
	URLFrom *Credential `yaml:"urlFrom"`
	// SecretFrom is the key an HMAC-SHA256 of each body is made with
	// (the X-Fleet-Signature-256 header).
	SecretFrom *Credential `yaml:"secretFrom"`
}

// Credential is where a sink's secret is read when the run starts, never
// the secret itself: exactly one of an environment variable and a file
// (relative to the fleet file's folder).
type Credential struct {
	Env  string `yaml:"env"`
	File string `yaml:"file"`
}

// String names the source, never its content: "env:NAME", "file:PATH".
func (c *Credential) String() string {
	if c.Env != "" {
		return "env:" + c.Env
	}
	return "file:" + c.File
}

// Read reads the credential (trailing white space trimmed), or says which
// source is missing or empty, never its content.
func (f *Fleet) Read(c *Credential) (string, error) {
	var v string
	if c.Env != "" {
		v = os.Getenv(c.Env)
	} else {
		b, err := os.ReadFile(f.ResolvePath(c.File))
		if err != nil {
			return "", fmt.Errorf("%s: %w", c, err)
		}
		v = string(b)
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return "", fmt.Errorf("%s is empty", c)
	}
	return v, nil
}

// NotifyEnvs are the environment variables the fleet's sinks (its own
// and its groups') read credentials from: what a check must not inherit.
func (f *Fleet) NotifyEnvs() []string {
	var out []string
	lists := [][]Notify{f.Notify}
	for i := range f.Groups {
		lists = append(lists, f.Groups[i].Notify)
	}
	for _, list := range lists {
		for _, n := range list {
			for _, c := range n.credentials() {
				if c != nil && c.Env != "" {
					out = append(out, c.Env)
				}
			}
		}
	}
	return out
}

// credentials are where the sink reads its secrets, nil where it has none.
func (n *Notify) credentials() []*Credential {
	var out []*Credential
	if w := n.Webhook; w != nil {
		out = append(out, w.URLFrom, w.SecretFrom)
	}
	if s := n.Slack; s != nil {
		out = append(out, s.TokenFrom)
	}
	if g := n.GitHub; g != nil {
		out = append(out, g.TokenFrom)
	}
	if t := n.Teams; t != nil {
		out = append(out, t.URLFrom)
	}
	return out
}

// NotifyEvents are the events a sink may ask for, in the order a release
// meets them (package notify's Types).
var NotifyEvents = []string{"release.started", "wave.started", "wave.held", "approval.required", "cluster.failed", "wave.finished", "rollback", "release.finished"}

// secretHosts are hosts whose webhook URLs are credentials in their
// paths: they come from urlFrom.
var secretHosts = []string{"hooks.slack.com", ".webhook.office.com", ".logic.azure.com", "discord.com", "discordapp.com", ".environment.api.powerplatform.com"}

// validateNotify checks a list of sinks (p its path: "notify",
// "groups[1].notify").
func (f *Fleet) validateNotify(e *errs, p string, sinks []Notify) {
	names := map[string]bool{}
	for i := range sinks {
		n := &sinks[i]
		q := fmt.Sprintf("%s[%d]", p, i)
		validateName(e, q+".name", n.Name)
		if names[n.Name] && n.Name != "" {
			e.add(q+".name", "duplicate sink name %q", n.Name)
		}
		names[n.Name] = true
		for j, ev := range n.Events {
			if !slices.Contains(NotifyEvents, ev) {
				e.add(fmt.Sprintf("%s.events[%d]", q, j), "unknown event %q (one of %s)", ev, strings.Join(NotifyEvents, ", "))
			}
		}
		if n.Timeout < 0 {
			e.add(q+".timeout", "must not be negative, got %s", n.Timeout)
		}
		switch kinds := countSet(n.Webhook != nil, n.Slack != nil, n.GitHub != nil, n.Teams != nil); {
		case kinds == 0:
			e.add(q, "one sink kind is required: webhook, slack, github or teams")
		case kinds > 1:
			e.add(q, "only one sink kind may be set: webhook, slack, github or teams")
		}
		if n.Teams != nil {
			if n.Teams.URLFrom == nil {
				e.add(q+".teams.urlFrom", "required: a Workflows webhook's URL is a credential, from an environment variable or a file")
			}
			f.validateCredential(e, q+".teams.urlFrom", n.Teams.URLFrom)
		}
		if n.GitHub != nil {
			f.validateGitHub(e, q+".github", n.GitHub)
		}
		if n.Webhook != nil {
			f.validateWebhook(e, q+".webhook", n.Webhook)
		}
		if n.Slack != nil {
			f.validateSlack(e, q+".slack", n.Slack)
		}
	}
}

// countSet is how many of set are true.
func countSet(set ...bool) int {
	n := 0
	for _, b := range set {
		if b {
			n++
		}
	}
	return n
}

// validateSlack checks a Slack sink (p its path).
func (f *Fleet) validateSlack(e *errs, p string, s *Slack) {
	if s.Channel == "" {
		e.add(p+".channel", "required: the channel's ID (C0123…) or name")
	}
	f.validateAPI(e, p, s.TokenFrom, "a bot token", s.APIURL)
}

// validateAPI checks an API sink's token (what, required) and apiURL (p
// the sink's path).
func (f *Fleet) validateAPI(e *errs, p string, token *Credential, what, url string) {
	if token == nil {
		e.add(p+".tokenFrom", "required: the environment variable or file of %s, never the token", what)
	}
	f.validateCredential(e, p+".tokenFrom", token)
	if url != "" {
		if err := apiURL(url); err != nil {
			e.add(p+".apiURL", "%v", err)
		}
	}
}

// validateWebhook checks a webhook sink (p its path).
func (f *Fleet) validateWebhook(e *errs, p string, w *Webhook) {
	switch {
	case w.URL == "" && w.URLFrom == nil:
		e.add(p, "one of url and urlFrom is required")
	case w.URL != "" && w.URLFrom != nil:
		e.add(p, "only one of url and urlFrom may be set")
	case w.URL != "":
		if err := plainURL(w.URL); err != nil {
			e.add(p+".url", "%v", err)
		}
	}
	f.validateCredential(e, p+".urlFrom", w.URLFrom)
	f.validateCredential(e, p+".secretFrom", w.SecretFrom)
}

// plainURL checks a URL written in the fleet file: http or https, with a
// host, and nothing that is a credential (a user, a password, a query, a
// host whose webhook paths are secrets). Its error never repeats the URL.
func plainURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("want an http or https URL, got scheme %q", u.Scheme)
	case u.Host == "":
		return fmt.Errorf("the URL has no host")
	case u.User != nil || u.RawQuery != "":
		return fmt.Errorf("the URL holds a credential (a user or a query): give it with urlFrom (env or file), not in the fleet file")
	}
	hostname := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, h := range secretHosts {
		if hostname == strings.TrimPrefix(h, ".") || strings.HasPrefix(h, ".") && strings.HasSuffix(hostname, h) {
			return fmt.Errorf("a %s URL is a credential: give it with urlFrom (env or file), not in the fleet file", hostname)
		}
	}
	return nil
}

// apiURL checks an API sink's apiURL: a plain URL (plainURL), and https
// but on loopback: the sink's token goes there.
func apiURL(s string) error {
	if err := plainURL(s); err != nil {
		return err
	}
	u, _ := url.Parse(s)
	if h := u.Hostname(); u.Scheme != "https" && h != "localhost" && (net.ParseIP(h) == nil || !net.ParseIP(h).IsLoopback()) {
		return fmt.Errorf("the token is sent there: want https (http only on loopback), got %s://%s", u.Scheme, u.Host)
	}
	return nil
}

// validateCredential checks where a credential is read from (p its
// path); nil is fine.
func (f *Fleet) validateCredential(e *errs, p string, c *Credential) {
	switch {
	case c == nil:
	case c.Env == "" && c.File == "":
		e.add(p, "one of env and file is required")
	case c.Env != "" && c.File != "":
		e.add(p, "only one of env and file may be set")
	case c.Env != "" && !envName.MatchString(c.Env):
		e.add(p+".env", "%q is not an environment variable name such as FLEET_WEBHOOK_URL", c.Env)
	case c.File != "":
		if _, err := os.Stat(f.ResolvePath(c.File)); err != nil {
			e.add(p+".file", "%s does not exist (relative paths start at the fleet file's folder)", c.File)
		}
	}
}

// validateGitHub checks a GitHub sink (p its path).
func (f *Fleet) validateGitHub(e *errs, p string, g *GitHub) {
	if r := g.Repository; r != "" {
		owner, name, ok := strings.Cut(r, "/")
		if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			e.add(p+".repository", "%q is not owner/name", r)
		}
	}
	f.validateAPI(e, p, g.TokenFrom, "a token (GITHUB_TOKEN)", g.APIURL)
	if g.PerCluster < 0 {
		e.add(p+".perCluster", "must not be negative, got %d", g.PerCluster)
	}
}
