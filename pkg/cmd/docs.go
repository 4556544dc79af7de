package cmd

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// GenerateDocs writes one Markdown page per command (cobra's own
// generator, from the commands themselves, so that it never drifts from
// --help) into dir: kubectl-fleet.md, kubectl-fleet_apply.md, …
func GenerateDocs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	g := &GlobalOptions{IOStreams: genericiooptions.NewTestIOStreamsDiscard(), ConfigFlags: kube.NewConfigFlags()}
	root := newCmdFleet(g)
	disableAutoGenTag(root)
	prepend := func(string) string { return "<!-- Generated from the commands by `make docs`; do not edit. -->\n\n" }
	link := func(name string) string { return name }
	return doc.GenMarkdownTreeCustom(root, dir, prepend, link)
}

// GenerateManPages writes one man page (section 1) per command into dir,
// from the same commands: what the release archives carry.
func GenerateManPages(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	g := &GlobalOptions{IOStreams: genericiooptions.NewTestIOStreamsDiscard(), ConfigFlags: kube.NewConfigFlags()}
	root := newCmdFleet(g)
	disableAutoGenTag(root)
	return doc.GenManTree(root, &doc.GenManHeader{Title: "KUBECTL-FLEET", Section: "1", Source: "kubectl fleet", Manual: "kubectl fleet"}, dir)
}

func disableAutoGenTag(cmd *cobra.Command) {
	cmd.DisableAutoGenTag = true
	for _, c := range cmd.Commands() {
		disableAutoGenTag(c)
	}
}

// docFiles lists the generated pages of dir, by name.
func docFiles(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = string(b)
	}
	return out, nil
}
