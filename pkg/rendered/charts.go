package rendered

import (
	"fmt"
	"io"
	"slices"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// PinCharts pins the remote charts of f's apps (only those of apps, when
// given) in fleet.lock, as "kubectl fleet deps update" does: each is
// resolved and downloaded, its exact version and archive digest
// recorded. A local chart's missing dependencies are fetched into its
// charts/ folder instead. What it did is said on out.
func PinCharts(f *fleet.Fleet, engine *render.Engine, apps []string, out io.Writer) error {
	lock, err := fleet.LoadLock(f.Path)
	if err != nil {
		return err
	}
	pinned := 0
	for i := range f.Apps {
		a := &f.Apps[i]
		if a.Helm == nil || len(apps) > 0 && !slices.Contains(apps, a.Name) {
			continue
		}
		h := ChartOf(f, a)
		if !h.Remote() {
			fetched, err := engine.BuildDependencies(h)
			if err != nil {
				return fmt.Errorf("app %s: %w", a.Name, err)
			}
			if fetched {
				fmt.Fprintf(out, "%s: fetched the dependencies of %s into its charts/\n", a.Name, a.Helm.Chart)
			}
			continue
		}
		locked, err := pin(engine, a, h, out)
		if err != nil {
			return err
		}
		lock.Set(locked)
		pinned++
	}
	if pinned == 0 {
		fmt.Fprintln(out, "no app has a chart from a repository or registry: nothing to pin")
		return nil
	}
	if err := lock.Write(f.Path); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s\n", fleet.LockPath(f.Path))
	return nil
}

// pin downloads an app's remote chart h and says what to lock of it, on
// out too.
func pin(engine *render.Engine, a *fleet.App, h *render.Helm, out io.Writer) (fleet.LockedChart, error) {
	path, err := engine.Download(h)
	if err != nil {
		return fleet.LockedChart{}, fmt.Errorf("app %s: chart %s %s: %w", a.Name, h.Chart, h.Version, err)
	}
	ch, err := loader.Load(path)
	if err != nil {
		return fleet.LockedChart{}, fmt.Errorf("app %s: chart %s: %w", a.Name, h.Chart, err)
	}
	digest, err := render.FileDigest(path)
	if err != nil {
		return fleet.LockedChart{}, err
	}
	fmt.Fprintf(out, "%s: %s %s %s\n", a.Name, ch.Metadata.Name, ch.Metadata.Version, digest)
	return fleet.LockedChart{App: a.Name, Chart: a.Helm.Chart, Repo: a.Helm.Repo, Version: a.Helm.Version, Resolved: ch.Metadata.Version, Digest: digest}, nil
}
