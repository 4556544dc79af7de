package pause

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

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
	// merge adds data's keys; lift removes the keys of seen whose
	// values are still the ones seen (a pause made since stays).
	merge(ctx context.Context, data map[string]string) error
	lift(ctx context.Context, seen map[string]string) error
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
	return r.update(ctx, func(data map[string]string) { maps.Copy(data, add) }, func(data map[string]string) bool {
		for k, v := range add {
			if data[k] != v {
				return false
			}
		}
		return true
	}, func(ctx context.Context, data map[string]string) (unsigned bool, err error) {
		err = r.reg.WriteRecord(ctx, Repository, Tag(r.cluster), data)
		if errors.Is(err, publish.ErrNoRecordKey) {
			return true, r.reg.WithoutRecordKeys().WriteRecord(ctx, Repository, Tag(r.cluster), data)
		}
		return false, err
	})
}

// lift removes pauses: only with the delivery's key, which signs the
// record (a resume without it would be an unsigned record, which holds).
func (r registryRecord) lift(ctx context.Context, seen map[string]string) error {
	return r.update(ctx, func(data map[string]string) {
		for k, v := range seen {
			if data[k] == v { // a pause made since was not seen: it stays
				delete(data, k)
			}
		}
	}, func(data map[string]string) bool {
		for k, v := range seen {
			if data[k] == v {
				return false
			}
		}
		return true
	}, func(ctx context.Context, data map[string]string) (bool, error) {
		if err := r.reg.WriteRecord(ctx, Repository, Tag(r.cluster), data); err != nil {
			return false, fmt.Errorf("resuming a delivered cluster signs its pause record: %w", err)
		}
		return false, nil
	})
}

// settle is how long update waits after a write before it reads the
// record back, and attempts how often it tries.
var (
	settle   = 500 * time.Millisecond
	attempts = 5
)

// update makes change to the record with a condition a registry does
// not offer (OCI has no If-Match): the record is read; the change is
// written only if the tag still names what was read (asked right before
// the write); and after settle it is read back, since a writer that
// read it before may have written over it since: done says whether the
// change holds, else it is made again on what is there. A pause and a
// resume at once so both hold, unless one writer takes longer than
// settle between its question and its write. A record write says
// unsigned (a pause without the key) is not read back: it reads as a
// pause of every app, whatever was written over.
func (r registryRecord) update(ctx context.Context, change func(map[string]string), done func(map[string]string) bool, write func(context.Context, map[string]string) (unsigned bool, err error)) error {
	for range attempts {
		before, _, err := r.reg.Resolve(ctx, Repository, Tag(r.cluster))
		if err != nil {
			return err
		}
		data, err := r.data(ctx)
		if err != nil {
			return err
		}
		if done(data) {
			return nil
		}
		change(data)
		if now, _, err := r.reg.Resolve(ctx, Repository, Tag(r.cluster)); err != nil {
			return err
		} else if now != before {
			continue // written since it was read: read it again
		}
		if unsigned, err := write(ctx, data); err != nil || unsigned {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(settle):
		}
		after, err := r.data(ctx)
		if err != nil {
			return err
		}
		if done(after) {
			return nil
		}
	}
	return fmt.Errorf("the pause record of cluster %s kept changing as it was written, %d times: see it with kubectl fleet status, and try again", r.cluster, attempts)
}
