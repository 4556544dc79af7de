package cmd

import (
	"os"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"
)

// TestK9sPlugins checks that every kubectl fleet command in plugins.yaml
// parses: the subcommand and flags exist.
func TestK9sPlugins(t *testing.T) {
	data, err := os.ReadFile("../../plugins.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Plugins map[string]struct {
			ShortCut    string   `json:"shortCut"`
			Description string   `json:"description"`
			Command     string   `json:"command"`
			Background  bool     `json:"background"`
			Confirm     bool     `json:"confirm"`
			Args        []string `json:"args"`
			Scopes      []string `json:"scopes"`
		} `json:"plugins"`
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Plugins) < 2 {
		t.Fatalf("%d plugins", len(file.Plugins))
	}
	for name, p := range file.Plugins {
		args := p.Args
		if p.Command == "sh" {
			// sh -c "kubectl fleet ... | less -R"
			line := strings.SplitN(args[len(args)-1], "|", 2)[0]
			args = strings.Fields(strings.ReplaceAll(line, `"`, ""))[1:]
		}
		if args[0] != "fleet" || p.ShortCut == "" || len(p.Scopes) == 0 {
			t.Errorf("%s: %+v", name, p)
			continue
		}
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "$CONTEXT", "ctx")
		}
		root := NewCmdFleet(genericiooptions.NewTestIOStreamsDiscard())
		cmd, rest, err := root.Find(args[1:])
		if err != nil || cmd == root {
			t.Errorf("%s: no command %v: %v", name, args[1:], err)
			continue
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
