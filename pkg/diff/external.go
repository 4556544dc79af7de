package diff

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectldiff "k8s.io/kubectl/pkg/cmd/diff"
	"k8s.io/utils/exec"
)

// External gathers what an external diff program ($KUBECTL_EXTERNAL_DIFF)
// is shown, as kubectl diff gives it: two temporary folders, LIVE and
// MERGED, each with a folder per cluster and a file per object.
type External struct {
	live, merged *kubectldiff.Directory

	// err is the first error Gather met; mu guards it.
	mu  sync.Mutex
	err error
}

// ExternalFromEnv is the folders of the external diff program when
// $KUBECTL_EXTERNAL_DIFF names one and the diffs are printed as text
// (jsonOut false); nil, which gathers and runs nothing, otherwise.
func ExternalFromEnv(jsonOut bool) (*External, error) {
	if os.Getenv("KUBECTL_EXTERNAL_DIFF") == "" || jsonOut {
		return nil, nil
	}
	return NewExternal()
}

// NewExternal creates the two folders; Remove deletes them.
func NewExternal() (*External, error) {
	live, err := kubectldiff.CreateDirectory("LIVE")
	if err != nil {
		return nil, err
	}
	merged, err := kubectldiff.CreateDirectory("MERGED")
	if err != nil {
		_ = live.Delete()
		return nil, err
	}
	return &External{live: live, merged: merged}, nil
}

// Add writes an object's live and merged forms, as YAML, into the
// cluster's folders.
func (e *External) Add(cluster string, d Object) error {
	name := filepath.Join(cluster, strings.ReplaceAll(d.Path, "/", "_")+".yaml")
	live, merged, err := d.yaml()
	if err != nil {
		return err
	}
	for dir, text := range map[string]string{e.live.Name: live, e.merged.Name: merged} {
		if err := os.MkdirAll(filepath.Join(dir, cluster), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// AddAll adds a cluster's diffs, but those that failed; a nil External
// adds nothing.
func (e *External) AddAll(cluster string, diffs []Object) error {
	if e == nil {
		return nil
	}
	for _, d := range diffs {
		if d.Err == nil {
			if err := e.Add(cluster, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// Gather adds a cluster's diffs (AddAll), as the clusters are diffed,
// and keeps the first error for Err. It is safe for concurrent use; a
// nil External gathers nothing.
func (e *External) Gather(cluster string, diffs []Object) {
	if err := e.AddAll(cluster, diffs); err != nil {
		e.mu.Lock()
		if e.err == nil {
			e.err = err
		}
		e.mu.Unlock()
	}
}

// Err is the first error Gather met, or nil.
func (e *External) Err() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Run runs $KUBECTL_EXTERNAL_DIFF on LIVE and MERGED with streams, as
// kubectl diff runs it. Its exit status 1, "differences", is no error.
// A nil External runs nothing.
func (e *External) Run(streams genericiooptions.IOStreams) error {
	if e == nil {
		return nil
	}
	prog := &kubectldiff.DiffProgram{Exec: exec.New(), IOStreams: streams}
	err := prog.Run(e.live.Name, e.merged.Name)
	if err != nil {
		if ee, ok := err.(exec.ExitError); ok && ee.ExitStatus() == 1 {
			return nil // differences, as expected
		}
	}
	return err
}

// Remove deletes the folders; a nil External has none.
func (e *External) Remove() {
	if e == nil {
		return
	}
	_ = e.live.Delete()
	_ = e.merged.Delete()
}
