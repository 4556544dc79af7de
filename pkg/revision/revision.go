// Package revision keeps every app's revision history on each cluster, in
// the cluster itself, the way Helm keeps its release records: each
// recorded apply stores the rendered objects, compressed, with when, who,
// the plugin version, the source commit and the render's digest, in a
// Secret of the kubectl-fleet namespace (renders contain Secrets), one per
// revision, or several for a render too large for one. The app's ApplySet
// parent names the current revision (inventory.Set.Revision).
package revision

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/user"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	fleetencode "github.com/kubectl-fleet/kubectl-fleet/pkg/encode"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

const (
	// SecretType is the type of the Secrets that hold revisions.
	SecretType = "fleet.kubectl.io/revision"
	// AppLabel names the app a revision Secret belongs to.
	AppLabel = "fleet.kubectl.io/app"
	// NumberLabel is the revision's number.
	NumberLabel = "fleet.kubectl.io/revision"
	// ChunkLabel marks the second and later Secrets of a large revision,
	// with their index (1, 2, …); the first Secret has none.
	ChunkLabel = "fleet.kubectl.io/chunk"
	// InfoAnnotation holds the revision's record (Revision) as JSON on
	// its first Secret.
	InfoAnnotation = "fleet.kubectl.io/revision-info"
	// ObjectsDigestAnnotation holds, on a revision's first Secret, the
	// digest of its stored objects that does not depend on the digest
	// key (Revision.ObjectsDigest).
	ObjectsDigestAnnotation = "fleet.kubectl.io/objects-digest"
	// ObjectsKey is the data key of the compressed objects (a gzipped JSON
	// array, split across the Secrets in order).
	ObjectsKey = "objects"
	// SensitiveKey is the data key, on a revision's first Secret, of the
	// values its objects hold that were decrypted from SOPS files (a JSON
	// list): printed again (render --revision), they are masked, though
	// that run decrypts nothing.
	SensitiveKey = "sensitive"
	managedBy    = "app.kubernetes.io/managed-by"
	fieldOwner   = "kubectl-fleet"
)

// DefaultLimit is how many revisions are kept per app and cluster unless
// --history-limit says otherwise.
const DefaultLimit = 10

// ChunkSize is the most compressed bytes one Secret holds (a Secret holds
// at most 1 MiB); MaxChunks is the most Secrets one revision takes. A
// larger render is recorded without its objects. Variables for tests.
var (
	ChunkSize = 768 << 10
	MaxChunks = 8
	// maxExpanded bounds the decompressed size of a stored revision, so
	// that a hostile Secret cannot exhaust memory.
	maxExpanded int64 = 512 << 20
)

var secrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Source is where a render came from, when its source is in a git work
// tree.
type Source struct {
	Commit string `json:"commit,omitempty"`
	// Dirty: the source (or the fleet file) had changes not committed.
	Dirty bool `json:"dirty,omitempty"`
	// Artifact is, for a source read from an OCI registry, the artifact
	// it was: oci://registry/repository@sha256:….
	Artifact string `json:"artifact,omitempty"`
}

// String is the commit, abbreviated, with "-dirty" when it had changes;
// "" outside git; for an OCI artifact, its repository's name and short
// digest (web@sha256:0123456789ab).
func (s Source) String() string {
	if s.Artifact != "" {
		repo, dg, _ := strings.Cut(s.Artifact, "@")
		return path.Base(repo) + "@" + dg[:min(len(dg), len("sha256:")+12)]
	}
	c := s.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if c != "" && s.Dirty {
		c += "-dirty"
	}
	return c
}

// Revision is one recorded apply of an app to a cluster.
type Revision struct {
	App    string    `json:"app"`
	Number int       `json:"revision"`
	Time   time.Time `json:"time"`
	// Version is the plugin version that recorded it.
	Version string `json:"pluginVersion"`
	// User is who applied it, as the cluster authenticated them.
	User   string `json:"user,omitempty"`
	Source Source `json:"source,omitzero"`
	// Chart is the Helm chart it was rendered from, "name@version" and,
	// when fleet.lock pins it, its archive's short digest.
	Chart string `json:"chart,omitempty"`
	// Digest identifies the rendered objects (digest.Render) under the
	// digest key KeyID names: what the ApplySet parent records.
	Digest string `json:"digest"`
	// KeyID names the digest key Digest was made with (digest.Key.ID;
	// "" for none, and in revisions recorded before it was kept).
	KeyID string `json:"keyID,omitempty"`
	// ObjectsDigest is the digest of the stored objects that does not
	// depend on the key (digest.Unkeyed: Secret values hashed in the
	// clear): loading the revision checks its objects against it,
	// whatever became of the key. It is kept in an annotation of its own
	// (ObjectsDigestAnnotation), on the Secret that holds those values,
	// and is never printed with the rest ("" in revisions recorded before
	// it was kept, or without their objects).
	ObjectsDigest string `json:"-"`
	// Objects is how many objects it has.
	Objects int `json:"objects"`
	// Description says what made it: "apply", "rollback to 3".
	Description string `json:"description,omitempty"`
	// Undid, on a revision an automatic rollback made (onFailure:
	// rollback), is the digest of the render it took away: apply and
	// reconcile leave that render alone until it changes, or
	// --retry-rolled-back.
	Undid string `json:"undid,omitempty"`
	// NotStored, when set, says why the objects were not stored: the
	// revision cannot be rolled back to.
	NotStored string `json:"notStored,omitempty"`
	// Chunks is how many Secrets hold the objects.
	Chunks int `json:"chunks,omitempty"`
	// Namespace is where the objects the render gave no namespace were
	// applied (the context's default then): a rollback puts them there
	// again, whatever the context says now (apply.Config.Namespace).
	Namespace string `json:"namespace,omitempty"`
	// Verification is whether the release passed its gates on the
	// cluster. It is kept in an annotation of its own
	// (VerificationAnnotation), written after the gates ran (with the
	// revision itself when no gate follows its apply), never in
	// InfoAnnotation.
	Verification Verification `json:"verification,omitzero"`
	// Sensitive are the values its objects hold that were decrypted from
	// SOPS files (SensitiveKey), kept beside the objects, never in an
	// annotation.
	Sensitive []string `json:"-"`
	// Artifact is, for a delivered cluster, the digest of the artifact
	// its tag pointed at for this revision (its objects are there).
	Artifact string `json:"artifact,omitempty"`
}

// SecretName is the name of a revision's first Secret.
func SecretName(app string, n int) string { return fmt.Sprintf("fleet-%s.v%d", app, n) }

func chunkName(app string, n, chunk int) string {
	if chunk == 0 {
		return SecretName(app, n)
	}
	return fmt.Sprintf("%s-%d", SecretName(app, n), chunk)
}

// ShortDigest is a digest's first 12 hex digits, with its prefix
// ("sha256:", digest.NoKey).
func ShortDigest(d string) string {
	if n := strings.IndexByte(d, ':') + 1 + 12; len(d) > n {
		return d[:n]
	}
	return d
}

// List returns an app's revisions on a cluster, oldest first, from the
// Secrets' metadata (no object is read).
func List(ctx context.Context, c *kube.Client, app string) ([]Revision, error) {
	out, _, err := ListAll(ctx, c, app)
	return out, err
}

// ListAll returns an app's revisions on a cluster, oldest first, and the
// orphans: later parts of revisions whose first Secret was never written
// (a run that died while storing it), as revisions with the number and
// the parts to remove. With the app's lock held, nobody is storing them.
func ListAll(ctx context.Context, c *kube.Client, app string) (revisions, orphans []Revision, err error) {
	list, err := c.Metadata.Resource(secrets).Namespace(inventory.Namespace).List(ctx, metav1.ListOptions{LabelSelector: AppLabel + "=" + app})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("listing the revisions of app %s: %w", app, err)
	}
	parts := map[int]int{} // revision number: parts seen
	for i := range list.Items {
		m := &list.Items[i].ObjectMeta
		if m.Labels[AppLabel] != app {
			continue
		}
		if chunk := m.Labels[ChunkLabel]; chunk != "" {
			n, err1 := strconv.Atoi(m.Labels[NumberLabel])
			i, err2 := strconv.Atoi(chunk)
			if err1 == nil && err2 == nil && n > 0 && i > 0 {
				parts[n] = max(parts[n], i+1)
			}
			continue
		}
		r, err := infoOf(m)
		if err != nil {
			return nil, nil, err
		}
		revisions = append(revisions, r)
	}
	for _, r := range revisions {
		delete(parts, r.Number)
	}
	for n, chunks := range parts {
		orphans = append(orphans, Revision{App: app, Number: n, Chunks: chunks, NotStored: "its first Secret was never written"})
	}
	sort.Slice(revisions, func(i, j int) bool { return revisions[i].Number < revisions[j].Number })
	sort.Slice(orphans, func(i, j int) bool { return orphans[i].Number < orphans[j].Number })
	return revisions, orphans, nil
}

func infoOf(m *metav1.ObjectMeta) (Revision, error) {
	var r Revision
	if err := json.Unmarshal([]byte(m.Annotations[InfoAnnotation]), &r); err != nil {
		return r, fmt.Errorf("secret %s/%s: %s is not a revision record: %w", inventory.Namespace, m.Name, InfoAnnotation, err)
	}
	n, err := strconv.Atoi(m.Labels[NumberLabel])
	if err != nil || n != r.Number {
		return r, fmt.Errorf("secret %s/%s: label %s=%q does not match its record (revision %d)", inventory.Namespace, m.Name, NumberLabel, m.Labels[NumberLabel], r.Number)
	}
	r.Verification = verificationOf(m)
	r.ObjectsDigest = m.Annotations[ObjectsDigestAnnotation]
	return r, nil
}

// ErrNotFound is returned for a revision the cluster does not have.
var ErrNotFound = errors.New("no such revision")

// Load reads revision n of an app and its objects. A revision recorded
// without its objects, or whose stored objects do not match its digest
// (verify), is an error that says so.
func Load(ctx context.Context, c *kube.Client, app string, n int) (Revision, []*unstructured.Unstructured, error) {
	ri := c.Dynamic.Resource(secrets).Namespace(inventory.Namespace)
	first, err := ri.Get(ctx, SecretName(app, n), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Revision{}, nil, fmt.Errorf("app %s has no revision %d here: %w", app, n, ErrNotFound)
	}
	if err != nil {
		return Revision{}, nil, fmt.Errorf("reading revision %d of app %s: %w", n, app, err)
	}
	meta := metav1.ObjectMeta{Name: first.GetName(), Labels: first.GetLabels(), Annotations: first.GetAnnotations()}
	r, err := infoOf(&meta)
	if err != nil {
		return r, nil, err
	}
	if r.App != app {
		return r, nil, fmt.Errorf("secret %s/%s records app %q, not %s", inventory.Namespace, first.GetName(), r.App, app)
	}
	if r.NotStored != "" {
		return r, nil, fmt.Errorf("revision %d of app %s was recorded without its objects (%s)", n, app, r.NotStored)
	}
	var compressed []byte
	for i := range max(1, r.Chunks) {
		s := first
		if i > 0 {
			if s, err = ri.Get(ctx, chunkName(app, n, i), metav1.GetOptions{}); err != nil {
				return r, nil, fmt.Errorf("reading part %d of revision %d of app %s: %w", i+1, n, app, err)
			}
		}
		part, err := dataOf(s)
		if err != nil {
			return r, nil, fmt.Errorf("revision %d of app %s, part %d: %w", n, app, i+1, err)
		}
		compressed = append(compressed, part...)
	}
	objs, err := decode(compressed)
	if err != nil {
		return r, nil, fmt.Errorf("revision %d of app %s: %w", n, app, err)
	}
	if r.Sensitive, err = sensitiveOf(first); err != nil {
		return r, nil, fmt.Errorf("revision %d of app %s: %w", n, app, err)
	}
	key, err := digest.KeyOf(ctx, c)
	if err != nil {
		return r, nil, err
	}
	if err := verify(ctx, c, r, objs, key); err != nil {
		return r, nil, fmt.Errorf("revision %d of app %s: %w", n, app, err)
	}
	return r, objs, nil
}

// verify checks the objects loaded of revision r against what it
// recorded of them, under key, the cluster's digest key now:
//
//   - Recorded with ObjectsDigest (this version on): the objects must
//     match it, whatever the key; and when r was recorded with this very
//     key (KeyID), its Digest too. A key deleted or replaced since does
//     not matter.
//   - Recorded before (no ObjectsDigest): the objects must match Digest,
//     under key, in the clear (before the key) or without Secret values
//     (by a user without the key). A render holding a Secret's values
//     recorded under a key that is gone cannot be checked: it is refused,
//     saying that the key was replaced, or cannot be read.
//
// What it protects against is accidents (a Secret edited by hand), not an
// adversary who may write the Secret, digests and all.
func verify(ctx context.Context, c *kube.Client, r Revision, objs []*unstructured.Unstructured, key digest.Key) error {
	mismatch := func(d, recorded string) error {
		return fmt.Errorf("the stored objects do not match its digest (%s, recorded %s); refusing to use them", ShortDigest(d), ShortDigest(recorded))
	}
	if r.ObjectsDigest != "" {
		if d := digest.Unkeyed(objs); d != r.ObjectsDigest {
			return mismatch(d, r.ObjectsDigest)
		}
		if r.KeyID == key.ID() && digest.Comparable(r.Digest) {
			if d := digest.Render(objs, key); d != r.Digest {
				return mismatch(d, r.Digest)
			}
		}
		return nil
	}
	d := digest.Render(objs, key)
	if d == r.Digest || digest.Unkeyed(objs) == r.Digest {
		return nil
	}
	if !digest.Keyed(objs) {
		return mismatch(d, r.Digest)
	}
	if digest.WithoutValues(objs) == r.Digest {
		return nil // recorded without the key by an earlier version
	}
	// Recorded by a version that kept no digest of the objects but this
	// one, whose Secret values are keyed: without its key it cannot be
	// checked.
	unchecked := fmt.Sprintf("recorded by plugin version %s, before revisions kept a digest of their objects that needs no key, it can only be checked with the key it was recorded with: refusing to use it (restoring that key's Secret lets it load)", cmp.Or(r.Version, "unknown"))
	if key == nil {
		return fmt.Errorf("the digest key %s/%s it was recorded with cannot be read (deleted, or not allowed); %s", digest.Namespace, digest.KeySecret, unchecked)
	}
	if made, ok := keyMade(ctx, c); ok && !r.Time.IsZero() && made.After(r.Time) {
		return fmt.Errorf("the digest key %s/%s was replaced since this revision was recorded (the key was made %s, the revision %s); %s",
			digest.Namespace, digest.KeySecret, made.UTC().Format(time.RFC3339), r.Time.UTC().Format(time.RFC3339), unchecked)
	}
	return mismatch(d, r.Digest)
}

// keyMade is when the cluster's digest key was made, from its Secret's
// metadata; false when that cannot be read.
func keyMade(ctx context.Context, c *kube.Client) (time.Time, bool) {
	m, err := c.Metadata.Resource(secrets).Namespace(digest.Namespace).Get(ctx, digest.KeySecret, metav1.GetOptions{})
	if err != nil || m.CreationTimestamp.IsZero() {
		return time.Time{}, false
	}
	return m.CreationTimestamp.Time, true
}

// dataOf returns the objects' part a revision Secret holds (its data are
// base64 in the API's JSON).
func dataOf(s *unstructured.Unstructured) ([]byte, error) {
	v, found, err := unstructured.NestedString(s.Object, "data", ObjectsKey)
	if err != nil || !found {
		return nil, fmt.Errorf("secret %s has no %s", s.GetName(), ObjectsKey)
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", s.GetName(), err)
	}
	return b, nil
}

// sensitiveOf reads a revision's SensitiveKey: nil when it has none.
func sensitiveOf(s *unstructured.Unstructured) ([]string, error) {
	v, found, err := unstructured.NestedString(s.Object, "data", SensitiveKey)
	if err != nil || !found {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(v)
	var out []string
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s: %s: %w", s.GetName(), SensitiveKey, err)
	}
	return out, nil
}

// encode compresses objs as a JSON list, and returns with it their
// digest.Unkeyed, from the same JSON (encode.AppendJSON: json.Marshal's
// bytes, without its reflection).
func encode(objs []*unstructured.Unstructured) ([]byte, string, error) {
	lines := make([][]byte, len(objs))
	for i, o := range objs {
		b, err := fleetencode.AppendJSON(nil, o.Object)
		if err != nil {
			return nil, "", err
		}
		lines[i] = b
	}
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	// A gzip.Writer keeps its first error, and Close returns it.
	_, _ = zw.Write([]byte{'['})
	for i, b := range lines {
		if i > 0 {
			_, _ = zw.Write([]byte{','})
		}
		_, _ = zw.Write(b)
	}
	_, _ = zw.Write([]byte("]\n"))
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), digest.UnkeyedJSON(lines), nil
}

// gzipWriters are encode's compressors, reused: each holds about a MiB of
// tables, and a fleet's revisions are written at once.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression) // a valid level: no error
	return zw
}}

func decode(compressed []byte) ([]*unstructured.Unstructured, error) {
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		return nil, fmt.Errorf("the stored objects are not gzip: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxExpanded+1))
	if err != nil {
		return nil, fmt.Errorf("the stored objects cannot be decompressed: %w", err)
	}
	if int64(len(raw)) > maxExpanded {
		return nil, fmt.Errorf("the stored objects expand to more than %d MiB", maxExpanded>>20)
	}
	var items []map[string]any
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("the stored objects are not a JSON list: %w", err)
	}
	out := make([]*unstructured.Unstructured, len(items))
	for i, m := range items {
		out[i] = &unstructured.Unstructured{Object: m}
	}
	return out, nil
}

// Store records r with its objects as revision r.Number: the objects'
// later parts first, the first Secret (which lists the revision) last, so
// that a revision is never listed before it is whole. A render too large
// for MaxChunks Secrets is recorded without its objects (r.NotStored says
// why). The kubectl-fleet namespace must exist. r.User, when empty, is
// filled in from the cluster (User). r.Digest must have been made with
// the cluster's digest key as c read it (digest.KeyOf, digest.Ensure):
// Store sets r.KeyID to name that key, and r.ObjectsDigest from objs.
func Store(ctx context.Context, c *kube.Client, r *Revision, objs []*unstructured.Unstructured) error {
	compressed, objectsDigest, err := encode(objs)
	if err != nil {
		return fmt.Errorf("encoding revision %d of app %s: %w", r.Number, r.App, err)
	}
	key, err := digest.KeyOf(ctx, c) // read by the apply already
	if err != nil {
		return fmt.Errorf("recording revision %d of app %s: %w", r.Number, r.App, err)
	}
	r.KeyID = key.ID()
	var parts [][]byte
	for len(compressed) > 0 {
		n := min(len(compressed), ChunkSize)
		parts = append(parts, compressed[:n])
		compressed = compressed[n:]
	}
	if len(parts) > MaxChunks {
		r.NotStored = fmt.Sprintf("the compressed render is %.1f MiB, more than %d Secrets of %d KiB hold", float64(len(parts)-1)*float64(ChunkSize)/(1<<20), MaxChunks, ChunkSize>>10)
		parts = nil
	}
	r.ObjectsDigest = ""
	if parts != nil {
		r.ObjectsDigest = objectsDigest
	}
	if r.User == "" {
		r.User = User(ctx, c)
	}
	r.Objects, r.Chunks = len(objs), len(parts)
	if r.Chunks == 1 {
		r.Chunks = 0 // the common case says nothing
	}
	record := *r
	record.Verification = Verification{}
	info, err := json.Marshal(record)
	if err != nil {
		return err
	}
	annotations := map[string]any{InfoAnnotation: string(info)}
	if r.ObjectsDigest != "" {
		annotations[ObjectsDigestAnnotation] = r.ObjectsDigest
	}
	if r.Verification.State != "" {
		// Known when the revision is recorded (no gate follows the
		// apply): one write, not two.
		v, err := json.Marshal(r.Verification.stamped())
		if err != nil {
			return err
		}
		annotations[VerificationAnnotation] = string(v)
	}
	for i := len(parts) - 1; i >= 0; i-- {
		labels := map[string]any{managedBy: fieldOwner, AppLabel: r.App, NumberLabel: strconv.Itoa(r.Number)}
		meta := map[string]any{"name": chunkName(r.App, r.Number, i), "namespace": inventory.Namespace, "labels": labels}
		data := map[string]any{ObjectsKey: parts[i]}
		if i > 0 {
			labels[ChunkLabel] = strconv.Itoa(i)
		} else {
			meta["annotations"] = annotations
			if len(r.Sensitive) > 0 {
				if data[SensitiveKey], err = json.Marshal(r.Sensitive); err != nil {
					return err
				}
			}
		}
		if err := applySecret(ctx, c, meta, data); err != nil {
			return fmt.Errorf("recording revision %d of app %s: %w", r.Number, r.App, err)
		}
	}
	if len(parts) == 0 {
		meta := map[string]any{"name": SecretName(r.App, r.Number), "namespace": inventory.Namespace,
			"labels":      map[string]any{managedBy: fieldOwner, AppLabel: r.App, NumberLabel: strconv.Itoa(r.Number)},
			"annotations": annotations}
		if err := applySecret(ctx, c, meta, nil); err != nil {
			return fmt.Errorf("recording revision %d of app %s: %w", r.Number, r.App, err)
		}
	}
	return nil
}

func applySecret(ctx context.Context, c *kube.Client, meta map[string]any, data map[string]any) error {
	s := map[string]any{"apiVersion": "v1", "kind": "Secret", "type": SecretType, "metadata": meta}
	if data != nil {
		s["data"] = data // []byte marshals as base64
	}
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	force := true
	_, err = c.Dynamic.Resource(secrets).Namespace(inventory.Namespace).Patch(ctx, meta["name"].(string), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldOwner, Force: &force})
	return err
}

// Next is the number of the next revision of an app: one more than the
// highest listed or current.
func Next(list []Revision, current int) int {
	n := current
	for _, r := range list {
		n = max(n, r.Number)
	}
	return n + 1
}

// Expired is what --history-limit deletes: the revisions of list (oldest
// first) older than the newest limit (0 keeps every one), but the current
// one.
func Expired(list []Revision, limit, current int) []Revision {
	if limit <= 0 || len(list) <= limit {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(list[:len(list)-limit]), func(r Revision) bool { return r.Number == current })
}

// Remove deletes revisions, concurrently.
func Remove(ctx context.Context, c *kube.Client, rs ...Revision) error {
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() { errs[i] = remove(ctx, c, r) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// DeleteAll deletes every revision of an app (when the app is deleted),
// orphaned parts included.
func DeleteAll(ctx context.Context, c *kube.Client, app string) error {
	list, orphans, err := ListAll(ctx, c, app)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range slices.Concat(list, orphans) {
		errs = append(errs, remove(ctx, c, r))
	}
	return errors.Join(errs...)
}

// remove deletes a revision's Secrets, the first one last.
func remove(ctx context.Context, c *kube.Client, r Revision) error {
	ri := c.Dynamic.Resource(secrets).Namespace(inventory.Namespace)
	for i := max(1, r.Chunks) - 1; i >= 0; i-- {
		if err := ri.Delete(ctx, chunkName(r.App, r.Number, i), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting revision %d of app %s: %w", r.Number, r.App, err)
		}
	}
	return nil
}

// User is who the cluster says the client is (its SelfSubjectReview), or
// "" when the cluster does not tell.
func User(ctx context.Context, c *kube.Client) string {
	if c == nil {
		return ""
	}
	gvr := schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "selfsubjectreviews"}
	review := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}}
	out, err := c.Dynamic.Resource(gvr).Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return ""
	}
	name, _, _ := unstructured.NestedString(out.Object, "status", "userInfo", "username")
	return name
}

// Publisher is who publishes to a delivered cluster, as its history and
// pauses record them: the user its context authenticates (a context
// that reads it only), else, with no context (c nil) or no answer, the
// local user, marked so (LocalUser). Nothing in a registry
// authenticates either.
func Publisher(ctx context.Context, c *kube.Client) string {
	if u := User(ctx, c); u != "" {
		return u
	}
	return LocalUser()
}

// PublisherOf is Publisher for delivered cluster c, read through its
// context (conn) when it has one.
func PublisherOf(ctx context.Context, conn kube.Connector, f *fleet.Fleet, c *fleet.Cluster) string {
	return cmp.Or(UserOf(ctx, conn, f, c), LocalUser())
}

// UserOf is who delivered cluster c's context authenticates (a context
// that reads it only), read through conn; "" when it has no context or
// the cluster does not tell.
func UserOf(ctx context.Context, conn kube.Connector, f *fleet.Fleet, c *fleet.Cluster) string {
	if !c.Observed() {
		return ""
	}
	client, err := conn.Connect(ctx, f, c)
	if err != nil {
		return ""
	}
	return User(ctx, client)
}

// LocalUser is the user of this machine, which nothing authenticates:
// "alice (local user)".
func LocalUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username + " (local user)"
	}
	return "unknown (local user)"
}
