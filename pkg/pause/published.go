package pause

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// A delivered cluster is never written to: its pauses are kept in its
// registry, as its approvals and history are (publish.ReadRecord), one
// record of every pause of the cluster under the tag <cluster>.pause of
// the repository Repository. Nothing authenticates who paused there:
// By is the user of the cluster's context when it has one, else the
// local user, said so.

// Repository is the repository, under a delivery's base, of the pauses:
// no app is named so (an app's name is a DNS label, without a dot).
const Repository = "fleet.pauses"

// Tag is the tag of a delivered cluster's pauses.
func Tag(cluster string) string { return cluster + ".pause" }

// ReadPublished reads the pauses of delivered cluster c: none when it
// has no record of them.
func ReadPublished(ctx context.Context, f *fleet.Fleet, d *fleet.Delivery, cluster string) ([]Pause, error) {
	s, err := registryStore(f, d, cluster)
	if err != nil {
		return nil, err
	}
	return s.read(ctx)
}

// store is where a cluster's pauses are kept, as the keys and values of
// a ConfigMap's data (keyOf): the cluster, or its registry.
type store interface {
	data(ctx context.Context) (map[string]string, error)
	// merge adds data's keys; lift removes keys.
	merge(ctx context.Context, data map[string]string) error
	lift(ctx context.Context, keys []string) error
}

func read(ctx context.Context, s store) ([]Pause, error) {
	data, err := s.data(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the pauses: %w", err)
	}
	return Of(&corev1.ConfigMap{Data: data}), nil
}

// registryRecord keeps a delivered cluster's pauses in one record.
type registryRecord struct {
	reg     publish.Registry
	cluster string
}

func registryStore(f *fleet.Fleet, d *fleet.Delivery, cluster string) (registryRecord, error) {
	reg, err := publish.For(f, d)
	return registryRecord{reg: reg, cluster: cluster}, err
}

func (r registryRecord) read(ctx context.Context) ([]Pause, error) { return read(ctx, r) }

// data reads the record. One the delivery's key did not sign (someone
// with push rights wrote {} to lift a pause, or a pause without the key)
// holds every app: failing closed, it is a pause, by nobody known.
func (r registryRecord) data(ctx context.Context) (map[string]string, error) {
	data := map[string]string{}
	_, err := r.reg.ReadRecord(ctx, Repository, Tag(r.cluster), &data)
	if unsigned, ok := errors.AsType[*publish.UnsignedRecordError](err); ok {
		held, _ := json.Marshal(Pause{By: "?", Reason: unsigned.Error()})
		return map[string]string{All: string(held)}, nil
	}
	return data, err
}

// merge adds pauses. Without the delivery's key, the record is written
// unsigned: it then holds every app (data), which a pause may do.
func (r registryRecord) merge(ctx context.Context, add map[string]string) error {
	data, err := r.data(ctx)
	if err != nil {
		return err
	}
	maps.Copy(data, add)
	err = r.reg.WriteRecord(ctx, Repository, Tag(r.cluster), data)
	if errors.Is(err, publish.ErrNoRecordKey) {
		err = r.reg.WithoutRecordKeys().WriteRecord(ctx, Repository, Tag(r.cluster), data)
	}
	return err
}

// lift removes pauses: only with the delivery's key, which signs the
// record (a resume without it would be an unsigned record, which holds).
func (r registryRecord) lift(ctx context.Context, keys []string) error {
	data, err := r.data(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		delete(data, k)
	}
	if err := r.reg.WriteRecord(ctx, Repository, Tag(r.cluster), data); err != nil {
		return fmt.Errorf("resuming a delivered cluster signs its pause record: %w", err)
	}
	return nil
}
