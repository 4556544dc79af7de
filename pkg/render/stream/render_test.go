package stream

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/sopstest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// Secrets: --output-dir leaves encrypted files encrypted unless
// --decrypt, which needs the keys; standard output decrypts what the keys
// here open and prints the rest as it is.
func TestSecrets(t *testing.T) {
	for _, tt := range []struct {
		name              string
		dir               string
		decrypt           bool
		off, keysOptional bool
	}{
		{name: "stdout", keysOptional: true},
		{name: "output-dir", dir: "out", off: true},
		{name: "output-dir --decrypt", dir: "out", decrypt: true},
	} {
		var d sopsfile.Decrypter
		NewPrinter(Options{Dir: tt.dir, Decrypt: tt.decrypt}).Secrets(&d)
		if d.Off != tt.off || d.KeysOptional != tt.keysOptional {
			t.Errorf("%s: Off %v, KeysOptional %v; want %v, %v", tt.name, d.Off, d.KeysOptional, tt.off, tt.keysOptional)
		}
	}
}

// Undecrypted says the files left encrypted in --output-dir in one note,
// and each file no key here opens in a note of its own; nothing when
// every file was decrypted.
func TestUndecrypted(t *testing.T) {
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	enc := k.Encrypt(t, "secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: s3cr3t\n", "^(data|stringData)$")
	read := func(p *Printer) string {
		t.Helper()
		var d sopsfile.Decrypter
		p.Secrets(&d)
		if _, err := d.Read("apps/secret.yaml", enc); err != nil {
			t.Fatal(err)
		}
		var progress bytes.Buffer
		p.o.Progress = &progress
		p.Undecrypted(&d)
		return progress.String()
	}
	if got := read(NewPrinter(Options{})); !strings.HasPrefix(got, "note: apps/secret.yaml is encrypted with SOPS for age "+k.Recipient) || !strings.HasSuffix(got, ": rendered with its values encrypted\n") || strings.Count(got, "\n") != 1 {
		t.Errorf("no key, standard output: said %q", got)
	}
	want := "note: 1 file encrypted with SOPS left encrypted in out, for a decryptor in the cluster (Flux's kustomize-controller); --decrypt writes the values decrypted: apps/secret.yaml\n"
	t.Setenv("SOPS_AGE_KEY", k.Identity)
	if got := read(NewPrinter(Options{Dir: "out"})); got != want {
		t.Errorf("--output-dir: said %q, want %q", got, want)
	}
	if got := read(NewPrinter(Options{Dir: "out", Decrypt: true})); got != "" {
		t.Errorf("--output-dir --decrypt: said %q, want nothing", got)
	}
}

// Render refuses a folder no render wrote before rendering anything;
// otherwise it streams as Stream does, secrets read as Secrets says.
func TestRender(t *testing.T) {
	clusters, ts := streamFleet()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "c1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "c1", "kustomization.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{}
	var d sopsfile.Decrypter
	p := NewPrinter(Options{Dir: dir, Progress: &bytes.Buffer{}, Prefix: output.NewPrefixer([]string{"c0", "c1"}, false)})
	if err := p.Render(context.Background(), clusters, ts, f, &d, 2); err == nil || !strings.Contains(err.Error(), "not written by kubectl fleet render") {
		t.Errorf("Render into a folder of someone else's: %v", err)
	}
	if len(f.released) != 0 || d.Off {
		t.Errorf("rendered %v, Off %v, before refusing the folder", f.released, d.Off)
	}
	got, _ := runStream(t, &fakeEngine{}, "yaml", 2)
	var out bytes.Buffer
	if err := NewPrinter(Options{Out: &out}).Render(context.Background(), clusters, ts, &fakeEngine{}, &d, 2); err != nil || out.String() != got || !d.KeysOptional {
		t.Errorf("Render = %v, KeysOptional %v; printed\n%s\nwant what Stream prints\n%s", err, d.KeysOptional, out.String(), got)
	}
}

// PrintAll prints each cluster's objects in order, and stops at the
// first error.
func TestPrintAll(t *testing.T) {
	clusters := []*fleet.Cluster{{Name: "c0"}, {Name: "c1"}, {Name: "c2"}}
	f := &fakeEngine{}
	results := make([]render.Result, len(clusters))
	for i, c := range clusters {
		results[i] = f.RenderTarget(context.Background(), render.Target{Cluster: render.Cluster{Name: c.Name}, App: "web"})
	}
	var out bytes.Buffer
	if err := NewPrinter(Options{Out: &out}).PrintAll(clusters, results); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Count(got, "# Cluster: ") != 3 || strings.Index(got, "# Cluster: c0") > strings.Index(got, "# Cluster: c2") {
		t.Errorf("printed\n%s", got)
	}
	w := &failingWriter{}
	if err := NewPrinter(Options{Out: w}).PrintAll(clusters, results); !errors.Is(err, errDiskFull) || w.writes != 2 {
		t.Errorf("PrintAll = %v after %d writes; want the write's error, after the second", err, w.writes)
	}
}
