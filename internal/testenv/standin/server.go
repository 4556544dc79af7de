package standin

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv/serverside"
)

// server is one cluster's API.
type server struct {
	token string
	disc  *discovery
	store *store
	// requests counts every request answered, by kind (Counts).
	requests [nKinds]atomic.Int64
}

// A request kind, for Counts.
const (
	kindDiscovery = iota
	kindGet
	kindList
	kindCreate
	kindUpdate
	kindPatch
	kindDelete
	kindOther
	nKinds
)

var kindNames = [nKinds]string{"discovery", "get", "list", "create", "update", "patch", "delete", "other"}

// compressAbove is the size from which kube-apiserver gzips a response
// to a client that accepts it (its APIResponseCompression).
const compressAbove = 128 * 1024

var (
	metaScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		metav1.AddMetaToScheme(s) //nolint:errcheck // registers types only
		return s
	}()
	protoSerializer = protobuf.NewSerializer(metaScheme, metaScheme)
	// builtin decodes the built-in kinds kube-apiserver answers in
	// protobuf; builtinProto encodes them.
	builtin      = serializer.NewCodecFactory(clientgoscheme.Scheme)
	builtinProto = protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme)
)

func (s *server) count(kind int) { s.requests[kind].Add(1) }

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		s.count(kindOther)
		writeError(w, r, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	res, ns, name, done := s.route(w, r)
	if done {
		return
	}
	if err := s.serveResource(w, r, res, ns, name); err != nil {
		writeError(w, r, err)
	}
}

// route answers the paths that are not a resource's (health, version,
// discovery, unknown ones: done), and reads a resource's path into the
// resource, its namespace and the object's name ("" for the collection).
func (s *server) route(w http.ResponseWriter, r *http.Request) (res *resource, ns, name string, done bool) {
	path := strings.Trim(r.URL.Path, "/")
	switch path {
	case "healthz", "readyz", "livez":
		s.count(kindOther)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
		return nil, "", "", true
	case "version", "api", "apis":
		s.count(kindDiscovery)
		s.disc.serve(w, r, path)
		return nil, "", "", true
	}
	parts := strings.Split(path, "/")
	var gv schema.GroupVersion
	var rest []string
	switch {
	case parts[0] == "api" && len(parts) >= 2:
		gv, rest = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case parts[0] == "apis" && len(parts) >= 3:
		gv, rest = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	case parts[0] != "apis" || len(parts) != 2:
		s.count(kindOther)
		writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, ""))
		return nil, "", "", true
	}
	if len(rest) == 0 { // a group's or a group version's discovery
		s.count(kindDiscovery)
		s.disc.serve(w, r, path)
		return nil, "", "", true
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		if res := s.disc.resource(gv.WithResource(rest[2])); res != nil && res.namespaced {
			ns, rest = rest[1], rest[2:]
		}
	}
	res = s.disc.resource(gv.WithResource(rest[0]))
	if res == nil || len(rest) > 2 || res.namespaced != (ns != "") && !(res.namespaced && len(rest) == 1 && r.Method == http.MethodGet) {
		s.count(kindOther)
		writeError(w, r, apierrors.NewNotFound(gv.WithResource(rest[0]).GroupResource(), ""))
		return nil, "", "", true
	}
	if len(rest) == 2 {
		name = rest[1]
	}
	return res, ns, name, false
}

// serveResource answers a request for a resource's collection or object.
func (s *server) serveResource(w http.ResponseWriter, r *http.Request, res *resource, ns, name string) error {
	q := r.URL.Query()
	dryRun := slices.Contains(q["dryRun"], metav1.DryRunAll)
	k := objKey{res.gvr.GroupResource(), ns, name}
	switch {
	case r.Method == http.MethodGet && name != "":
		s.count(kindGet)
		return s.get(w, r, res, k)
	case r.Method == http.MethodGet && q.Get("watch") == "true":
		s.count(kindOther)
		return apierrors.NewMethodNotSupported(res.gvr.GroupResource(), "watch")
	case r.Method == http.MethodGet:
		s.count(kindList)
		return s.list(w, r, res, ns)
	case r.Method == http.MethodPost && name == "":
		s.count(kindCreate)
		return s.create(w, r, res, ns, dryRun)
	case r.Method == http.MethodPut && name != "":
		s.count(kindUpdate)
		return s.update(w, r, res, k, dryRun)
	case r.Method == http.MethodPatch && name != "":
		s.count(kindPatch)
		return s.patch(w, r, res, k, dryRun)
	case r.Method == http.MethodDelete && name != "":
		s.count(kindDelete)
		return s.delete(w, r, res, k, dryRun)
	}
	s.count(kindOther)
	return apierrors.NewMethodNotSupported(res.gvr.GroupResource(), strings.ToLower(r.Method))
}

// get answers one object, whole or its metadata only.
func (s *server) get(w http.ResponseWriter, r *http.Request, res *resource, k objKey) error {
	o := s.store.get(k)
	if o == nil {
		return apierrors.NewNotFound(k.gr, k.name)
	}
	return writeObject(w, r, o)
}

// list answers the objects of res in ns (all namespaces when ""), whole
// or their metadata only, filtered by the label and field selectors.
func (s *server) list(w http.ResponseWriter, r *http.Request, res *resource, ns string) error {
	q := r.URL.Query()
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	items, rv := s.store.list(res.gvr.GroupResource(), ns, func(o *stored) bool {
		return ls.Matches(labels.Set(o.meta.Labels)) && fs.Matches(fields.Set{"metadata.name": o.meta.Name, "metadata.namespace": o.meta.Namespace})
	})
	if accept := r.Header.Get("Accept"); strings.Contains(accept, "as=PartialObjectMetadataList") {
		list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: make([]metav1.PartialObjectMetadata, len(items))}
		for i, o := range items {
			list.Items[i] = metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: o.meta}
		}
		list.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList"))
		return writeMeta(w, r, list, "PartialObjectMetadataList")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"apiVersion":%q,"items":[`, res.gvr.GroupVersion().String())
	for i, o := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(o.json)
	}
	fmt.Fprintf(&b, `],"kind":%q,"metadata":{"resourceVersion":%q}}`, res.kind+"List", rv)
	writeWhole(w, r, http.StatusOK, b.Bytes())
	return nil
}

// create makes an object (name or generateName), or answers a review.
func (s *server) create(w http.ResponseWriter, r *http.Request, res *resource, ns string, dryRun bool) error {
	obj, err := readObject(r)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	if review := reviewed(res, u); review != nil {
		writeJSON(w, r, http.StatusCreated, review)
		return nil
	}
	if err := checkNamespace(u, ns); err != nil {
		return err
	}
	if u.GetName() == "" && u.GetGenerateName() != "" {
		u.SetName(u.GetGenerateName() + randomSuffix())
	}
	if u.GetName() == "" {
		return apierrors.NewBadRequest("name or generateName is required")
	}
	k := objKey{res.gvr.GroupResource(), ns, u.GetName()}
	if s.store.get(k) != nil {
		return apierrors.NewAlreadyExists(k.gr, k.name)
	}
	clearServerFields(u)
	fm, err := fieldManager(res)
	if err != nil {
		return err
	}
	next := fm.UpdateNoErrors(emptyObject(res, ns, u.GetName()), u, manager(r))
	o, err := s.store.write(res, k, nil, next.(*unstructured.Unstructured).Object, dryRun)
	if err != nil {
		return err
	}
	return writeStored(w, r, http.StatusCreated, o)
}

// update replaces an object, if its resourceVersion (when given) is the
// stored one.
func (s *server) update(w http.ResponseWriter, r *http.Request, res *resource, k objKey, dryRun bool) error {
	obj, err := readObject(r)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	if err := checkNamespace(u, k.namespace); err != nil {
		return err
	}
	if u.GetName() != k.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", u.GetName(), k.name))
	}
	live := s.store.get(k)
	if live == nil {
		return apierrors.NewNotFound(k.gr, k.name)
	}
	if rv := u.GetResourceVersion(); rv != "" && rv != live.meta.ResourceVersion {
		return conflict(k)
	}
	clearServerFields(u)
	fm, err := fieldManager(res)
	if err != nil {
		return err
	}
	liveObj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(live.obj)}
	next := fm.UpdateNoErrors(liveObj, u, manager(r))
	o, err := s.store.write(res, k, live, next.(*unstructured.Unstructured).Object, dryRun)
	if err != nil {
		return err
	}
	return writeStored(w, r, http.StatusOK, o)
}

// patch applies a server-side apply (creating the object if missing) or
// a JSON merge patch.
func (s *server) patch(w http.ResponseWriter, r *http.Request, res *resource, k objKey, dryRun bool) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	fm, err := fieldManager(res)
	if err != nil {
		return err
	}
	live := s.store.get(k)
	var liveObj *unstructured.Unstructured
	if live != nil {
		liveObj = &unstructured.Unstructured{Object: runtime.DeepCopyJSON(live.obj)}
	}
	var next runtime.Object
	status := http.StatusOK
	switch ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); ct {
	case "application/apply-patch+yaml", "application/apply-patch+cbor":
		q := r.URL.Query()
		mgr := q.Get("fieldManager")
		if mgr == "" {
			return apierrors.NewBadRequest("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")
		}
		js, err := yaml.YAMLToJSON(body)
		if err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(js, &obj); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		applied := &unstructured.Unstructured{Object: obj}
		if err := checkNamespace(applied, k.namespace); err != nil {
			return err
		}
		if applied.GetName() != k.name {
			return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", applied.GetName(), k.name))
		}
		if applied.GetResourceVersion() != "" && live != nil && applied.GetResourceVersion() != live.meta.ResourceVersion {
			return conflict(k)
		}
		delete(obj, "status")
		if liveObj == nil {
			liveObj, status = emptyObject(res, k.namespace, k.name), http.StatusCreated
		}
		if next, err = fm.Apply(liveObj, applied, mgr, q.Get("force") == "true"); err != nil {
			return err
		}
	case "application/merge-patch+json", "application/strategic-merge-patch+json":
		if live == nil {
			return apierrors.NewNotFound(k.gr, k.name)
		}
		var patch any
		if err := utiljson.Unmarshal(body, &patch); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		merged, ok := mergePatch(runtime.DeepCopyJSON(live.obj), patch).(map[string]any)
		if !ok {
			return apierrors.NewBadRequest("a merge patch of an object must be an object")
		}
		u := &unstructured.Unstructured{Object: merged}
		if rv := u.GetResourceVersion(); rv != live.meta.ResourceVersion {
			if rv != "" {
				return conflict(k)
			}
		}
		next = fm.UpdateNoErrors(liveObj, u, manager(r))
	default:
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType, Message: "the body of the request was in an unknown format: " + r.Header.Get("Content-Type")}}
	}
	o, err := s.store.write(res, k, live, next.(*unstructured.Unstructured).Object, dryRun)
	if err != nil {
		return err
	}
	return writeStored(w, r, status, o)
}

// delete removes an object if its preconditions hold.
func (s *server) delete(w http.ResponseWriter, r *http.Request, res *resource, k objKey, dryRun bool) error {
	var opts metav1.DeleteOptions
	if body, err := io.ReadAll(r.Body); err == nil && len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	dryRun = dryRun || slices.Contains(opts.DryRun, metav1.DryRunAll)
	live := s.store.get(k)
	if live == nil {
		return apierrors.NewNotFound(k.gr, k.name)
	}
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != live.meta.UID {
			return apierrors.NewConflict(k.gr, k.name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, live.meta.UID))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != live.meta.ResourceVersion {
			return apierrors.NewConflict(k.gr, k.name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", *p.ResourceVersion, live.meta.ResourceVersion))
		}
	}
	o, err := s.store.remove(k, live, dryRun)
	if err != nil {
		return err
	}
	if o.meta.DeletionTimestamp != nil { // a Namespace, being deleted
		return writeStored(w, r, http.StatusOK, o)
	}
	writeJSON(w, r, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
		Details: &metav1.StatusDetails{Name: k.name, Group: k.gr.Group, Kind: k.gr.Resource, UID: o.meta.UID}})
	return nil
}

// reviewed answers the reviews a client creates about itself, which are
// not stored: nil for any other kind.
func reviewed(res *resource, u *unstructured.Unstructured) map[string]any {
	switch res.gvr.GroupResource() {
	case schema.GroupResource{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:
		u.Object["status"] = map[string]any{"userInfo": map[string]any{"username": "admin", "uid": "admin-uid", "groups": []any{"system:masters", "system:authenticated"}}}
	case schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:
		u.Object["status"] = map[string]any{"allowed": true, "reason": ""}
	case schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:
		u.Object["status"] = map[string]any{"resourceRules": []any{map[string]any{"verbs": []any{"*"}, "apiGroups": []any{"*"}, "resources": []any{"*"}}}, "nonResourceRules": []any{}, "incomplete": false}
	default:
		return nil
	}
	u.SetAPIVersion(res.gvr.GroupVersion().String())
	u.SetKind(res.kind)
	u.SetCreationTimestamp(metav1.Time{})
	return u.Object
}

// checkNamespace puts u in the namespace of its URL: BadRequest if it
// names another.
func checkNamespace(u *unstructured.Unstructured, ns string) error {
	if got := u.GetNamespace(); got != "" && got != ns {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	u.SetNamespace(ns)
	return nil
}

// clearServerFields drops what only the server sets.
func clearServerFields(u *unstructured.Unstructured) {
	u.SetManagedFields(nil)
	u.SetUID("")
	u.SetCreationTimestamp(metav1.Time{})
	u.SetDeletionTimestamp(nil)
	u.SetGeneration(0)
}

func emptyObject(res *resource, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(res.gvk())
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// manager is the field manager of a create, update or merge patch: the
// fieldManager parameter, else the client's name from its User-Agent.
func manager(r *http.Request) string {
	if m := r.URL.Query().Get("fieldManager"); m != "" {
		return m
	}
	ua, _, _ := strings.Cut(r.Header.Get("User-Agent"), "/")
	if ua == "" {
		ua = "unknown"
	}
	return ua
}

func conflict(k objKey) error {
	return apierrors.NewConflict(k.gr, k.name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

// mergePatch is RFC 7386's JSON merge patch of patch onto target.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

func randomSuffix() string {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}

// readObject decodes a request's JSON object.
func readObject(r *http.Request) (map[string]any, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(body, &obj); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return obj, nil
}

func fieldManager(res *resource) (*managedfields.FieldManager, error) {
	return serverside.FieldManager(res.gvk())
}

// writeStored answers a stored object, whole or its metadata only.
func writeStored(w http.ResponseWriter, r *http.Request, code int, o *stored) error {
	if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
		m := &metav1.PartialObjectMetadata{ObjectMeta: o.meta}
		m.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
		return writeMetaCode(w, r, code, m, "PartialObjectMetadata")
	}
	writeWhole(w, r, code, o.json)
	return nil
}

// writeWhole answers an object or a list, whole, given as JSON: in
// protobuf when the client prefers it and the kind is built in, as
// kube-apiserver does (client-go's typed clients, the plugin's Core,
// ask for it), else in JSON.
func writeWhole(w http.ResponseWriter, r *http.Request, code int, b []byte) {
	if strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
		if obj, _, err := builtin.UniversalDeserializer().Decode(b, nil, nil); err == nil {
			var pb bytes.Buffer
			if err := builtinProto.Encode(obj, &pb); err == nil {
				writeBody(w, r, code, runtime.ContentTypeProtobuf, pb.Bytes())
				return
			}
		}
	}
	writeBody(w, r, code, "application/json", b)
}

func writeObject(w http.ResponseWriter, r *http.Request, o *stored) error {
	return writeStored(w, r, http.StatusOK, o)
}

func writeMeta(w http.ResponseWriter, r *http.Request, obj runtime.Object, kind string) error {
	return writeMetaCode(w, r, http.StatusOK, obj, kind)
}

// writeMetaCode answers metadata in protobuf when the client prefers it
// (the metadata client does), as kube-apiserver does, else in JSON.
func writeMetaCode(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object, kind string) error {
	if strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
		var b bytes.Buffer
		if err := protoSerializer.Encode(obj, &b); err != nil {
			return apierrors.NewInternalError(err)
		}
		writeBody(w, r, code, runtime.ContentTypeProtobuf+";as="+kind+";g=meta.k8s.io;v=v1", b.Bytes())
		return nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	writeBody(w, r, code, "application/json;as="+kind+";g=meta.k8s.io;v=v1", b)
	return nil
}

func writeJSON(w http.ResponseWriter, r *http.Request, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`)
	}
	writeBody(w, r, code, "application/json", b)
}

// writeError answers err as a Status.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	s := serverside.Status(err)
	writeJSON(w, r, int(s.Code), &s)
}

// writeBody writes a response, gzipped as kube-apiserver does when large.
func writeBody(w http.ResponseWriter, r *http.Request, code int, contentType string, b []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Audit-Id", "standin")
	if len(b) >= compressAbove && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Vary", "Accept-Encoding")
		w.WriteHeader(code)
		gz, _ := gzip.NewWriterLevel(w, gzip.DefaultCompression)
		_, _ = gz.Write(b)
		_ = gz.Close()
		return
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// sortStored orders objects by namespace and name, as etcd lists them.
func sortStored(os []*stored) {
	slices.SortFunc(os, func(a, b *stored) int {
		if c := strings.Compare(a.meta.Namespace, b.meta.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.meta.Name, b.meta.Name)
	})
}
