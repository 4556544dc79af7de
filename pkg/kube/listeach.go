package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	kjson "sigs.k8s.io/json"
)

// Fields says what ListEach decodes of each object.
type Fields int

const (
	// AllFields decodes each object whole.
	AllFields Fields = iota
	// NoManagedFields leaves out each object's metadata.managedFields,
	// skipped as they are read, never decoded: the field managers' field
	// sets, a small map for each field each manager set, are most of
	// what decoding a listed Deployment allocates, and only taking an
	// object out of an app reads them (inventory.Set.Release).
	NoManagedFields
	// HealthFields leaves out, besides, what no health rule reads
	// (object.Health: kstatus's rules read metadata, status and scalars
	// of spec): the pod templates of workloads (spec.template,
	// spec.jobTemplate) and the contents of ConfigMaps and Secrets (data,
	// binaryData, stringData), which a status so never holds in memory.
	HealthFields
)

// ListEach lists m's objects in namespace ("" for cluster-scoped or all)
// that selector selects, and hands each to each as it is decoded from the
// response, in the list's order: the list is never held whole, neither
// as the response's bytes nor decoded, unless each keeps what it is
// given. A 1,000-cluster status lists every cluster's members at the same
// moment, and held them all, decoded whole, until each app's last list
// was read.
//
// each is called from one goroutine at a time per call. A list the server
// answers with a body that is not a list (no items) is an error, not an
// empty list: what is not read is not taken for absent.
func (c *Client) ListEach(ctx context.Context, m *meta.RESTMapping, namespace, selector string, fields Fields, each func(*unstructured.Unstructured)) error {
	if c.Lists == nil {
		return fmt.Errorf("listing %s: the client has no REST client for lists (kube.NewListsClient)", m.Resource.Resource)
	}
	path := []string{"api"}
	if g := m.Resource.Group; g != "" {
		path = []string{"apis", g}
	}
	path = append(path, m.Resource.Version)
	if m.Scope.Name() == meta.RESTScopeNameNamespace && namespace != "" {
		path = append(path, "namespaces", namespace)
	}
	req := c.Lists.Get().AbsPath(append(path, m.Resource.Resource)...)
	if selector != "" {
		req = req.Param("labelSelector", selector)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = body.Close() }()
	if err := decodeItems(body, m.GroupVersionKind, fields, each); err != nil {
		return fmt.Errorf("reading the list of %s: %w", m.Resource.Resource, err)
	}
	return nil
}

// NewListsClient is the REST client of ListEach (Client.Lists) for cfg,
// over hc: JSON, which decodes into unstructured objects, as the dynamic
// client's.
func NewListsClient(cfg *rest.Config, hc *http.Client) (rest.Interface, error) {
	lc := dynamic.ConfigFor(cfg)
	lc.AcceptContentTypes, lc.ContentType = "application/json", "application/json"
	return rest.UnversionedRESTClientForConfigAndClient(lc, hc)
}

// decodeItems decodes a list's items from r one at a time, as
// unstructured objects (numbers as int64 where they are integers, as the
// dynamic client decodes them), and hands each to each. An item without
// a type has the list's: gvk, which the list was asked in.
func decodeItems(r io.Reader, gvk schema.GroupVersionKind, fields Fields, each func(*unstructured.Unstructured)) error {
	dec := kjson.NewDecoderCaseSensitivePreserveInts(r)
	if err := expect(dec, '{'); err != nil {
		return err
	}
	items := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		if key != "items" {
			if err := dec.Decode(&skipped{}); err != nil {
				return err
			}
			continue
		}
		if items {
			return fmt.Errorf("the list has its items twice")
		}
		items = true
		if err := decodeArray(dec, gvk, fields, each); err != nil {
			return err
		}
	}
	if err := expect(dec, '}'); err != nil {
		return err
	}
	if !items {
		return fmt.Errorf("the answer is not a list: it has no items")
	}
	return nil
}

// decodeArray decodes the items' array (null: none).
func decodeArray(dec kjson.Decoder, gvk schema.GroupVersionKind, fields Fields, each func(*unstructured.Unstructured)) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if !isDelim(tok, '[') {
		return fmt.Errorf("the list's items are not an array")
	}
	for dec.More() {
		obj, err := decodeItem(dec, fields)
		if err != nil {
			return err
		}
		if obj == nil {
			return fmt.Errorf("the list holds a null item")
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" && u.GetAPIVersion() == "" {
			u.SetAPIVersion(gvk.GroupVersion().String())
			u.SetKind(gvk.Kind)
		}
		each(u)
	}
	return expect(dec, ']')
}

// leftOut are the fields each Fields leaves out, by the object they are
// in: "" for the top level.
var leftOut = map[Fields]map[string][]string{
	NoManagedFields: {"metadata": {"managedFields"}},
	HealthFields:    {"": {"data", "binaryData", "stringData"}, "metadata": {"managedFields"}, "spec": {"template", "jobTemplate"}},
}

// decodeItem decodes one item (nil for null): whole, or key by key,
// skipping the fields fields leaves out as they are read.
func decodeItem(dec kjson.Decoder, fields Fields) (map[string]any, error) {
	out, ok := leftOut[fields]
	if !ok {
		var obj map[string]any
		return obj, dec.Decode(&obj)
	}
	return decodeObject(dec, func(key string) (any, bool, error) {
		if slices.Contains(out[""], key) {
			return nil, true, dec.Decode(&skipped{})
		}
		names, ok := out[key]
		if !ok {
			return nil, false, nil
		}
		v, err := decodeObject(dec, func(key string) (any, bool, error) {
			if !slices.Contains(names, key) {
				return nil, false, nil
			}
			return nil, true, dec.Decode(&skipped{})
		})
		if v == nil && err == nil {
			return nil, true, nil // null: left out, as nothing reads it
		}
		return v, true, err
	})
}

// skipped is a JSON value read and dropped: the decoder hands it its
// text, a slice of its own buffer, and nothing is allocated for it.
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

// decodeObject decodes an object (nil for null) key by key: special
// decodes a key's value itself when it says so (done), a nil value
// leaving the key out; any other value is decoded whole.
func decodeObject(dec kjson.Decoder, special func(key string) (v any, done bool, err error)) (map[string]any, error) {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return nil, err
	}
	if !isDelim(tok, '{') {
		return nil, fmt.Errorf("expected an object, read %v", tok)
	}
	obj := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		v, done, err := special(key)
		switch {
		case err != nil:
			return nil, err
		case !done:
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
			obj[key] = v
		case v != nil:
			obj[key] = v
		}
	}
	return obj, expect(dec, '}')
}

// expect reads the delimiter d.
func expect(dec kjson.Decoder, d rune) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if !isDelim(tok, d) {
		return fmt.Errorf("expected %q, read %v", d, tok)
	}
	return nil
}

// isDelim reports whether tok is the delimiter d. The decoder's
// delimiters are of its own type, a rune with a String method; no other
// token has one (strings are strings).
func isDelim(tok any, d rune) bool {
	s, ok := tok.(fmt.Stringer)
	return ok && s.String() == string(d)
}
