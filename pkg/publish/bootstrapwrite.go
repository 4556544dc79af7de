package publish

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// Delivered are the clusters among clusters that have a delivery, those
// bootstrap writes for: at least one, and only one unless each gets a
// file of its own (toDir).
func Delivered(f *fleet.Fleet, clusters []*fleet.Cluster, toDir bool) ([]*fleet.Cluster, error) {
	var out []*fleet.Cluster
	for _, c := range clusters {
		if f.DeliveryOf(c) != nil {
			out = append(out, c)
		}
	}
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("no selected cluster has a delivery: bootstrap is for clusters that pull (delivery: {oci: …})")
	case len(out) > 1 && !toDir:
		return nil, fmt.Errorf("%d delivered clusters selected: give --output-dir for a file each, or select one (-c)", len(out))
	}
	return out, nil
}

// Bootstrapping is what "kubectl fleet bootstrap" writes: the objects
// that make each delivered cluster follow its tags, and where they go.
type Bootstrapping struct {
	Fleet *fleet.Fleet
	// Clusters are delivered clusters (Delivered).
	Clusters []*fleet.Cluster
	// Apps are the apps a cluster follows.
	Apps func(c *fleet.Cluster) []string
	// PublicKey, when set, is the file of the signing key's public half
	// (cosign.pub) for every delivery that signs: no private key is read.
	PublicKey string
	// OutputDir, when set, gets a file <cluster>.yaml per cluster; else
	// the objects go to out.
	OutputDir string
}

// Write writes each cluster's objects (BootstrapCluster) as YAML
// documents: to out, or into a file each under OutputDir, each file
// said on errOut. It stops at the first cluster that fails.
func (b Bootstrapping) Write(out, errOut io.Writer) error {
	for _, c := range b.Clusters {
		pub, err := b.publicKey(b.Fleet.DeliveryOf(c).Signing)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		objs, err := BootstrapCluster(b.Fleet, c, b.Apps(c), pub)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		if err := b.write(out, errOut, c.Name, objs); err != nil {
			return err
		}
	}
	return nil
}

// write writes a cluster's objects as YAML documents, to out or to its
// file under OutputDir.
func (b Bootstrapping) write(out, errOut io.Writer, cluster string, objs []map[string]any) error {
	var docs []byte
	for _, obj := range objs {
		y, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		docs = append(append(docs, "---\n"...), y...)
	}
	if b.OutputDir == "" {
		_, err := out.Write(docs)
		return err
	}
	if err := os.MkdirAll(b.OutputDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(b.OutputDir, cluster+".yaml")
	if err := os.WriteFile(path, docs, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "wrote %s\n", path)
	return nil
}

// publicKey is the public key Flux verifies a delivery's artifacts with
// (nil for a delivery that does not sign, s nil): PublicKey's, else the
// delivery's signing.publicKey's, else its private key's.
func (b Bootstrapping) publicKey(s *fleet.Signing) ([]byte, error) {
	switch {
	case s == nil:
		return nil, nil
	case b.PublicKey != "":
		return ReadPublicKey(b.PublicKey)
	}
	return KeysOf(b.Fleet, s).Public()
}
