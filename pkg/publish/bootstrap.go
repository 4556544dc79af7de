package publish

import (
	"fmt"
	"time"

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
}

// DeliveryLabel marks the Flux objects Bootstrap writes with their
// fleet: no app of the fleet renders, adopts or prunes them.
const DeliveryLabel = "fleet.kubectl.io/delivery"

// Bootstrap is what makes a cluster follow app's tag for it: an
// OCIRepository on the tag (insecure for a plain-HTTP registry) and a
// Kustomization that applies it, prunes what a later artifact no longer
// holds, and waits for its objects' health. Named <fleet>-<app>.
func (r Registry) Bootstrap(fleet, app, cluster string, f Follow) ([]*unstructured.Unstructured, error) {
	if f.Namespace == "" {
		f.Namespace = "flux-system"
	}
	if f.Interval == 0 {
		f.Interval = time.Minute
	}
	if f.Timeout == 0 {
		f.Timeout = 5 * time.Minute
	}
	name := Name(fleet, app)
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return nil, fmt.Errorf("the Flux objects' name %q: %s", name, msgs[0])
	}
	repo, err := r.Repository(app)
	if err != nil {
		return nil, err
	}
	meta := func() map[string]any { // one for each object: none shares a map
		return map[string]any{"name": name, "namespace": f.Namespace, "labels": map[string]any{DeliveryLabel: fleet}}
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
