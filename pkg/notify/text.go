package notify

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The text every chat sink says of a release: its headline, a list cut
// to a line, a rollback, a message cut to a size.

// Headline is a release's state in a line: "shop: apply 9c1e5d7 —
// production/canary held (approval)".
func Headline(ev Event) string {
	what := ev.Fleet + ": " + ev.Release.Verb
	if c := ev.Release.Commit; c != "" {
		what += " " + c[:min(len(c), 7)]
	}
	switch {
	case ev.Rollback != nil && ev.Rollback.Outcome == "succeeded":
		return what + " failed, rolled back automatically"
	case ev.Rollback != nil && ev.Rollback.Outcome == "failed":
		return what + " failed; the automatic rollback did not finish"
	case ev.Rollback != nil:
		return what + " failed, rolling back automatically"
	case ev.Type == Test:
		return ev.Fleet + ": a test of this sink (kubectl fleet vet --notify-test)"
	case ev.Outcome != "":
		return what + " " + ev.Outcome
	case ev.Held != nil:
		return fmt.Sprintf("%s — %s held (%s)", what, ev.Wave, ev.Held.Brake)
	case ev.Wave != "":
		return what + " — " + ev.Wave + " running"
	}
	return what + " started"
}

// some are the first reasons, joined, and how many more there are: a
// wave of 1,000 clusters held for an approval is one line.
func some(reasons []string) string { return someOf(reasons, "; ") }

// someOf is the first 5 of list joined by sep, and how many more.
func someOf(list []string, sep string) string {
	const shown = 5
	if len(list) <= shown {
		return strings.Join(list, sep)
	}
	return fmt.Sprintf("%s%sand %d more", strings.Join(list[:shown], sep), sep, len(list)-shown)
}

// rollbackLine says a rollback: "rolling back automatically
// (onFailure: rollback) c1, c2: why", "rolled back c1, c2", "the automatic
// rollback of c1, c2 did not finish".
func rollbackLine(rb *RollbackInfo) string {
	clusters := someOf(rb.Clusters, ", ")
	switch rb.Outcome {
	case "succeeded":
		return "rolled back " + clusters
	case "failed":
		return "the automatic rollback of " + clusters + " did not finish"
	}
	return fmt.Sprintf("rolling back automatically (onFailure: rollback) %s: %s", clusters, rb.Why)
}

// maxMessage bounds a failure's message in an event: a chat line, not a
// log (the terminal and the report have it whole).
const maxMessage = 2000

// clip is msg cut to maxMessage bytes, marked when cut.
func clip(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	return clipTo(msg, maxMessage) + " …"
}

// clipTo is s cut to n bytes at a rune's start.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
