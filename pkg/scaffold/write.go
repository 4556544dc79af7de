package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// Target is the fleet file init writes: the one -F names (fleet.Locate),
// as an absolute path. It is refused when it exists, unless force.
func Target(flag string, force bool) (string, error) {
	file := fleet.Locate(flag)
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	if _, err := os.Stat(file); err == nil && !force {
		return "", fmt.Errorf("%s exists: kubectl fleet init does not overwrite it without --force", file)
	}
	return file, nil
}

// Init is a fleet file to write from a kubeconfig's contexts, and how
// it is checked before it is written.
type Init struct {
	// File is the fleet file (Target).
	File string
	// Kubeconfig is the kubeconfig read; KubeconfigFlag its --kubeconfig,
	// "" for kubectl's own (KubeconfigField).
	Kubeconfig     *clientcmdapi.Config
	KubeconfigFlag string
	// Contexts are the contexts to take, names or globs (every one when
	// empty); Groups are --group NAME=GLOB[,GLOB…], in rollout order.
	Contexts, Groups []string
	// Name is the fleet's name ("" for the file's folder's); App the
	// example app's ("" for none); Schema the yaml-language-server line's.
	Name, App, Schema string
	// Check vets the fleet file written at tmp, saying what it finds on
	// out: nothing is written when it fails.
	Check func(tmp string, out io.Writer) error
}

// Write writes the fleet file, and the example app unless its folder
// exists, once Check passed on it; a failed check leaves nothing behind.
// It notes the contexts left out (one entry per API server) on errOut,
// and says what it wrote on out (Said).
func (in Init) Write(out, errOut io.Writer) error {
	contexts, err := Contexts(in.Kubeconfig.Contexts, in.Contexts)
	if err != nil {
		return err
	}
	contexts, left := OneEach(in.Kubeconfig, contexts)
	for _, l := range left {
		fmt.Fprintf(errOut, "note: context %s: left out, one entry per API server (sameClusterAs: in the fleet file says otherwise)\n", l)
	}
	groups, clusters, err := Place(contexts, in.Groups)
	if err != nil {
		return err
	}
	dir := filepath.Dir(in.File)
	name := in.Name
	if name == "" {
		name = DNSLabel(filepath.Base(dir))
	}
	var made []string // the example app's files, removed if a check fails
	if in.App != "" {
		if made, err = WriteApp(dir, in.App); err != nil {
			Unmake(made)
			return err
		}
	}
	content := Fleet{Name: name, Schema: in.Schema, Kubeconfig: KubeconfigField(in.KubeconfigFlag, dir), Groups: groups, Clusters: clusters, App: in.App}.YAML()
	if err := put(in.File, content, errOut, in.Check); err != nil {
		Unmake(made)
		return err
	}
	Said(out, in.File, groups, clusters, made)
	return nil
}

// put writes content to file only once check passed on it: content goes
// to a temporary file beside file first, check vets that, and only then
// is it renamed into place. When check fails, what it said goes to
// errOut and the error says nothing was written, file's name standing
// for the temporary file's in both.
func put(file string, content []byte, errOut io.Writer, check func(tmp string, out io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".fleet-init-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := check(tmp.Name(), &out); err != nil {
		fmt.Fprint(errOut, strings.ReplaceAll(out.String(), tmp.Name(), file))
		if ee := (*exit.Error)(nil); errors.As(err, &ee) && ee.Err == nil {
			return fmt.Errorf("the fleet file init made fails vet (above): nothing written")
		}
		return fmt.Errorf("the fleet file init made fails vet, nothing written: %s", strings.ReplaceAll(err.Error(), tmp.Name(), file))
	}
	return os.Rename(tmp.Name(), file)
}
