package publish_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// bootstrapFleet is a fleet of a cluster written to (w1) and delivered
// ones: u1 and u2 unsigned, s1 signed with a key that is not here, p1
// signed with signing.publicKey, cosign.pub beside the fleet file.
func bootstrapFleet(t *testing.T) (*fleet.Fleet, []byte) {
	t.Helper()
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "cosign.pub"), pub, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Parse([]byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: shop}
groups:
  - {name: written}
  - {name: unsigned, delivery: {oci: oci://registry.example.com/shop}}
  - {name: signed, delivery: {oci: oci://registry.example.com/signed, signing: {keyEnv: NO_SUCH_SIGNING_KEY}}}
  - {name: published, delivery: {oci: oci://registry.example.com/pub, signing: {keyEnv: NO_SUCH_SIGNING_KEY, publicKey: cosign.pub}}}
clusters:
  - {name: w1, group: written, context: w}
  - {name: u1, group: unsigned}
  - {name: u2, group: unsigned}
  - {name: s1, group: signed}
  - {name: p1, group: published}
`), filepath.Join(dir, "fleet.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	return f, pub
}

// named are the clusters of f named.
func named(f *fleet.Fleet, names ...string) []*fleet.Cluster {
	var out []*fleet.Cluster
	for _, n := range names {
		out = append(out, f.Cluster(n))
	}
	return out
}

// TestDelivered: bootstrap writes for the delivered clusters only, at
// least one, and one unless each gets a file.
func TestDelivered(t *testing.T) {
	f, _ := bootstrapFleet(t)
	for _, tt := range []struct {
		clusters []string
		toDir    bool
		want     string // the clusters, or the error
	}{
		{[]string{"w1", "u1"}, false, "u1"},
		{[]string{"w1", "u1", "u2"}, true, "u1 u2"},
		{[]string{"w1", "u1", "u2"}, false, "2 delivered clusters selected: give --output-dir for a file each, or select one (-c)"},
		{[]string{"w1"}, true, "no selected cluster has a delivery: bootstrap is for clusters that pull (delivery: {oci: …})"},
	} {
		got, err := publish.Delivered(f, named(f, tt.clusters...), tt.toDir)
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		if s := strings.Join(names, " "); err != nil && err.Error() != tt.want || err == nil && s != tt.want {
			t.Errorf("%v, to a folder %v: %q, %v; want %q", tt.clusters, tt.toDir, s, err, tt.want)
		}
	}
}

// TestBootstrappingWrite: one cluster's objects go to standard output,
// several a file each; the public key comes from PublicKey, else the
// delivery's signing.publicKey, else the private key, whose absence
// stops the run at its cluster.
func TestBootstrappingWrite(t *testing.T) {
	f, pub := bootstrapFleet(t)
	apps := func(c *fleet.Cluster) []string { return []string{"web", "db"} }
	firstLine := strings.SplitN(string(pub), "\n", 3)[1]

	var out, errOut bytes.Buffer
	b := publish.Bootstrapping{Fleet: f, Clusters: named(f, "u1"), Apps: apps}
	if err := b.Write(&out, &errOut); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.HasPrefix(s, "---\n") || strings.Count(s, "---\n") != 4 || strings.Count(s, "\nkind: OCIRepository\n") != 2 || !strings.Contains(s, "name: shop-db") || strings.Contains(s, "cosign.pub") || errOut.Len() != 0 {
		t.Errorf("one unsigned cluster, two apps:\n%s%s", s, errOut.String())
	}

	dir := filepath.Join(t.TempDir(), "out")
	out.Reset()
	b = publish.Bootstrapping{Fleet: f, Clusters: named(f, "u1", "p1"), Apps: apps, OutputDir: dir}
	if err := b.Write(&out, &errOut); err != nil {
		t.Fatal(err)
	}
	u1, _ := os.ReadFile(filepath.Join(dir, "u1.yaml"))
	p1, _ := os.ReadFile(filepath.Join(dir, "p1.yaml"))
	if want := "wrote " + filepath.Join(dir, "u1.yaml") + "\nwrote " + filepath.Join(dir, "p1.yaml") + "\n"; errOut.String() != want || out.Len() != 0 || !strings.Contains(string(u1), "kind: Kustomization") || !strings.Contains(string(p1), firstLine) {
		t.Errorf("a file each: said %q, want %q; stdout %q\nu1.yaml:\n%s\np1.yaml:\n%s", errOut.String(), want, out.String(), u1, p1)
	}

	b = publish.Bootstrapping{Fleet: f, Clusters: named(f, "s1", "u1"), Apps: apps, OutputDir: t.TempDir()}
	if err := b.Write(&out, &errOut); err == nil || !strings.HasPrefix(err.Error(), "cluster s1: ") || !strings.Contains(err.Error(), "NO_SUCH_SIGNING_KEY is not set") {
		t.Errorf("no key: %v", err)
	}
	if entries, _ := os.ReadDir(b.OutputDir); len(entries) != 0 {
		t.Errorf("wrote on after a cluster failed: %v", entries)
	}
	out.Reset()
	b = publish.Bootstrapping{Fleet: f, Clusters: named(f, "s1"), Apps: apps, PublicKey: filepath.Join(f.Dir, "cosign.pub")}
	if err := b.Write(&out, &errOut); err != nil || !strings.Contains(out.String(), firstLine) {
		t.Errorf("--public-key: %v\n%s", err, out.String())
	}
	b.PublicKey = filepath.Join(f.Dir, "fleet.yaml")
	if err := b.Write(&out, &errOut); err == nil || !strings.HasPrefix(err.Error(), "cluster s1: ") {
		t.Errorf("--public-key of a file that is no key: %v", err)
	}
}
