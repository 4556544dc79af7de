package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// Teams posts an Adaptive Card to a Microsoft Teams channel through a
// Workflows webhook ("Post to a channel when a webhook request is
// received"; Office 365 connectors are retired). A Workflows message
// cannot be edited, so a release posts a card only where someone must
// look: a wave held (and why, with the command that lets it go), a
// cluster failed (the first maxReplies of a release), a rollback, and
// the release's end with its table of waves.
type Teams struct {
	// URL is the workflow's (a credential: its query signs it).
	URL    string
	Client *http.Client

	mu sync.Mutex
	// failed are the failures of each release given a card, by seq.
	failed map[string]map[int]bool
}

// Send posts ev's card, if ev is one Teams is told of.
func (t *Teams) Send(ctx context.Context, ev Event) error {
	var lines []string
	switch ev.Type {
	case WaveHeld:
		lines = append(lines, fmt.Sprintf("**%s** held (%s): %s", ev.Wave, ev.Held.Brake, some(ev.Held.Reasons)))
		if ev.Held.Command != "" {
			lines = append(lines, ev.Held.Command)
		}
	case ClusterFailed:
		if !t.count(ev.Release.ID, ev.Seq) {
			return nil
		}
		lines = append(lines, fmt.Sprintf("**%s** failed at %s: %s", ev.Failure.Cluster, ev.Failure.Gate, ev.Failure.Message))
	case Rollback:
		lines = append(lines, rollbackLine(ev.Rollback))
	case ReleaseFinished, Test:
	default:
		return nil
	}
	body, err := json.Marshal(teamsMessage(ev, lines))
	if err != nil {
		return Permanent(err)
	}
	return post(ctx, t.Client, t.URL, http.Header{"Content-Type": {"application/json"}}, body)
}

// count counts a failure of release (its event seq) and reports whether
// it gets a card: the first maxReplies, a retry of one of them too.
func (t *Teams) count(release string, seq int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed == nil {
		t.failed = map[string]map[int]bool{}
	}
	seen := t.failed[release]
	if seen == nil {
		seen = map[int]bool{}
		t.failed[release] = seen
	}
	if !seen[seq] && len(seen) >= maxReplies {
		return false
	}
	seen[seq] = true
	return true
}

// teamsMessage is the Workflows message of ev: an Adaptive Card (1.4)
// with the headline, lines, the table of waves as facts, and the
// release's id.
func teamsMessage(ev Event, lines []string) map[string]any {
	text := func(s string, more map[string]any) map[string]any {
		b := map[string]any{"type": "TextBlock", "text": s, "wrap": true}
		for k, v := range more {
			b[k] = v
		}
		return b
	}
	body := []any{text(Headline(ev), map[string]any{"weight": "Bolder", "size": "Medium"})}
	for _, l := range lines {
		body = append(body, text(l, nil))
	}
	var facts []any
	for _, w := range ev.Waves {
		facts = append(facts, map[string]any{"title": w.Name, "value": fmt.Sprintf("%s: %d succeeded, %d failed, %d not started", w.State, w.Counts.Succeeded, w.Counts.Failed, w.Counts.NotStarted)})
	}
	if len(facts) > 0 {
		body = append(body, map[string]any{"type": "FactSet", "facts": facts})
	}
	body = append(body, text("release "+ev.Release.ID, map[string]any{"isSubtle": true, "size": "Small"}))
	return map[string]any{
		"type": "message",
		"attachments": []any{map[string]any{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard",
				"version": "1.4",
				"body":    body,
			},
		}},
	}
}
