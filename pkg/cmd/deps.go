package cmd

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
)

// NewCmdDeps returns the deps command: the fleet's Helm charts and their
// lock file.
func NewCmdDeps(g *GlobalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deps",
		Short: "Pin the fleet's Helm charts: fleet.lock",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCmdDepsUpdate(g))
	return cmd
}

func newCmdDepsUpdate(g *GlobalOptions) *cobra.Command {
	var apps []string
	cmd := &cobra.Command{
		Use:   "update",
		Short: "Resolve each app's chart from a repository or registry and pin it in fleet.lock",
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
helm dependency build does.`,
		Example: `  kubectl fleet deps update
  kubectl fleet deps update --app ingress`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.depsUpdate(cmd, apps)
		},
	}
	cmd.Flags().StringSliceVar(&apps, "app", nil, "only these apps (repeatable; default every app with a remote chart)")
	return cmd
}

// depsUpdate pins the selected apps' remote charts in fleet.lock.
func (g *GlobalOptions) depsUpdate(cmd *cobra.Command, apps []string) error {
	f, err := g.loadFleet()
	if err != nil {
		return err
	}
	lock, err := fleet.LoadLock(f.Path)
	if err != nil {
		return err
	}
	engine := g.engine()
	pinned := 0
	for i := range f.Apps {
		a := &f.Apps[i]
		if a.Helm == nil || len(apps) > 0 && !slices.Contains(apps, a.Name) {
			continue
		}
		h := rendered.ChartOf(f, a)
		if !h.Remote() {
			fetched, err := engine.BuildDependencies(h)
			if err != nil {
				return fmt.Errorf("app %s: %w", a.Name, err)
			}
			if fetched {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: fetched the dependencies of %s into its charts/\n", a.Name, a.Helm.Chart)
			}
			continue
		}
		path, err := engine.Download(h)
		if err != nil {
			return fmt.Errorf("app %s: chart %s %s: %w", a.Name, h.Chart, h.Version, err)
		}
		ch, err := loader.Load(path)
		if err != nil {
			return fmt.Errorf("app %s: chart %s: %w", a.Name, h.Chart, err)
		}
		digest, err := render.FileDigest(path)
		if err != nil {
			return err
		}
		lock.Set(fleet.LockedChart{App: a.Name, Chart: a.Helm.Chart, Repo: a.Helm.Repo, Version: a.Helm.Version, Resolved: ch.Metadata.Version, Digest: digest})
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %s %s\n", a.Name, ch.Metadata.Name, ch.Metadata.Version, digest)
		pinned++
	}
	if pinned == 0 {
		fmt.Fprintln(cmd.OutOrStdout(), "no app has a chart from a repository or registry: nothing to pin")
		return nil
	}
	if err := lock.Write(f.Path); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", fleet.LockPath(f.Path))
	return nil
}
