package pause

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// A Store is where a cluster's pauses are kept, as the keys and values
// of a ConfigMap's data (keyOf): the cluster (InCluster), or, for a
// cluster delivered through a registry, a record beside its tags
// (package target/registry).
type Store interface {
	Data(ctx context.Context) (map[string]string, error)
	// Merge adds data's keys; Lift removes the keys of seen whose
	// values are still the ones seen (a pause made since stays).
	Merge(ctx context.Context, data map[string]string) error
	Lift(ctx context.Context, seen map[string]string) error
}

// Delivered is what a cluster delivered through a registry answers
// pause and resume (package target/registry): the Store of its pauses.
type Delivered interface {
	PauseStore(c *fleet.Cluster) (Store, error)
}

// ReadFrom reads the pauses kept in s.
func ReadFrom(ctx context.Context, s Store) ([]Pause, error) {
	data, err := s.Data(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the pauses: %w", err)
	}
	return Of(&corev1.ConfigMap{Data: data}), nil
}
