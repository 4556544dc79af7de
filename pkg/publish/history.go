package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// A delivered cluster's history of an app lives beside its tag, in the
// app's repository, where the publisher can write and nothing on the
// cluster must: the tag <cluster>.history holds the records (History),
// and <cluster>.r<N> keeps revision N's artifact tagged, so that a
// registry that collects untagged artifacts does not take what a
// rollback needs. Flux follows <cluster> alone.
const (
	HistoryConfigMediaType types.MediaType = "application/vnd.kubectl-fleet.history.config.v1+json"
	HistoryMediaType       types.MediaType = "application/vnd.kubectl-fleet.history.v1+json"
)

// MaxHistory bounds a history's size as read back.
const MaxHistory = 4 << 20

// History is an app's releases to a delivered cluster: its revisions,
// oldest first, and the current one.
type History struct {
	Current   int                 `json:"current"`
	Revisions []revision.Revision `json:"revisions"`
}

// Record is the current revision, and whether there is one.
func (h History) Record() (revision.Revision, bool) {
	i := slices.IndexFunc(h.Revisions, func(r revision.Revision) bool { return r.Number == h.Current })
	if i < 0 {
		return revision.Revision{}, false
	}
	return h.Revisions[i], true
}

// Next is the number the next revision gets.
func (h History) Next() int {
	n := 0
	for _, r := range h.Revisions {
		n = max(n, r.Number)
	}
	return n + 1
}

// Add makes rev the current revision, keeping at most limit (0: all).
func (h *History) Add(rev revision.Revision, limit int) {
	h.Revisions = append(h.Revisions, rev)
	h.Current = rev.Number
	if limit > 0 && len(h.Revisions) > limit {
		h.Revisions = h.Revisions[len(h.Revisions)-limit:]
	}
}

// Verify records v on revision n.
func (h *History) Verify(n int, v revision.Verification) bool {
	for i := range h.Revisions {
		if h.Revisions[i].Number == n {
			h.Revisions[i].Verification = v
			return true
		}
	}
	return false
}

// HistoryTag is the tag of a cluster's history of an app.
func HistoryTag(cluster string) string { return cluster + ".history" }

// RevisionTag is the tag that keeps revision n's artifact.
func RevisionTag(cluster string, n int) string { return cluster + ".r" + strconv.Itoa(n) }

// History reads app's history on cluster; none yet is an empty History.
func (r Registry) History(ctx context.Context, app, cluster string) (History, error) {
	repo, err := r.Repository(app)
	if err != nil {
		return History{}, err
	}
	d, found, err := r.Resolve(ctx, app, HistoryTag(cluster))
	if err != nil || !found {
		return History{}, err
	}
	img, err := remote.Image(repo.Digest(d.String()), r.options(ctx)...)
	if err != nil {
		return History{}, fmt.Errorf("reading %s:%s: %w", repo, HistoryTag(cluster), plain(err))
	}
	h, err := historyOf(img)
	if err != nil {
		return History{}, fmt.Errorf("%s:%s: %w", repo, HistoryTag(cluster), err)
	}
	return h, nil
}

// historyOf reads a history artifact, bounded by MaxHistory.
func historyOf(img v1.Image) (History, error) {
	m, err := img.Manifest()
	if err != nil {
		return History{}, err
	}
	if m.Config.MediaType != HistoryConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != HistoryMediaType {
		return History{}, errors.New("not a history kubectl fleet wrote")
	}
	layers, err := img.Layers()
	if err != nil {
		return History{}, err
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		return History{}, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, MaxHistory+1))
	switch {
	case err != nil:
		return History{}, err
	case len(data) > MaxHistory:
		return History{}, fmt.Errorf("a history larger than %d MiB", MaxHistory>>20)
	}
	var h History
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&h); err != nil {
		return History{}, fmt.Errorf("the history: %w", err)
	}
	return h, nil
}

// SaveHistory writes app's history on cluster.
func (r Registry) SaveHistory(ctx context.Context, app, cluster string, h History) error {
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), HistoryConfigMediaType)
	img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(data, HistoryMediaType), MediaType: HistoryMediaType})
	if err != nil {
		return err
	}
	d, err := r.Push(ctx, app, img)
	if err != nil {
		return err
	}
	return r.Tag(ctx, app, HistoryTag(cluster), d)
}
