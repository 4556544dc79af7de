package diff

import (
	"os"
	"path/filepath"
	"strings"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectldiff "k8s.io/kubectl/pkg/cmd/diff"
	"k8s.io/utils/exec"
)

// External gathers what an external diff program ($KUBECTL_EXTERNAL_DIFF)
// is shown, as kubectl diff gives it: two temporary folders, LIVE and
// MERGED, each with a folder per cluster and a file per object.
type External struct {
	live, merged *kubectldiff.Directory
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

// Run runs $KUBECTL_EXTERNAL_DIFF on LIVE and MERGED with streams, as
// kubectl diff runs it. Its exit status 1, "differences", is no error.
func (e *External) Run(streams genericiooptions.IOStreams) error {
	prog := &kubectldiff.DiffProgram{Exec: exec.New(), IOStreams: streams}
	err := prog.Run(e.live.Name, e.merged.Name)
	if err != nil {
		if ee, ok := err.(exec.ExitError); ok && ee.ExitStatus() == 1 {
			return nil // differences, as expected
		}
	}
	return err
}

// Remove deletes the folders.
func (e *External) Remove() {
	_ = e.live.Delete()
	_ = e.merged.Delete()
}
