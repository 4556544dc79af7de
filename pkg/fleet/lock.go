package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// LockFile is the name of the lock file beside a fleet file.
const LockFile = "fleet.lock"

// Lock pins each app's Helm chart from a repository or registry to an
// exact version and the digest of its archive (kubectl fleet deps update
// writes it; every render reads it).
type Lock struct {
	APIVersion string        `yaml:"apiVersion"`
	Kind       string        `yaml:"kind"`
	Charts     []LockedChart `yaml:"charts"`
	// Sources pin each app's oci:// source to the digest its tag had.
	Sources []LockedSource `yaml:"sources,omitempty"`
}

// LockedSource is one app's pinned oci:// source.
type LockedSource struct {
	App string `yaml:"app"`
	// Ref is the reference the fleet file gives, Digest "sha256:<hex>"
	// of the artifact's manifest it resolved to.
	Ref    string `yaml:"ref"`
	Digest string `yaml:"digest"`
}

// SourceOf is the app's locked source, if any.
func (l *Lock) SourceOf(app string) *LockedSource {
	for i := range l.Sources {
		if l.Sources[i].App == app {
			return &l.Sources[i]
		}
	}
	return nil
}

// SetSource records an app's locked source, replacing the one it had.
func (l *Lock) SetSource(s LockedSource) {
	if old := l.SourceOf(s.App); old != nil {
		*old = s
		return
	}
	l.Sources = append(l.Sources, s)
	slices.SortFunc(l.Sources, func(a, b LockedSource) int { return strings.Compare(a.App, b.App) })
}

// LockedChart is one app's pinned chart.
type LockedChart struct {
	App   string `yaml:"app"`
	Chart string `yaml:"chart"`
	Repo  string `yaml:"repo,omitempty"`
	// Version is the version the fleet file asks for (perhaps a range),
	// Resolved the one it resolved to.
	Version  string `yaml:"version"`
	Resolved string `yaml:"resolved"`
	// Digest is "sha256:<hex>" of the chart's archive.
	Digest string `yaml:"digest"`
}

// LockPath is the lock file of the fleet file at path.
func LockPath(fleetPath string) string { return filepath.Join(filepath.Dir(fleetPath), LockFile) }

// LoadLock reads the lock file beside a fleet file; none is an empty lock.
func LoadLock(fleetPath string) (*Lock, error) {
	path := LockPath(fleetPath)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Lock{APIVersion: APIVersion, Kind: "Lock"}, nil
	}
	if err != nil {
		return nil, err
	}
	var l Lock
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if l.Kind != "Lock" {
		return nil, fmt.Errorf("%s: kind %q, want Lock (written by kubectl fleet deps update)", path, l.Kind)
	}
	for i, c := range l.Charts {
		if c.App == "" || c.Resolved == "" || !strings.HasPrefix(c.Digest, "sha256:") {
			return nil, fmt.Errorf("%s: charts[%d]: app, resolved and a sha256: digest are required", path, i)
		}
	}
	for i, s := range l.Sources {
		if s.App == "" || !strings.HasPrefix(s.Ref, OCIScheme) || !strings.HasPrefix(s.Digest, "sha256:") || len(s.Digest) != len("sha256:")+64 {
			return nil, fmt.Errorf("%s: sources[%d]: app, an oci:// ref and a sha256: digest are required", path, i)
		}
	}
	return &l, nil
}

// Of is the app's locked chart, if any.
func (l *Lock) Of(app string) *LockedChart {
	for i := range l.Charts {
		if l.Charts[i].App == app {
			return &l.Charts[i]
		}
	}
	return nil
}

// Set records an app's locked chart, replacing the one it had.
func (l *Lock) Set(c LockedChart) {
	if old := l.Of(c.App); old != nil {
		*old = c
		return
	}
	l.Charts = append(l.Charts, c)
	slices.SortFunc(l.Charts, func(a, b LockedChart) int { return strings.Compare(a.App, b.App) })
}

// Write stores the lock beside the fleet file at fleetPath.
func (l *Lock) Write(fleetPath string) error {
	var b bytes.Buffer
	b.WriteString("# Written by kubectl fleet deps update: the exact version and digest of\n# each app's Helm chart, and the digest of each oci:// source. Commit it; a\n# chart whose digest changes is refused, a source's tag is not followed.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(l); err != nil {
		return err
	}
	return os.WriteFile(LockPath(fleetPath), b.Bytes(), 0o644)
}

// Matches reports whether the locked chart is the one h asks for.
func (c *LockedChart) Matches(h *Helm) bool {
	return c.Chart == h.Chart && c.Repo == h.Repo && c.Version == h.Version
}
