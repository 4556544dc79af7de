package rendered

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/ocisource"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// ociOf is an app's oci:// source to fetch: its verify key read, and
// pinned to the digest fleet.lock (lock) has for it, if any.
func ociOf(f *fleet.Fleet, a *fleet.App, lock func() (*fleet.Lock, error)) (*ocisource.Spec, error) {
	s := &ocisource.Spec{Ref: a.OCI(), Insecure: a.Insecure}
	if a.Verify != nil {
		key, err := os.ReadFile(f.ResolvePath(a.Verify.Key))
		if err != nil {
			return nil, fmt.Errorf("app %s: verify.key: %w", a.Name, err)
		}
		s.Key, s.KeyName = key, a.Verify.Key
	}
	l, err := lock()
	if err != nil {
		return nil, err
	}
	switch locked := l.SourceOf(a.Name); {
	case locked == nil:
	case locked.Ref != s.Ref:
		return nil, fmt.Errorf("app %s: %s pins %s, but the fleet file asks for %s: run kubectl fleet deps update", a.Name, fleet.LockFile, locked.Ref, s.Ref)
	default:
		s.Digest = locked.Digest
	}
	return s, nil
}

// Fetch fetches the oci:// sources of apps (each artifact once, however
// many apps and clusters read it) and points their sources at what was
// unpacked, each recording the artifact it came from. Nothing renders
// before every source is here: an artifact that cannot be pulled,
// verified or unpacked fails the run before any cluster is written to.
func Fetch(ctx context.Context, apps []App, f *ocisource.Fetcher) error {
	for i := range apps {
		a := &apps[i]
		if a.OCI == nil {
			continue
		}
		if f == nil {
			return fmt.Errorf("app %s: %s: this command does not read sources from registries", a.Name, a.OCI.Ref)
		}
		got, err := f.Fetch(ctx, *a.OCI)
		if err != nil {
			return fmt.Errorf("app %s: %w", a.Name, err)
		}
		p := filepath.Join(got.Dir, filepath.FromSlash(a.Path))
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("app %s: path %s is not in %s (it holds: %s)", a.Name, a.Path, got.Ref, holds(got.Dir))
		}
		a.Source.Path, a.Source.Artifact = p, got.Ref
		a.OCI, a.Fetched = nil, &got
		if a.Source.Type == render.Jsonnet {
			// The artifact's root is a library folder: its files import
			// one another across its folders. The app's jpath wins.
			a.Source.JPath = append([]string{got.Dir}, a.Source.JPath...)
		}
	}
	return nil
}

// holds names what dir holds at its top, for a message.
func holds(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return "nothing"
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 10 {
		names = append(names[:10], "…")
	}
	return strings.Join(names, ", ")
}
