package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
)

// TestTarget: the fleet file is made absolute, and one that exists is
// refused but with force.
func TestTarget(t *testing.T) {
	t.Chdir(t.TempDir())
	file, err := Target("f.yaml", false)
	if err != nil || !filepath.IsAbs(file) || filepath.Base(file) != "f.yaml" {
		t.Fatalf("%q, %v", file, err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Target("f.yaml", false); err == nil || err.Error() != file+" exists: kubectl fleet init does not overwrite it without --force" {
		t.Errorf("an existing file: %v", err)
	}
	if got, err := Target("f.yaml", true); err != nil || got != file {
		t.Errorf("--force: %q, %v", got, err)
	}
}

// TestInitWrite: the fleet file is put in place only once the check
// passed on it, from a temporary file beside it; a check that fails
// leaves nothing behind (the example app neither), and what it said is
// told with the fleet file's name for the temporary one's.
func TestInitWrite(t *testing.T) {
	kc := &clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"a": {Server: "https://127.0.0.1:1"}, "b": {Server: "https://127.0.0.1:2"}},
		Contexts: map[string]*clientcmdapi.Context{"kind-dev": {Cluster: "a"}, "prod": {Cluster: "b"}, "prod-admin": {Cluster: "b"}},
	}
	for _, tt := range []struct {
		name   string
		check  error
		said   string
		want   string // the error
		stderr string
	}{
		{"passes", nil, "", "", "note: context prod-admin: the API server of prod: left out"},
		{"problems said", &exit.Error{Code: exit.Failed}, "TMP:3: bad\n", "the fleet file init made fails vet (above): nothing written", "FILE:3: bad\n"},
		{"an error", errors.New("reading TMP: broken"), "", "the fleet file init made fails vet, nothing written: reading FILE: broken", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "fleet.yaml")
			var checked []byte
			in := Init{File: file, Kubeconfig: kc, App: "hello", Schema: "schema.json", Check: func(tmp string, out io.Writer) error {
				if filepath.Dir(tmp) != dir || tmp == file {
					t.Errorf("checked %s, not a file beside %s", tmp, file)
				}
				checked, _ = os.ReadFile(tmp)
				fmt.Fprint(out, strings.ReplaceAll(tt.said, "TMP", tmp))
				if tt.check != nil && !errors.As(tt.check, new(*exit.Error)) {
					return errors.New(strings.ReplaceAll(tt.check.Error(), "TMP", tmp))
				}
				return tt.check
			}}
			var out, errOut bytes.Buffer
			err := in.Write(&out, &errOut)
			want := strings.ReplaceAll(tt.want, "FILE", file)
			wrote, _ := os.ReadFile(file)
			entries, _ := os.ReadDir(dir)
			if want == "" {
				if err != nil || !bytes.Equal(wrote, checked) || !strings.Contains(string(wrote), "context: kind-dev") || len(entries) != 2 || !strings.Contains(out.String(), "Wrote "+file) {
					t.Errorf("%v; wrote %q of %q, left %v\n%s", err, wrote, checked, entries, out.String())
				}
			} else if err == nil || err.Error() != want || len(entries) != 0 || out.Len() != 0 {
				t.Errorf("%v, want %q; left %v\n%s", err, want, entries, out.String())
			}
			if !strings.Contains(errOut.String(), strings.ReplaceAll(tt.stderr, "FILE", file)) {
				t.Errorf("stderr %q, want %q", errOut.String(), tt.stderr)
			}
		})
	}
}
