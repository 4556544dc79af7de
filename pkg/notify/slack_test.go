package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/slacktest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// bigRelease plays a release of 1,000 clusters in 3 waves through rec:
// staging's 10 succeed, the canary's 10 have failed failures, the rest
// (980) is held for an approval.
func bigRelease(rec *Recorder, failed int) {
	rec.Started()
	outcomes := func(names []string, failed int) []runner.Outcome {
		var out []runner.Outcome
		for i, n := range names {
			st := runner.Succeeded
			if i < failed {
				st = runner.Failed
			}
			out = append(out, runner.Outcome{Cluster: n, State: st})
		}
		return out
	}
	var all []runner.Outcome
	for _, w := range bigWaves()[:2] {
		rec.Observe(rollout.WaveEvent{Wave: w.Name, State: rollout.WaveStarted})
		f := 0
		if w.Name == "production/canary" {
			f = failed
		}
		oc := outcomes(w.Clusters, f)
		for _, o := range oc {
			var err error
			if o.State == runner.Failed {
				err = errors.New("check smoke failed: exit status 1")
			}
			rec.Observe(rollout.EndEvent{Cluster: o.Cluster, Err: err})
		}
		rec.Observe(rollout.WaveEvent{Wave: w.Name, State: rollout.WaveFinished, Outcomes: oc})
		all = append(all, oc...)
	}
	rest := bigWaves()[2]
	var reasons []string
	for _, c := range rest.Clusters {
		reasons = append(reasons, c+": web is not approved")
	}
	rec.Observe(rollout.WaveEvent{Wave: rest.Name, State: "awaiting approval", Brake: "approval", Reasons: reasons})
	for _, c := range rest.Clusters {
		all = append(all, runner.Outcome{Cluster: c, State: runner.NotStarted, Err: errors.New("awaits approval")})
	}
	rec.Finished(all, nil)
}

func bigWaves() []runner.Wave {
	ws := []runner.Wave{{Name: "staging", Group: "staging"}, {Name: "production/canary", Group: "production"}, {Name: "production/rest", Group: "production"}}
	for i := range 1000 {
		w := 2
		switch {
		case i < 10:
			w = 0
		case i < 20:
			w = 1
		}
		ws[w].Clusters = append(ws[w].Clusters, fmt.Sprintf("c%04d", i))
	}
	return ws
}

// A 1,000-cluster release is one Slack message, edited at most once a
// wave; its failures are replies in its thread, at most maxReplies; the
// hold and the approval it needs are replies too.
func TestSlackOneMessagePerRelease(t *testing.T) {
	api := slacktest.New("xoxb-test")
	defer api.Close()
	n := New([]Target{{Name: "slack", Sink: NewSlack("#deploys", "xoxb-test", api.URL, http.DefaultClient)}}, func(w string) { t.Error(w) })
	rec := NewRecorder("shop", Release{ID: "r1", Verb: "apply", Commit: "9c1e5d7aa"}, bigWaves(), n.Notify)
	bigRelease(rec, 10)
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var posts, updates, replies []slacktest.Call
	for _, c := range api.Calls() {
		switch {
		case c.Method == "chat.update":
			updates = append(updates, c)
		case c.ThreadTS != "":
			replies = append(replies, c)
		default:
			posts = append(posts, c)
		}
	}
	if len(posts) != 1 || posts[0].Channel != "#deploys" {
		t.Fatalf("%d messages, want 1 in #deploys: %+v", len(posts), posts)
	}
	ts := "1764400000.000001"
	if len(updates) > 3 {
		t.Errorf("%d edits of a release of 3 waves, want at most 3", len(updates))
	}
	for _, u := range updates {
		if u.TS != ts || u.Channel != "C0FLEET" {
			t.Errorf("an edit of %s in %s, want the release's message %s in C0FLEET", u.TS, u.Channel, ts)
		}
	}
	last := updates[len(updates)-1]
	for _, want := range []string{"shop: apply 9c1e5d7 failed", "production/canary  failed    0          10", "failed", "production/rest", "approve this release with kubectl fleet approve -g production", "and 975 more"} {
		if !strings.Contains(last.Text+last.Blocks, want) {
			t.Errorf("the last edit does not say %q:\n%s\n%s", want, last.Text, last.Blocks)
		}
	}
	// The 10 failures replied (maxReplies), the hold and the approval.
	if len(replies) != maxReplies+2 {
		t.Errorf("%d replies, want %d", len(replies), maxReplies+2)
	}
	for _, r := range replies {
		if r.ThreadTS != ts {
			t.Errorf("a reply in thread %s, want %s", r.ThreadTS, ts)
		}
	}
}

// A refused token is not retried; a server error is.
func TestSlackFaults(t *testing.T) {
	api := slacktest.New("xoxb-right")
	defer api.Close()
	ev := Event{Type: ReleaseFinished, Fleet: "f", Release: Release{ID: "r", Verb: "apply"}, Outcome: "succeeded"}
	err := NewSlack("#d", "xoxb-wrong", api.URL, http.DefaultClient).Send(context.Background(), ev)
	if !errors.As(err, new(permanent)) || err.Error() != "slack refused: invalid_auth" || strings.Contains(err.Error(), "xoxb") {
		t.Errorf("a wrong token: %v", err)
	}
	failures := 1
	api.Fail = func(slacktest.Call) int {
		if failures > 0 {
			failures--
			return http.StatusServiceUnavailable
		}
		return 0
	}
	n := New([]Target{{Name: "slack", Sink: NewSlack("#d", "xoxb-right", api.URL, http.DefaultClient), Retries: 2, Backoff: time.Millisecond}}, func(w string) { t.Error(w) })
	n.Notify(ev)
	if err := n.Close(context.Background()); err != nil || len(api.Calls()) != 1 {
		t.Errorf("a 503 then an answer: %v, %d calls answered", err, len(api.Calls()))
	}
}
