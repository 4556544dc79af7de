package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-fleet/kubectl-fleet/internal/githubtest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
)

// A release told to GitHub: a status per cluster of a small wave, one
// for a large wave, a deployment per group with its states, and one pull
// request comment, edited by the next release of the fleet.
func TestGitHub(t *testing.T) {
	api := githubtest.New("acme/shop", "ghs_test")
	defer api.Close()
	sink, err := NewGitHub("acme/shop", "abc123", 7, "ghs_test", api.URL, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	play := func(id string) {
		n := New([]Target{{Name: "github", Sink: sink}}, func(w string) { t.Error(w) })
		rec := NewRecorder("shop", Release{ID: id, Verb: "apply"}, bigWaves(), n.Notify)
		bigRelease(rec, 1)
		undo := rollout.UndoEvent{Automatic: true, Why: "production/canary failed", Clusters: []string{"c0010", "c0000"}}
		rec.RolledBack(undo, "")
		rec.RolledBack(undo, "succeeded")
		if err := n.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	play("r1")
	st := api.Statuses()
	want := map[string]string{}
	for i := range 10 {
		want[fmt.Sprintf("abc123 kubectl-fleet/shop/c%04d", i)] = "success"
		state := "success"
		if i == 0 {
			state = "failure"
		}
		want[fmt.Sprintf("abc123 kubectl-fleet/shop/c%04d", 10+i)] = state
	}
	want["abc123 kubectl-fleet/shop/production/rest"] = "pending" // 980 clusters: one status, held
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	got := api.Deployments()
	wantDeploys := []githubtest.Deployment{
		{ID: got[0].ID, Ref: "abc123", Environment: "staging", States: []string{"in_progress", "success"}},
		{ID: got[1].ID, Ref: "abc123", Environment: "production", States: []string{"in_progress", "failure", "queued"}},
	}
	if diff := cmp.Diff(wantDeploys, got); diff != "" {
		t.Errorf("deployments (-want +got):\n%s", diff)
	}
	comments := api.Comments(7)
	if len(comments) != 1 || !strings.Contains(comments[0], "### shop: apply failed, rolled back automatically") || !strings.Contains(comments[0], "rolled back c0010, c0000") ||
		!strings.Contains(comments[0], "| production/canary | failed | 9 | 1 | 0 |") {
		t.Fatalf("the comment: %q", comments)
	}
	// The next release (a new process: nothing remembered) edits the same
	// comment.
	sink, _ = NewGitHub("acme/shop", "abc123", 7, "ghs_test", api.URL, http.DefaultClient)
	play("r2")
	if comments := api.Comments(7); len(comments) != 1 || !strings.Contains(comments[0], "release r2") {
		t.Errorf("after a second release: %d comments, the first %q", len(comments), comments[0])
	}
}

// A refused token is not retried, and never printed.
func TestGitHubRefused(t *testing.T) {
	api := githubtest.New("acme/shop", "ghs_right")
	defer api.Close()
	sink, _ := NewGitHub("acme/shop", "abc", 0, "ghs_wrong", api.URL, http.DefaultClient)
	err := sink.Send(context.Background(), Event{Type: WaveStarted, Fleet: "f", Wave: "w", Group: "g", Clusters: []string{"a"}, Release: Release{ID: "r"}})
	if !errors.As(err, new(permanent)) || !strings.Contains(err.Error(), "github refused: POST /api/v3/repos/acme/shop/statuses/abc: 401 Bad credentials") || strings.Contains(err.Error(), "ghs_") {
		t.Errorf("a wrong token: %v", err)
	}
	if _, err := NewGitHub("acme", "abc", 0, "t", "", nil); err == nil {
		t.Error("a repository without its owner was taken")
	}
}

// A wave's last finished one of its group closes the group's deployment.
func TestLastOfGroup(t *testing.T) {
	ev := Event{Wave: "production/canary", Group: "production", Waves: []WaveState{{Name: "staging", Group: "staging"}, {Name: "production/canary", Group: "production"}, {Name: "production/rest", Group: "production"}}}
	if lastOfGroup(ev) {
		t.Error("the canary is not production's last wave")
	}
	ev.Wave = "production/rest"
	if !lastOfGroup(ev) {
		t.Error("rest is production's last wave")
	}
}
