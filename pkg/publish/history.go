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

// What kubectl fleet keeps of a delivered cluster lives beside its tag,
// in each app's repository, where the publisher can write and nothing on
// the cluster must: records, small JSON artifacts under tags of their
// own. <cluster>.history holds the app's revisions (History),
// <cluster>.approval its approval, and <cluster>.r<N> keeps revision N's
// artifact tagged, so that a registry that collects untagged artifacts
// does not take what a rollback needs. Flux follows <cluster> alone.
const (
	RecordConfigMediaType types.MediaType = "application/vnd.kubectl-fleet.record.config.v1+json"
	RecordMediaType       types.MediaType = "application/vnd.kubectl-fleet.record.v1+json"
)

// MaxRecord bounds a record's size as read back.
const MaxRecord = 4 << 20

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

// Add makes rev the current revision, keeping at most limit (0: all),
// and returns the revisions it dropped, oldest first.
func (h *History) Add(rev revision.Revision, limit int) (dropped []revision.Revision) {
	h.Revisions = append(h.Revisions, rev)
	h.Current = rev.Number
	if limit > 0 && len(h.Revisions) > limit {
		dropped = slices.Clone(h.Revisions[:len(h.Revisions)-limit])
		h.Revisions = h.Revisions[len(h.Revisions)-limit:]
	}
	return dropped
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
	var h History
	_, err := r.ReadRecord(ctx, app, HistoryTag(cluster), &h)
	return h, err
}

// SaveHistory writes app's history on cluster.
func (r Registry) SaveHistory(ctx context.Context, app, cluster string, h History) error {
	return r.WriteRecord(ctx, app, HistoryTag(cluster), h)
}

// ReadRecord reads the record tag holds in app's repository into v
// (JSON, bounded by MaxRecord); found is false when there is no tag.
// When the delivery signs, a record without a valid signature of its key
// is an *UnsignedRecordError, and v is left as it was. One request, the
// record's manifest, when the record is embedded in it (WriteRecord);
// two for a record written before that, or too large to embed.
func (r Registry) ReadRecord(ctx context.Context, app, tag string, v any) (found bool, err error) {
	repo, err := r.Repository(app)
	if err != nil {
		return false, err
	}
	desc, err := remote.Get(repo.Tag(tag), r.options(ctx)...)
	switch {
	case notFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s:%s: %w", repo, tag, Plain(err))
	}
	data, sig, err := recordOf(desc)
	if err != nil {
		return true, fmt.Errorf("%s:%s: %w", repo, tag, err)
	}
	if r.Records != nil {
		if err := r.Records.verifyRecord(repo.Tag(tag), data, sig); err != nil {
			return true, err
		}
	}
	if data, err = Sanitized(data); err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		return true, fmt.Errorf("%s:%s: %w", repo, tag, err)
	}
	return true, nil
}

// recordOf reads a record artifact, bounded by MaxRecord, and its
// signature ("" for none): from its manifest when the record is
// embedded there and its digest agrees, from its layer otherwise.
func recordOf(desc *remote.Descriptor) (data []byte, sig string, err error) {
	if len(desc.Manifest) > MaxRecord+64<<10 {
		return nil, "", fmt.Errorf("a record larger than %d MiB", MaxRecord>>20)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, "", err
	}
	if m.Config.MediaType != RecordConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != RecordMediaType {
		return nil, "", errors.New("not a record kubectl fleet wrote")
	}
	sig = m.Annotations[RecordSignatureAnnotation]
	if l := m.Layers[0]; l.Data != nil {
		if d, n, err := v1.SHA256(bytes.NewReader(l.Data)); err == nil && d == l.Digest && n == l.Size {
			return l.Data, sig, nil
		}
		return nil, "", errors.New("a record whose embedded data is not its layer's")
	}
	img, err := desc.Image()
	if err != nil {
		return nil, "", err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, "", err
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	data, err = io.ReadAll(io.LimitReader(rc, MaxRecord+1))
	switch {
	case err != nil:
		return nil, "", err
	case len(data) > MaxRecord:
		return nil, "", fmt.Errorf("a record larger than %d MiB", MaxRecord>>20)
	}
	return data, sig, nil
}

// maxEmbedded is the largest record written into its manifest as well
// as its layer (the OCI descriptor's data field), so that reading it
// is one request: a history of ten revisions is a few KiB, and
// registries bound manifests at 4 MiB.
const maxEmbedded = 64 << 10

// embedded is a record's layer whose descriptor carries its data.
type embedded struct {
	v1.Layer
	data []byte
}

func (e embedded) Descriptor() (*v1.Descriptor, error) {
	d, err := e.Digest()
	if err != nil {
		return nil, err
	}
	return &v1.Descriptor{MediaType: RecordMediaType, Size: int64(len(e.data)), Digest: d, Data: e.data}, nil
}

// WriteRecord writes v as JSON under tag in app's repository, signed
// when the delivery signs (Records).
func (r Registry) WriteRecord(ctx context.Context, app, tag string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), RecordConfigMediaType)
	layer := static.NewLayer(data, RecordMediaType)
	if len(data) <= maxEmbedded {
		layer = embedded{layer, data}
	}
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: RecordMediaType})
	if err != nil {
		return err
	}
	repo, err := r.Repository(app)
	if err != nil {
		return err
	}
	if r.Records != nil {
		sig, err := r.Records.signRecord(repo.Tag(tag), data)
		if err != nil {
			return err
		}
		img = mutate.Annotations(img, map[string]string{RecordSignatureAnnotation: sig}).(v1.Image)
	}
	// Straight to its tag: a record is never shared, so no push by
	// digest and no read of it back to tag it.
	if err := remote.Write(repo.Tag(tag), img, r.options(ctx)...); err != nil {
		return fmt.Errorf("writing %s:%s: %w", repo, tag, Plain(err))
	}
	return nil
}

// WithoutRecordKeys is r for records that are not the delivery's to sign
// (approvals, which their approvers sign).
func (r Registry) WithoutRecordKeys() Registry {
	r.Records = nil
	return r
}
