package publish_test

import (
	"context"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Strings read from a registry's records reach a terminal without an
// escape sequence, a carriage return or a bidirectional override: each
// is U+FFFD; newlines, tabs and other text stay.
func TestRecordStringsSanitized(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, ünïcode, 日本", "plain text, ünïcode, 日本"},
		{"line\nnext\ttab", "line\nnext\ttab"},
		{"\x1b[2J\x1b[Hcleared", "\ufffd[2J\ufffd[Hcleared"},
		{"ok\rforged", "ok\ufffdforged"},
		{"\u009b31mC1", "\ufffd31mC1"},
		{"abc\u202edcba", "abc\ufffddcba"},
		{"\u2066isolated\u2069", "\ufffdisolated\ufffd"},
	} {
		if got := publish.Clean(tc.in); got != tc.want {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	_, reg := registrytest.Delivery(t)
	ctx := context.Background()
	h := publish.History{Current: 1, Revisions: []revision.Revision{{App: "web", Number: 1, User: "\x1b]8;;http://evil\x07alice", Description: "apply\r\x1b[1Arollback to 9"}}}
	if err := reg.SaveHistory(ctx, "web", "edge-1", h); err != nil {
		t.Fatal(err)
	}
	got, err := reg.History(ctx, "web", "edge-1")
	if err != nil {
		t.Fatal(err)
	}
	if r := got.Revisions[0]; r.User != "\ufffd]8;;http://evil\ufffdalice" || r.Description != "apply\ufffd\ufffd[1Arollback to 9" {
		t.Errorf("read back: user %q, description %q", r.User, r.Description)
	}
}
