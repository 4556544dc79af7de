package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/schema"
)

// NewCmdSchema returns the schema command.
func NewCmdSchema(g *GlobalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the fleet file's JSON Schema, for editors",
		Long: `Print the JSON Schema of the fleet file, generated from the plugin's own
types: editors (the YAML language server of VS Code, Neovim, JetBrains)
complete its fields and flag typos with it. kubectl fleet init points its
fleet file at the published copy; without network access, keep a copy
beside the fleet file:

  kubectl fleet schema > fleet.schema.json

and start the fleet file with
  # yaml-language-server: $schema=./fleet.schema.json`,
		Example: `  kubectl fleet schema > fleet.schema.json
  kubectl fleet init --schema ./fleet.schema.json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := g.Out.Write(schema.JSON)
			return err
		},
	}
}
