package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestHelpTopics: each topic points at a guide that exists, takes no
// command's name, is listed by --help, and "help TOPIC" prints its
// summary and the guide's address.
func TestHelpTopics(t *testing.T) {
	root := NewCmdFleet(genericiooptions.NewTestIOStreamsDiscard())
	names := map[string]bool{}
	for _, c := range root.Commands() {
		if c.IsAdditionalHelpTopicCommand() {
			continue
		}
		names[c.Name()] = true
		for _, a := range c.Aliases {
			names[a] = true
		}
	}
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	if code := Execute(t.Context(), streams, []string{"--help"}); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	help := out.String()
	for _, topic := range HelpTopics {
		if names[topic.Name] {
			t.Errorf("topic %s takes the name of a command", topic.Name)
		}
		if _, err := os.Stat(filepath.Join("..", "..", "docs", topic.Page)); err != nil {
			t.Errorf("topic %s: %v", topic.Name, err)
		}
		if !strings.Contains(help, "kubectl fleet "+topic.Name+" ") {
			t.Errorf("--help does not list the topic %s:\n%s", topic.Name, help)
		}
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		if code := Execute(t.Context(), streams, []string{"help", topic.Name}); code != 0 {
			t.Fatalf("help %s: exit %d: %s", topic.Name, code, errOut)
		}
		want := DocsURL + topic.Page
		if got := out.String(); !strings.Contains(got, want) || !strings.HasPrefix(got, topic.Short+"\n") {
			t.Errorf("help %s prints:\n%s\nwant the short line first and %s", topic.Name, got, want)
		}
	}
}
