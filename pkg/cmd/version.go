package cmd

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/version"
)

// VersionInfo is what "kubectl fleet version -o json" prints.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// NewCmdVersion returns the version command.
func NewCmdVersion(g *GlobalOptions) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the plugin's version",
		Example: "  kubectl fleet version\n  kubectl fleet version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := VersionInfo{Version: version.Get(), Commit: version.Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			switch out {
			case "json":
				return json.NewEncoder(g.Out).Encode(info)
			case "":
				_, err := fmt.Fprintf(g.Out, "kubectl-fleet %s (%s, %s)\n", info.Version, info.GoVersion, info.Platform)
				return err
			}
			return fmt.Errorf("--output %q: want json or nothing", out)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "output format: json")
	return cmd
}
