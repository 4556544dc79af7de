package notify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-github/v84/github"
)

// DefaultPerCluster is how many clusters a wave may have for each to get
// a commit status of its own; a larger wave gets one for the wave.
const DefaultPerCluster = 20

// commentMarker starts the pull request comment a fleet's releases edit
// in place.
const commentMarker = "<!-- kubectl-fleet notify: "

// GitHub tells a commit and its pull request of a release: a commit
// status per cluster (per wave past PerCluster clusters), a deployment
// per group with its statuses (in progress, queued while held, success,
// failure), and a pull request comment with the release's table, edited
// in place by every release of the fleet.
type GitHub struct {
	Owner, Repo string
	// SHA is the commit the statuses and deployments name; "": the
	// release's (the fleet file's work tree's HEAD).
	SHA string
	// PR is the pull request commented on; 0: none.
	PR int
	// PerCluster bounds the clusters of a wave that get a status each.
	PerCluster int
	client     *github.Client

	mu sync.Mutex
	// deployments are each group's deployment in this release, by
	// release ID and group; comment is the pull request's comment.
	deployments map[string]int64
	comment     int64
	// states are every cluster's state so far, by release.
	states map[string]map[string]string
}

// NewGitHub is a GitHub sink for repository "owner/name" with a token
// (statuses: write, deployments: write, pull-requests: write); apiURL,
// when set, is a GitHub Enterprise Server's (https://HOST/api/v3/) or a
// test's.
func NewGitHub(repository, sha string, pr int, token, apiURL string, client *http.Client) (*GitHub, error) {
	owner, repo, ok := strings.Cut(repository, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return nil, fmt.Errorf("repository %q is not owner/name", repository)
	}
	c := github.NewClient(client).WithAuthToken(token)
	if apiURL != "" {
		var err error
		if c, err = c.WithEnterpriseURLs(apiURL, apiURL); err != nil {
			return nil, fmt.Errorf("apiURL: %w", err)
		}
	}
	return &GitHub{Owner: owner, Repo: repo, SHA: sha, PR: pr, PerCluster: DefaultPerCluster, client: c,
		deployments: map[string]int64{}, states: map[string]map[string]string{}}, nil
}

// Send tells GitHub of ev.
func (g *GitHub) Send(ctx context.Context, ev Event) error {
	var err error
	switch ev.Type {
	case WaveStarted:
		err = g.statuses(ctx, ev, "pending", "started")
		if !g.deployed(ev) { // a group's later waves: still in progress
			err = errors.Join(err, g.deploy(ctx, ev, "in_progress", ev.Wave+" started"))
		}
	case WaveHeld:
		why := fmt.Sprintf("held (%s): %s", ev.Held.Brake, some(ev.Held.Reasons))
		err = errors.Join(g.statuses(ctx, ev, "pending", why), g.deploy(ctx, ev, "queued", why))
	case WaveFinished:
		err = g.finished(ctx, ev)
	case ReleaseFinished, Rollback:
		err = g.commentOn(ctx, ev)
	case Test: // a read: the token reaches the repository; nothing written
		_, _, err = g.client.Repositories.Get(ctx, g.Owner, g.Repo)
	}
	return githubErr(err)
}

// finished sets a finished wave's statuses, and its group's deployment's
// when the wave failed or was the group's last.
func (g *GitHub) finished(ctx context.Context, ev Event) error {
	g.mu.Lock()
	if g.states[ev.Release.ID] == nil {
		g.states[ev.Release.ID] = map[string]string{}
	}
	for c, s := range ev.States {
		g.states[ev.Release.ID][c] = s
	}
	g.mu.Unlock()
	state, summary := "success", fmt.Sprintf("%d succeeded", ev.Counts.Succeeded)
	if ev.Counts.Failed > 0 {
		state, summary = "failure", fmt.Sprintf("%d of %d failed", ev.Counts.Failed, ev.Counts.Total)
	}
	errs := []error{g.statuses(ctx, ev, "", summary)}
	if state == "failure" || lastOfGroup(ev) {
		errs = append(errs, g.deploy(ctx, ev, state, ev.Wave+": "+summary))
	}
	return errors.Join(errs...)
}

// lastOfGroup reports whether ev's wave is its group's last.
func lastOfGroup(ev Event) bool {
	i := slices.IndexFunc(ev.Waves, func(w WaveState) bool { return w.Name == ev.Wave })
	return i >= 0 && !slices.ContainsFunc(ev.Waves[i+1:], func(w WaveState) bool { return w.Group == ev.Group })
}

// statuses sets the commit status of each of ev's clusters (state "":
// each cluster's own, from ev.States), or of its wave past PerCluster.
func (g *GitHub) statuses(ctx context.Context, ev Event, state, description string) error {
	sha := cmp.Or(g.SHA, ev.Release.Commit)
	if sha == "" {
		return nil
	}
	set := func(context, state string) error {
		_, _, err := g.client.Repositories.CreateStatus(ctx, g.Owner, g.Repo, sha, github.RepoStatus{
			State: &state, Context: github.Ptr("kubectl-fleet/" + ev.Fleet + "/" + context), Description: github.Ptr(clipTo(description, 140))})
		return err
	}
	if len(ev.Clusters) > g.PerCluster {
		s := state
		if s == "" {
			s = map[bool]string{true: "failure", false: "success"}[ev.Counts.Failed > 0]
		}
		return set(ev.Wave, s)
	}
	for _, c := range ev.Clusters {
		s := state
		if s == "" {
			s = statusOf(ev.States[c])
		}
		if err := set(c, s); err != nil {
			return err
		}
	}
	return nil
}

// statusOf is the commit status of a cluster's state.
func statusOf(state string) string {
	switch state {
	case "succeeded", "skipped":
		return "success"
	case "failed":
		return "failure"
	}
	return "error" // not started: the wave stopped before it
}

// deployed reports whether ev's group has its deployment in ev's release.
func (g *GitHub) deployed(ev Event) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.deployments[ev.Release.ID+"/"+ev.Group] != 0
}

// deploy sets the state of ev's group's deployment, made when the group's
// first wave starts or is held.
func (g *GitHub) deploy(ctx context.Context, ev Event, state, description string) error {
	sha := cmp.Or(g.SHA, ev.Release.Commit)
	if sha == "" {
		return nil
	}
	key := ev.Release.ID + "/" + ev.Group
	g.mu.Lock()
	id := g.deployments[key]
	g.mu.Unlock()
	if id == 0 {
		d, _, err := g.client.Repositories.CreateDeployment(ctx, g.Owner, g.Repo, &github.DeploymentRequest{
			Ref: github.Ptr(sha), Environment: github.Ptr(ev.Group), AutoMerge: github.Ptr(false), RequiredContexts: &[]string{},
			Description: github.Ptr(clipTo(ev.Fleet+": release "+ev.Release.ID, 140)), Task: github.Ptr("deploy:" + ev.Fleet)})
		if err != nil {
			return err
		}
		id = d.GetID()
		g.mu.Lock()
		g.deployments[key] = id
		g.mu.Unlock()
	}
	_, _, err := g.client.Repositories.CreateDeploymentStatus(ctx, g.Owner, g.Repo, id, &github.DeploymentStatusRequest{
		State: &state, Description: github.Ptr(clipTo(description, 140)), Environment: github.Ptr(ev.Group)})
	return err
}

// commentOn writes the release's table into the pull request's comment,
// the one the fleet's releases edit (found by its marker), or a new one.
func (g *GitHub) commentOn(ctx context.Context, ev Event) error {
	if g.PR == 0 {
		return nil
	}
	body := g.commentBody(ev)
	g.mu.Lock()
	id := g.comment
	g.mu.Unlock()
	if id == 0 {
		marker := commentMarker + ev.Fleet + " -->"
		for c, err := range g.client.Issues.ListCommentsIter(ctx, g.Owner, g.Repo, g.PR, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}) {
			if err != nil {
				return err
			}
			if strings.HasPrefix(c.GetBody(), marker) {
				id = c.GetID()
				break
			}
		}
	}
	var err error
	var c *github.IssueComment
	if id != 0 {
		c, _, err = g.client.Issues.EditComment(ctx, g.Owner, g.Repo, id, &github.IssueComment{Body: &body})
		var resp *github.ErrorResponse
		if errors.As(err, &resp) && resp.Response != nil && (resp.Response.StatusCode == 403 || resp.Response.StatusCode == 404) {
			// Not ours to edit (someone else wrote the marker first), or
			// gone: a comment of our own.
			id, err = 0, nil
		}
	}
	if id == 0 {
		c, _, err = g.client.Issues.CreateComment(ctx, g.Owner, g.Repo, g.PR, &github.IssueComment{Body: &body})
	}
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.comment = c.GetID()
	return nil
}

// commentBody is the comment of a release: its marker, headline, the
// waves' table and each cluster's state (up to 100 clusters).
func (g *GitHub) commentBody(ev Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s -->\n### %s\n\n", commentMarker, ev.Fleet, Headline(ev))
	if ev.Rollback != nil {
		fmt.Fprintf(&b, "%s\n\n", rollbackLine(ev.Rollback))
	}
	b.WriteString("| wave | state | succeeded | failed | not started |\n| --- | --- | ---: | ---: | ---: |\n")
	for _, w := range ev.Waves {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d |\n", w.Name, w.State, w.Counts.Succeeded, w.Counts.Failed, w.Counts.NotStarted)
	}
	g.mu.Lock()
	states := g.states[ev.Release.ID]
	g.mu.Unlock()
	if n := len(states); n > 0 && n <= 100 {
		b.WriteString("\n| cluster | state |\n| --- | --- |\n")
		for _, c := range slices.Sorted(maps.Keys(states)) {
			fmt.Fprintf(&b, "| %s | %s |\n", c, states[c])
		}
	}
	fmt.Fprintf(&b, "\n<sub>release %s</sub>\n", ev.Release.ID)
	return b.String()
}

// githubErr is err, Permanent unless a retry may fix it (a rate limit, a
// server error, no answer).
func githubErr(err error) error {
	if err == nil {
		return nil
	}
	var rate *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var resp *github.ErrorResponse
	switch {
	case errors.As(err, &rate), errors.As(err, &abuse):
		return err
	case errors.As(err, &resp) && resp.Response != nil && resp.Response.StatusCode < 500:
		return Permanent(fmt.Errorf("github refused: %s %s: %d %s", resp.Response.Request.Method, resp.Response.Request.URL.Path, resp.Response.StatusCode, resp.Message))
	}
	return redact(err)
}
