package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
)

// NewCmdDeps returns the deps command: the fleet's Helm charts and their
// lock file.
func NewCmdDeps(g *GlobalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deps",
		Short: "Pin the fleet's Helm charts and oci:// sources: fleet.lock",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCmdDepsUpdate(g))
	return cmd
}

func newCmdDepsUpdate(g *GlobalOptions) *cobra.Command {
	var apps []string
	cmd := &cobra.Command{
		Use:   "update",
		Short: "Pin each app's chart from a repository or registry, and each oci:// source, in fleet.lock",
		Long: `For every app of the fleet file whose Helm chart comes from a chart
repository or an OCI registry, update resolves the version the fleet file
asks for (a version range resolves to the newest match), downloads the
chart as the helm CLI would (with its credentials) and writes its exact
version and the sha256 digest of its archive to fleet.lock beside the
fleet file. Commit fleet.lock.

Every render then uses the pinned version, and refuses a chart whose
archive no longer has the pinned digest (a version re-published with other
content), rather than deploy it. A pinned chart found in the chart cache
(KUBECTL_FLEET_CHART_CACHE, else kubectl-fleet/charts in the user's cache
folder) needs no network. Local charts (folders, .tgz) are not pinned:
they are in your repository; a local chart folder whose Chart.yaml names
dependencies that its charts/ folder lacks gets them fetched there, as
helm dependency build does.

An app whose source is an oci:// artifact (kustomize, manifests or
jsonnet) is pinned too: its tag resolved to the artifact's digest, the
artifact fetched and, with verify, its signature checked. Every render then
reads that digest, whatever the tag says since; update again to move it.`,
		Example: `  kubectl fleet deps update
  kubectl fleet deps update --app ingress`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := g.loadFleet()
			if err != nil {
				return err
			}
			return rendered.PinCharts(cmd.Context(), f, g.engine(), g.fetcher(), apps, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringSliceVar(&apps, "app", nil, "only these apps (repeatable; default every app with a remote chart or an oci:// source)")
	return cmd
}
