package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// A delivered cluster is never written to: its pauses are kept in its
// registry, as its approvals and history are (publish.ReadRecord), one
// record of every pause of the cluster under the tag <cluster>.pause of
// the repository Repository. Nothing authenticates who paused there:
// By is the user of the cluster's context when it has one, else the
// local user, said so.

// PauseStore is where delivered cluster c's pauses are kept (pause.Store).
func (r Fleet) PauseStore(c *fleet.Cluster) (pause.Store, error) {
	return pauseStore(r.Fleet, r.Fleet.DeliveryOf(c), c.Name)
}

// Pauses reads the pauses of delivered cluster c: none when it has no
// record of them.
func (r Fleet) Pauses(ctx context.Context, c *fleet.Cluster) ([]pause.Pause, error) {
	s, err := r.PauseStore(c)
	if err != nil {
		return nil, err
	}
	return pause.ReadFrom(ctx, s)
}

// Paused are the clusters that have a pause record in d's registry (a
// tag PauseTag), paused or no longer (a record resumed stays): one
// listing of the tags for every cluster of the delivery, so that those
// without a record need no read of their own.
func (r Fleet) Paused(ctx context.Context, d *fleet.Delivery) (map[string]bool, error) {
	reg, err := publish.For(r.Fleet, d)
	if err != nil {
		return nil, err
	}
	tags, err := reg.Tags(ctx, PauseRepository)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(tags))
	for _, t := range tags {
		if name, ok := strings.CutSuffix(t, ".pause"); ok {
			out[name] = true
		}
	}
	return out, nil
}

// PauseRepository is the repository, under a delivery's base, of the
// pauses: no app is named so (an app's name is a DNS label, without a
// dot).
const PauseRepository = "fleet.pauses"

// PauseTag is the tag of a delivered cluster's pauses.
func PauseTag(cluster string) string { return cluster + ".pause" }

// pauseRecord keeps a delivered cluster's pauses in one record: a
// pause.Store.
type pauseRecord struct {
	reg     publish.Registry
	cluster string
}

// pauseStore is the record of delivered cluster cluster's pauses, in
// d's registry.
func pauseStore(f *fleet.Fleet, d *fleet.Delivery, cluster string) (pauseRecord, error) {
	reg, err := publish.For(f, d)
	return pauseRecord{reg: reg, cluster: cluster}, err
}

// data reads the record. One the delivery's key did not sign (someone
// with push rights wrote {} to lift a pause, or a pause without the key)
// holds every app: failing closed, it is a pause, by nobody known.
func (r pauseRecord) Data(ctx context.Context) (map[string]string, error) {
	data := map[string]string{}
	_, err := r.reg.ReadRecord(ctx, PauseRepository, PauseTag(r.cluster), &data)
	if unsigned, ok := errors.AsType[*publish.UnsignedRecordError](err); ok {
		held, _ := json.Marshal(pause.Pause{By: "?", Reason: unsigned.Error()})
		return map[string]string{pause.All: string(held)}, nil
	}
	return data, err
}

// merge adds pauses. Without the delivery's key, the record is written
// unsigned: it then holds every app (data), which a pause may do.
func (r pauseRecord) Merge(ctx context.Context, add map[string]string) error {
	return r.update(ctx, func(data map[string]string) { maps.Copy(data, add) }, func(data map[string]string) bool {
		for k, v := range add {
			if data[k] != v {
				return false
			}
		}
		return true
	}, func(ctx context.Context, data map[string]string) (unsigned bool, err error) {
		err = r.reg.WriteRecord(ctx, PauseRepository, PauseTag(r.cluster), data)
		if errors.Is(err, publish.ErrNoRecordKey) {
			return true, r.reg.WithoutRecordKeys().WriteRecord(ctx, PauseRepository, PauseTag(r.cluster), data)
		}
		return false, err
	})
}

// lift removes pauses: only with the delivery's key, which signs the
// record (a resume without it would be an unsigned record, which holds).
func (r pauseRecord) Lift(ctx context.Context, seen map[string]string) error {
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
		if err := r.reg.WriteRecord(ctx, PauseRepository, PauseTag(r.cluster), data); err != nil {
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
func (r pauseRecord) update(ctx context.Context, change func(map[string]string), done func(map[string]string) bool, write func(context.Context, map[string]string) (unsigned bool, err error)) error {
	for range attempts {
		before, _, err := r.reg.Resolve(ctx, PauseRepository, PauseTag(r.cluster))
		if err != nil {
			return err
		}
		data, err := r.Data(ctx)
		if err != nil {
			return err
		}
		if done(data) {
			return nil
		}
		change(data)
		if now, _, err := r.reg.Resolve(ctx, PauseRepository, PauseTag(r.cluster)); err != nil {
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
		after, err := r.Data(ctx)
		if err != nil {
			return err
		}
		if done(after) {
			return nil
		}
	}
	return fmt.Errorf("the pause record of cluster %s kept changing as it was written, %d times: see it with kubectl fleet status, and try again", r.cluster, attempts)
}
