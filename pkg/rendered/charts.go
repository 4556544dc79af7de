package rendered

import (
	"context"
	"fmt"
	"io"
	"slices"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/ocisource"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// PinCharts pins the remote charts of f's apps (only those of apps, when
// given) in fleet.lock, as "kubectl fleet deps update" does: each is
// resolved and downloaded, its exact version and archive digest
// recorded. A local chart's missing dependencies are fetched into its
// charts/ folder instead. What it did is said on out.
//
// The oci:// sources of the apps are pinned too: each tag resolved to
// its artifact's digest, fetched and verified (into the cache), as a
// render would.
func PinCharts(ctx context.Context, f *fleet.Fleet, engine *render.Engine, fetcher *ocisource.Fetcher, apps []string, out io.Writer) error {
	lock, err := fleet.LoadLock(f.Path)
	if err != nil {
		return err
	}
	pinned := 0
	for i := range f.Apps {
		a := &f.Apps[i]
		if len(apps) > 0 && !slices.Contains(apps, a.Name) {
			continue
		}
		if a.OCI() != "" {
			locked, err := pinSource(ctx, f, a, fetcher, out)
			if err != nil {
				return err
			}
			lock.SetSource(locked)
			pinned++
			continue
		}
		if a.Helm == nil {
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
		fmt.Fprintln(out, "no app has a chart from a repository or registry, or an oci:// source: nothing to pin")
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

// pinSource resolves an app's oci:// source's tag now (not the digest
// fleet.lock has: moving it on purpose is the point), fetches and
// verifies it, and says what to lock of it, on out too.
func pinSource(ctx context.Context, f *fleet.Fleet, a *fleet.App, fetcher *ocisource.Fetcher, out io.Writer) (fleet.LockedSource, error) {
	spec, err := ociOf(f, a, func() (*fleet.Lock, error) { return &fleet.Lock{}, nil }) // not the lock's digest: the tag's now
	if err != nil {
		return fleet.LockedSource{}, err
	}
	got, err := fetcher.Fetch(ctx, *spec)
	if err != nil {
		return fleet.LockedSource{}, fmt.Errorf("app %s: %w", a.Name, err)
	}
	signed := ""
	if got.SignedBy != "" {
		signed = ", signed by " + got.SignedBy
	}
	fmt.Fprintf(out, "%s: %s %s (%s%s)\n", a.Name, spec.Ref, got.Digest, got.Format, signed)
	return fleet.LockedSource{App: a.Name, Ref: spec.Ref, Digest: got.Digest}, nil
}
