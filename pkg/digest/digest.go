// Package digest identifies renders and objects by digests that are safe
// to keep where anyone who may read ConfigMaps can see them (an app's
// ApplySet parent) and in plan files: a Secret's values enter a digest only
// as an HMAC keyed by the cluster's digest key, a random key kept in the
// Secret kubectl-fleet/fleet-digest-key. A reader of the digest who may
// not read that Secret cannot test guesses of a password against it; one
// who may could read the revisions, which hold the values, anyway.
//
// Without the key nothing that holds a Secret's values compares equal: a
// digest that left them out would call a rotated password unchanged.
// Such an object's digest is "", such a render's a random NoKey digest.
package digest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/encode"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

const (
	// Namespace holds the key, beside the apps' inventories.
	Namespace = "kubectl-fleet"
	// KeySecret is the name of the Secret that holds the cluster's key.
	KeySecret = "fleet-digest-key"
	// keyField is the key's field in the Secret's data.
	keyField = "key"
)

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Key keys the HMAC of Secret values. Without one (nil: a cluster whose
// key cannot be read, an offline render) a Secret's values cannot enter a
// digest: Object and Render then give digests equal to none (NoKey).
type Key []byte

// ID names the key in what is recorded with it (a revision says which key
// its digest was made with): the first 8 bytes of a SHA-256 of the key,
// in hex, which tell nothing of it. "" for no key.
func (k Key) ID() string {
	if k == nil {
		return ""
	}
	sum := sha256.Sum256(append([]byte("kubectl-fleet digest key ID\x00"), k...))
	return hex.EncodeToString(sum[:8])
}

// KeyOf reads the cluster's key, once per client: nil when there is none
// yet, or when the user may not read it.
func KeyOf(ctx context.Context, c *kube.Client) (Key, error) {
	k, err := c.DigestKey.Get(func() ([]byte, error) { return read(ctx, c) })
	return Key(k), err
}

func read(ctx context.Context, c *kube.Client) ([]byte, error) {
	s, err := c.Dynamic.Resource(secretsGVR).Namespace(Namespace).Get(ctx, KeySecret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the digest key %s/%s: %w", Namespace, KeySecret, err)
	}
	return keyIn(s)
}

func keyIn(s *unstructured.Unstructured) ([]byte, error) {
	enc, _, _ := unstructured.NestedString(s.Object, "data", keyField)
	var k []byte
	if err := json.Unmarshal([]byte(`"`+enc+`"`), &k); err != nil || len(k) < 16 {
		return nil, fmt.Errorf("the digest key %s/%s holds no key of 16 bytes or more in data.%s", Namespace, KeySecret, keyField)
	}
	return k, nil
}

// Ensure returns the cluster's key, creating it (and its namespace) when
// there is none: what a real apply does before it records any digest. A
// user who may not read or create it gets nil, and digests without Secret
// values.
func Ensure(ctx context.Context, c *kube.Client, fieldManager string) (Key, error) {
	if k, err := KeyOf(ctx, c); k != nil || err != nil {
		return k, err
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": KeySecret, "namespace": Namespace, "labels": map[string]any{"app.kubernetes.io/managed-by": "kubectl-fleet"}},
		"data":     map[string]any{keyField: k},
	}}
	b, err := json.Marshal(secret.Object) // []byte marshals as base64, as data wants
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &secret.Object); err != nil {
		return nil, err
	}
	ri := c.Dynamic.Resource(secretsGVR).Namespace(Namespace)
	created, err := ri.Create(ctx, secret, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		if err := c.EnsureNamespace(ctx, Namespace, fieldManager); err != nil {
			return nil, fmt.Errorf("creating namespace %s for the digest key: %w", Namespace, err)
		}
		created, err = ri.Create(ctx, secret, metav1.CreateOptions{FieldManager: fieldManager})
	}
	switch {
	case apierrors.IsAlreadyExists(err):
		// Another run made it meanwhile: theirs is the key.
		created, err = ri.Get(ctx, KeySecret, metav1.GetOptions{})
	case apierrors.IsForbidden(err):
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("creating the digest key %s/%s: %w", Namespace, KeySecret, err)
	}
	kb, err := keyIn(created)
	if err != nil {
		return nil, err
	}
	c.DigestKey.Set(kb)
	return kb, nil
}

// NoKey begins the digest Render gives, without a key, a render holding
// a Secret's values: random after it, so that it equals no other digest,
// not even the next one of the same render. Nothing is skipped as
// unchanged, and nothing is taken for a render it may not be.
const NoKey = "nokey:"

// Comparable reports whether a render's digest d may be compared with
// another: not a NoKey digest.
func Comparable(d string) bool { return !strings.HasPrefix(d, NoKey) }

// Render identifies a render: the SHA-256 of its objects' JSON (Secret
// values keyed), in an order of their own, so that the same objects in
// another order have the same digest. Without a key, a render holding a
// Secret's values gets a NoKey digest instead, equal to none.
func Render(objs []*unstructured.Unstructured, key Key) string {
	if key == nil && Keyed(objs) {
		b := make([]byte, 32)
		_, _ = rand.Read(b) // never fails (crypto/rand)
		return NoKey + hex.EncodeToString(b)
	}
	return render(objs, func(o *unstructured.Unstructured) *unstructured.Unstructured { return hashable(o, key) })
}

// Keyed reports whether a render's digest depends on the key: it holds a
// core Secret with values.
func Keyed(objs []*unstructured.Unstructured) bool {
	return slices.ContainsFunc(objs, hasValues)
}

// Unkeyed is a render's digest with Secret values hashed in the clear, as
// versions before the digest key computed it. A revision keeps it, in its
// own Secret, as the digest of its objects that does not depend on the
// key (whoever reads it can read the values it hashes): loading the
// revision checks the objects against it, whatever became of the key.
// Never kept where the Secrets it hashes cannot be read.
func Unkeyed(objs []*unstructured.Unstructured) string {
	return render(objs, func(o *unstructured.Unstructured) *unstructured.Unstructured { return o })
}

// WithoutValues is a render's digest as versions before this one computed
// it without a key: Secret values left out. Revisions recorded then by a
// user who could not read the key are checked against it. Never kept
// anywhere new, and never compared with a render's: a Secret whose values
// changed keeps it.
func WithoutValues(objs []*unstructured.Unstructured) string {
	return render(objs, func(o *unstructured.Unstructured) *unstructured.Unstructured { return hashable(o, nil) })
}

// UnkeyedJSON is Unkeyed of objects already marshalled, each the JSON
// of its map (json.Marshal of Object): for a caller that marshals them
// anyway (a revision, to store them).
func UnkeyedJSON(objs [][]byte) string {
	return sum(slices.Clone(objs))
}

func render(objs []*unstructured.Unstructured, hashed func(*unstructured.Unstructured) *unstructured.Unstructured) string {
	buf := buffers.Get().(*[]byte)
	defer put(buf)
	b, ends := (*buf)[:0], make([]int, 0, len(objs)) // every line in one buffer
	for _, o := range objs {
		n := len(b)
		var err error
		if b, err = encode.AppendJSON(b, hashed(o).Object); err != nil { // json.Marshal's bytes: keys sorted
			b = fmt.Appendf(b[:n], "%q", object.Path(o))
		}
		ends = append(ends, len(b))
	}
	*buf = b
	lines := make([][]byte, len(ends))
	for i, end := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		lines[i] = b[start:end:end]
	}
	return sum(lines)
}

// buffers hold the JSON digests hash: a 1,000-cluster no-op encodes
// each of its 100,000 objects twice (its render's digest, its own), and
// growing a buffer each time was a tenth of what it allocated.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// put returns buf to buffers, unless it grew past what is worth keeping.
func put(buf *[]byte) {
	if cap(*buf) <= 4<<20 {
		*buf = (*buf)[:0]
		buffers.Put(buf)
	}
}

// sum is the digest of objects' JSON lines, sorted in place.
func sum(lines [][]byte) string {
	slices.SortFunc(lines, bytes.Compare)
	h := sha256.New()
	for _, l := range lines {
		h.Write(l)
		h.Write([]byte{'\n'})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Object identifies an object as apply sends it (Secret values keyed):
// what the ApplySet parent records of each member. Without a key, a
// Secret with values has none: "", which inventory.Set.Unchanged never
// takes for unchanged.
func Object(obj *unstructured.Unstructured, key Key) string {
	if key == nil && hasValues(obj) {
		return ""
	}
	buf := buffers.Get().(*[]byte)
	defer put(buf)
	b, err := encode.AppendJSON((*buf)[:0], hashable(obj, key).Object) // json.Marshal's bytes, without reflection
	*buf = b
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// secretFields are the fields of a core Secret that hold its values.
var secretFields = []string{"data", "stringData"}

// hasValues reports whether obj is a core Secret with values in its data
// or stringData.
func hasValues(obj *unstructured.Unstructured) bool {
	if obj.GetKind() != "Secret" || obj.GroupVersionKind().Group != "" {
		return false
	}
	for _, field := range secretFields {
		if values, ok := obj.Object[field].(map[string]any); ok && len(values) > 0 {
			return true
		}
	}
	return false
}

// hashable is obj as digests see it: a core Secret's data and stringData
// values replaced by their HMAC under key ("" without a key, as
// WithoutValues wants).
func hashable(obj *unstructured.Unstructured, key Key) *unstructured.Unstructured {
	if !hasValues(obj) {
		return obj
	}
	out := obj.DeepCopy()
	for _, field := range secretFields {
		values, ok := out.Object[field].(map[string]any)
		if !ok {
			continue
		}
		for k, v := range values {
			values[k] = key.mac(field, k, fmt.Sprint(v))
		}
	}
	return out
}

// mac is the keyed HMAC-SHA256 of a Secret's value, bound to its field
// and key; "" without a key.
func (k Key) mac(field, name, value string) string {
	if k == nil {
		return ""
	}
	h := hmac.New(sha256.New, k)
	fmt.Fprintf(h, "%s\x00%s\x00%s", field, name, value)
	return "hmac-sha256:" + hex.EncodeToString(h.Sum(nil))
}
