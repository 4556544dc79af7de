package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/slack-go/slack"
)

// maxReplies bounds the replies a release's message gets in its thread:
// past them, the message's table still counts every failure.
const maxReplies = 10

// Slack keeps one message per release in a channel, edited as the
// release moves: posted when its first wave starts (or when it is held
// or ends before), edited when another wave starts, a wave is held and
// the release ends, so that a release of W waves edits it at most W
// times, however many clusters it has. Failures, holds and rollbacks are
// replies in the message's thread (at most maxReplies, then a count).
type Slack struct {
	// Channel is the channel's ID (C…) or name.
	Channel string
	client  *slack.Client

	mu sync.Mutex
	// ts are the releases' messages, by release ID, and replies how
	// many replies each has had.
	ts      map[string]string
	replies map[string]int
}

// NewSlack is a Slack sink posting to channel with a bot token (chat:write
// scope); apiURL, when set, replaces Slack's (https://slack.com/api/).
func NewSlack(channel, token, apiURL string, client *http.Client) *Slack {
	opts := []slack.Option{slack.OptionHTTPClient(client)}
	if apiURL != "" {
		opts = append(opts, slack.OptionAPIURL(strings.TrimSuffix(apiURL, "/")+"/"))
	}
	return &Slack{Channel: channel, client: slack.New(token, opts...), ts: map[string]string{}, replies: map[string]int{}}
}

// Send posts, edits or replies to the release's message as ev says.
func (s *Slack) Send(ctx context.Context, ev Event) error {
	var err error
	switch ev.Type {
	case WaveStarted, ReleaseFinished, Test:
		err = s.show(ctx, ev)
	case WaveHeld:
		if err = s.show(ctx, ev); err == nil {
			err = s.reply(ctx, ev, fmt.Sprintf(":double_vertical_bar: *%s* held (%s): %s", ev.Wave, ev.Held.Brake, some(ev.Held.Reasons)), true)
		}
	case ApprovalRequired:
		err = s.reply(ctx, ev, fmt.Sprintf(":lock: *%s* needs an approval: %s", ev.Wave, ev.Held.Command), true)
	case ClusterFailed:
		err = s.reply(ctx, ev, fmt.Sprintf(":x: *%s* failed at %s: %s", ev.Failure.Cluster, ev.Failure.Gate, ev.Failure.Message), false)
	case Rollback:
		err = s.reply(ctx, ev, ":rewind: "+rollbackLine(ev.Rollback), true)
	}
	return slackErr(err)
}

// show posts the release's message, or edits it, with ev's table.
func (s *Slack) show(ctx context.Context, ev Event) error {
	s.mu.Lock()
	ts := s.ts[ev.Release.ID]
	s.mu.Unlock()
	opts := []slack.MsgOption{slack.MsgOptionText(Headline(ev), false), slack.MsgOptionBlocks(blocks(ev)...)}
	if ts != "" {
		_, _, _, err := s.client.UpdateMessageContext(ctx, s.Channel, ts, opts...)
		return err
	}
	channel, ts, err := s.client.PostMessageContext(ctx, s.Channel, opts...)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ts[ev.Release.ID] = ts
	if channel != "" {
		s.Channel = channel // an edit names the channel by its ID
	}
	return nil
}

// reply answers the release's message in its thread (posting the message
// first when there is none yet); a reply past maxReplies is not sent but
// for those that must be (holds, rollbacks: always).
func (s *Slack) reply(ctx context.Context, ev Event, text string, always bool) error {
	s.mu.Lock()
	ts, n := s.ts[ev.Release.ID], s.replies[ev.Release.ID]
	s.mu.Unlock()
	if !always && n >= maxReplies {
		return nil
	}
	if ts == "" {
		if err := s.show(ctx, ev); err != nil {
			return err
		}
		s.mu.Lock()
		ts = s.ts[ev.Release.ID]
		s.mu.Unlock()
	}
	if !always && n == maxReplies-1 {
		text += fmt.Sprintf("\n_(more failures are counted in the message, not replied: %d replies at most)_", maxReplies)
	}
	if _, _, err := s.client.PostMessageContext(ctx, s.Channel, slack.MsgOptionText(text, false), slack.MsgOptionTS(ts)); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies[ev.Release.ID]++
	return nil
}

// slackErr is err, Permanent unless a retry may fix it (rate limited, a
// server error, no answer).
func slackErr(err error) error {
	if err == nil {
		return nil
	}
	var retryable interface{ Retryable() bool }
	if errors.As(err, &retryable) && retryable.Retryable() {
		return err
	}
	var refused slack.SlackErrorResponse
	if errors.As(err, &refused) {
		return Permanent(fmt.Errorf("slack refused: %s", refused.Err))
	}
	return redact(err)
}

// blocks are the message of a release: its headline, the table of its
// waves, and why a wave waits.
func blocks(ev Event) []slack.Block {
	var t strings.Builder
	w := tabwriter.NewWriter(&t, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "wave\tstate\tsucceeded\tfailed\tnot started\t")
	for _, wv := range ev.Waves {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t\n", wv.Name, wv.State, wv.Counts.Succeeded, wv.Counts.Failed, wv.Counts.NotStarted)
	}
	_ = w.Flush()
	out := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*"+Headline(ev)+"*", false, false), nil, nil),
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "```\n"+t.String()+"```", false, false), nil, nil),
	}
	for _, wv := range ev.Waves {
		if wv.Held != nil {
			text := fmt.Sprintf("*%s* waits (%s): %s", wv.Name, wv.Held.Brake, some(wv.Held.Reasons))
			if wv.Held.Command != "" {
				text += "\n" + wv.Held.Command
			}
			out = append(out, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil))
		}
	}
	out = append(out, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, "release "+ev.Release.ID, false, false)))
	return out
}
