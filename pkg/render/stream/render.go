package stream

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// Render is render's whole output: it refuses a Dir that is not the
// render's to write (CheckDir), sets how secrets reads SOPS-encrypted
// files for this printer (Secrets), renders and prints ts (Stream), then
// says which files were left encrypted (Undecrypted).
func (p *Printer) Render(ctx context.Context, clusters []*fleet.Cluster, ts []render.Target, r Renderer, secrets *sopsfile.Decrypter, parallel int) error {
	if err := CheckDir(p.o.Dir, clusters); err != nil {
		return err
	}
	p.Secrets(secrets)
	err := p.Stream(ctx, clusters, ts, r, parallel)
	p.Undecrypted(secrets)
	return err
}

// Secrets sets how d reads SOPS-encrypted files for this printer: into
// Dir without Decrypt, not at all (Secret manifests are left encrypted,
// for a decryptor in the cluster); on Out, with keys optional (a file no
// key here decrypts is printed as it is, its values encrypted); into Dir
// with Decrypt, decrypted, the keys required.
func (p *Printer) Secrets(d *sopsfile.Decrypter) {
	switch {
	case p.o.Dir != "" && !p.o.Decrypt:
		d.Off = true
	case p.o.Dir == "":
		d.KeysOptional = true
	}
}

// Undecrypted says on Progress which SOPS-encrypted files d read were
// rendered as they are, and why: left encrypted in Dir (one note), or no
// key here decrypts them (a note each).
func (p *Printer) Undecrypted(d *sopsfile.Decrypter) {
	files := d.Undecrypted()
	if len(files) == 0 {
		return
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	if d.Off {
		fmt.Fprintf(p.o.Progress, "note: %s encrypted with SOPS left encrypted in %s, for a decryptor in the cluster (Flux's kustomize-controller); --decrypt writes the values decrypted: %s\n", output.Plural(len(files), "file"), p.o.Dir, strings.Join(paths, ", "))
		return
	}
	for _, f := range files {
		fmt.Fprintf(p.o.Progress, "note: %s: rendered with its values encrypted\n", f.NoKey())
	}
}

// PrintAll writes each cluster's objects in order (Print): results[i]
// are clusters[i]'s. It stops at the first error.
func (p *Printer) PrintAll(clusters []*fleet.Cluster, results []render.Result) error {
	for i, c := range clusters {
		if err := p.Print(c, results[i].Objects); err != nil {
			return err
		}
	}
	return nil
}
