package publish

import (
	"fmt"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Follow is how a cluster follows its tag: the settings of the Flux
// objects Bootstrap writes.
type Follow struct {
	// Namespace is where the objects live (Flux's own: flux-system).
	Namespace string
	// Interval is how often Flux looks for a new artifact and checks
	// what it applied (1m).
	Interval time.Duration
	// Timeout bounds an apply and its health checks (5m).
	Timeout time.Duration
	// SecretRef names the Secret in Namespace with the registry's
	// credentials (a docker-registry Secret); "" for a public registry.
	SecretRef string
	// Verify names the Secret in Namespace whose cosign.pub verifies
	// every artifact before Flux applies it; "" for none.
	Verify string
}

// FollowOf is how a delivery's clusters follow their tags; verify names
// the Secret of its public key when it signs.
func FollowOf(d *fleet.Delivery, verify string) Follow {
	return Follow{Namespace: d.Namespace, Interval: d.Interval, Timeout: d.Timeout, SecretRef: d.SecretRef, Verify: verify}
}

// VerifySecret is the Secret that holds the public key (cosign.pub) of
// fleet's signing key, in namespace, for Flux's verify.
func VerifySecret(fleetName, namespace string, publicKey []byte) *unstructured.Unstructured {
	if namespace == "" {
		namespace = fleet.DefaultDeliveryNamespace
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": VerifySecretName(fleetName), "namespace": namespace, "labels": map[string]any{DeliveryLabel: fleetName}},
		"type":       "Opaque",
		"stringData": map[string]any{"cosign.pub": string(publicKey)},
	}}
}

// VerifySecretName is the name of fleet's VerifySecret.
func VerifySecretName(fleetName string) string { return fleetName + "-cosign" }

// DeliveryLabel marks the Flux objects Bootstrap writes with their
// fleet: no app of the fleet renders, adopts or prunes them.
const DeliveryLabel = "fleet.kubectl.io/delivery"

// Bootstrap is what makes a cluster follow app's tag for it: an
// OCIRepository on the tag (insecure for a plain-HTTP registry) and a
// Kustomization that applies it, prunes what a later artifact no longer
// holds, and waits for its objects' health. Named <fleet>-<app>.
func (r Registry) Bootstrap(fleetName, app, cluster string, f Follow) ([]*unstructured.Unstructured, error) {
	if f.Namespace == "" {
		f.Namespace = fleet.DefaultDeliveryNamespace
	}
	if f.Interval == 0 {
		f.Interval = fleet.DefaultDeliveryInterval
	}
	if f.Timeout == 0 {
		f.Timeout = fleet.DefaultDeliveryTimeout
	}
	name := Name(fleetName, app)
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return nil, fmt.Errorf("the Flux objects' name %q: %s", name, msgs[0])
	}
	repo, err := r.Repository(app)
	if err != nil {
		return nil, err
	}
	meta := func() map[string]any { // one for each object: none shares a map
		return map[string]any{"name": name, "namespace": f.Namespace, "labels": map[string]any{DeliveryLabel: fleetName}}
	}
	source := map[string]any{
		"interval": f.Interval.String(),
		"url":      Scheme + repo.Name(),
		"ref":      map[string]any{"tag": cluster},
	}
	if r.Insecure {
		source["insecure"] = true
	}
	if f.SecretRef != "" {
		source["secretRef"] = map[string]any{"name": f.SecretRef}
	}
	if f.Verify != "" {
		source["verify"] = map[string]any{"provider": "cosign", "secretRef": map[string]any{"name": f.Verify}}
	}
	return []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository", "metadata": meta(), "spec": source}},
		{Object: map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": meta(), "spec": map[string]any{
			"interval":      f.Interval.String(),
			"retryInterval": f.Interval.String(),
			"sourceRef":     map[string]any{"kind": "OCIRepository", "name": name},
			"path":          "./",
			"prune":         true,
			"wait":          true,
			"timeout":       f.Timeout.String(),
		}}},
	}, nil
}

// BootstrapCluster is everything that makes cluster c of f follow its
// tags of apps: the verify Secret with the public key pub (PEM) when its
// delivery signs, then each app's OCIRepository and Kustomization.
func BootstrapCluster(f *fleet.Fleet, c *fleet.Cluster, apps []string, pub []byte) ([]map[string]any, error) {
	d := f.DeliveryOf(c)
	if d == nil {
		return nil, fmt.Errorf("cluster %s has no delivery: the rollout writes to it, nothing needs to follow a tag", c.Name)
	}
	reg, err := For(f, d)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	verify := ""
	if d.Signing != nil {
		if err := checkPublicKey(pub); err != nil {
			return nil, fmt.Errorf("the signing key's public key: %w", err)
		}
		verify = VerifySecretName(f.Metadata.Name)
		out = append(out, VerifySecret(f.Metadata.Name, d.Namespace, pub).Object)
	}
	for _, app := range apps {
		objs, err := reg.Bootstrap(f.Metadata.Name, app, c.Name, FollowOf(d, verify))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, o.Object)
		}
	}
	return out, nil
}
