package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// parseDocuments splits a YAML or JSON stream into objects; Lists are
// expanded into their items and empty documents skipped. Every error names
// its document ("document 2: …"); each object's source is its document
// ("document 2", "document 2 item 0"). No document's aliases may expand it
// past max bytes (see checkAliases).
func parseDocuments(data []byte, max int64) ([]rawObject, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []rawObject
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if err := checkAliases(doc, max); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		objs, err := parseDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		for j := range objs {
			objs[j].source = fmt.Sprintf("document %d%s", i, objs[j].source)
		}
		out = append(out, objs...)
	}
}

// parseDocument parses one YAML or JSON document holding an object or a
// List; an empty document holds nothing.
func parseDocument(doc []byte) ([]rawObject, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	return fromJSON(j, doc)
}

// fromJSON turns a JSON object into objects; null and {} hold nothing.
// text is the object's source, looked at for "${"; items of a List are
// looked at on their own, and their source is " item N".
func fromJSON(j []byte, text []byte) ([]rawObject, error) {
	var v any
	if err := utiljson.Unmarshal(j, &v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	switch {
	case v == nil || ok && len(m) == 0:
		return nil, nil
	case !ok:
		return nil, fmt.Errorf("want a Kubernetes object (a mapping), got %s", typeName(v))
	}
	obj := &unstructured.Unstructured{Object: m}
	if err := checkObject(obj); err != nil {
		return nil, err
	}
	if !obj.IsList() {
		return []rawObject{{obj: obj, vars: bytes.Contains(text, []byte("${"))}}, nil
	}
	items, _, _ := unstructured.NestedSlice(obj.Object, "items")
	var out []rawObject
	for i, item := range items {
		b, err := json.Marshal(item)
		if err != nil {
			return nil, err
		}
		objs, err := fromJSON(b, b)
		if err != nil {
			return nil, fmt.Errorf("%s item %d: %w", obj.GetKind(), i, err)
		}
		for k := range objs {
			objs[k].source = fmt.Sprintf(" item %d%s", i, objs[k].source)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// checkObject checks the fields that name an object: kind, apiVersion and
// metadata's name, generateName and namespace, present and of the right
// type. Its errors name the field and the type found, never the value, so
// that no Secret is quoted.
func checkObject(o *unstructured.Unstructured) error {
	m := o.Object
	kind, ok := m["kind"].(string)
	if !ok || kind == "" {
		if v, found := m["kind"]; found && !ok {
			return fmt.Errorf("kind: want a string, got %s", typeName(v))
		}
		name, _, _ := unstructured.NestedString(m, "metadata", "name")
		if name != "" {
			return fmt.Errorf("object %q has no kind", name)
		}
		return errors.New("object has no kind")
	}
	if v, found := m["apiVersion"]; found {
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: apiVersion: want a string, got %s", kind, typeName(v))
		}
	}
	if o.IsList() {
		return nil
	}
	meta, found := m["metadata"]
	if found && meta != nil {
		mm, ok := meta.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: metadata: want a mapping, got %s", kind, typeName(meta))
		}
		for _, f := range []string{"name", "generateName", "namespace"} {
			if v, found := mm[f]; found && v != nil {
				if _, ok := v.(string); !ok {
					return fmt.Errorf("%s: metadata.%s: want a string, got %s", kind, f, typeName(v))
				}
			}
		}
	}
	switch {
	case o.GetAPIVersion() == "":
		return fmt.Errorf("%s %q has no apiVersion", kind, o.GetName())
	case o.GetName() == "" && o.GetGenerateName() == "":
		return fmt.Errorf("%s has no metadata.name", kind)
	}
	return nil
}

// typeName names the type of a value decoded from JSON, for errors that
// must not print the value itself.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64, json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

// readManifests reads a file, every .yaml/.yml/.json file under a folder
// (recursively, in lexical order), or standard input for "-": at most max
// bytes from each, and from all files of a folder together.
func (e *Engine) readManifests(path string, max int64) (built, error) {
	if path == "-" {
		e.stdin.once.Do(func() {
			if e.Stdin == nil {
				e.stdin.err = errors.New("no standard input")
				return
			}
			e.stdin.data, e.stdin.err = readAll(e.Stdin, max, "standard input")
			if e.stdin.err == nil {
				e.stdin.data, e.stdin.decrypted, e.stdin.err = e.Secrets.Open("standard input", sopsfile.YAML, e.stdin.data)
			}
		})
		if e.stdin.err != nil {
			return built{}, fmt.Errorf("reading standard input: %w", e.stdin.err)
		}
		objs, err := parseDocuments(e.stdin.data, max)
		if err != nil {
			return built{}, fmt.Errorf("standard input: %w", err)
		}
		for i := range objs {
			objs[i].source = "standard input " + objs[i].source
		}
		return built{raws: objs, decrypted: e.stdin.decrypted}, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return built{}, err
	}
	files := []string{path}
	if info.IsDir() {
		files = nil
		err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && p != path && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			switch strings.ToLower(filepath.Ext(p)) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					files = append(files, p)
				}
			}
			return nil
		})
		if err != nil {
			return built{}, err
		}
	}
	var (
		out   []rawObject
		total int64
		fs    = e.files(max)
	)
	for _, f := range files {
		fs.max = max - total
		data, err := fs.read(f)
		if err != nil {
			if total > 0 && errors.As(err, new(*limitError)) {
				return built{}, &limitError{fmt.Sprintf("%s: its manifest files together exceed the %s limit", displayPath(path), byteSize(max))}
			}
			return built{}, err
		}
		total += int64(len(data))
		objs, err := parseDocuments(data, max)
		if err != nil {
			return built{}, fmt.Errorf("%s: %w", displayPath(f), err)
		}
		for i := range objs {
			objs[i].source = displayPath(f) + " " + objs[i].source
		}
		out = append(out, objs...)
	}
	return built{raws: out, decrypted: fs.decrypted.Load()}, nil
}

// orderFirst and orderLast are kustomize's legacy resource order, which
// kustomize users already know: prerequisites first, webhooks last.
var orderFirst = []string{
	"Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition",
	"ServiceAccount", "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding",
	"ClusterRoleBinding", "ConfigMap", "Secret", "Endpoints", "Service",
	"LimitRange", "PriorityClass", "PersistentVolume", "PersistentVolumeClaim",
	"Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
}

var orderLast = []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}

var kindRank = func() map[string]int {
	m := map[string]int{}
	for i, k := range orderFirst {
		m[k] = i - len(orderFirst) - 1
	}
	for i, k := range orderLast {
		m[k] = i + 1
	}
	return m
}()

// Sort puts objects in a stable order: by kind (kustomize's legacy order,
// other kinds alphabetically between its first and last lists), then API
// group, namespace and name.
func Sort(objs []*unstructured.Unstructured) {
	// The keys are read once per object, not once per comparison.
	type keyed struct {
		rank                  int
		kind, group, ns, name string
		obj                   *unstructured.Unstructured
	}
	items := make([]keyed, len(objs))
	for i, o := range objs {
		kind := o.GetKind()
		items[i] = keyed{kindRank[kind], kind, o.GroupVersionKind().Group, o.GetNamespace(), o.GetName(), o}
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := &items[i], &items[j]
		switch {
		case a.rank != b.rank:
			return a.rank < b.rank
		case a.kind != b.kind:
			return a.kind < b.kind
		case a.group != b.group:
			return a.group < b.group
		case a.ns != b.ns:
			return a.ns < b.ns
		}
		return a.name < b.name
	})
	for i := range items {
		objs[i] = items[i].obj
	}
}

// clusterScoped lists the built-in kinds that have no namespace, by group.
var clusterScoped = func() map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for group, kinds := range map[string][]string{
		"":                             {"Namespace", "Node", "PersistentVolume", "ComponentStatus"},
		"admissionregistration.k8s.io": {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"},
		"apiextensions.k8s.io":         {"CustomResourceDefinition"},
		"apiregistration.k8s.io":       {"APIService"},
		"certificates.k8s.io":          {"CertificateSigningRequest", "ClusterTrustBundle"},
		"flowcontrol.apiserver.k8s.io": {"FlowSchema", "PriorityLevelConfiguration"},
		"networking.k8s.io":            {"IngressClass", "IPAddress", "ServiceCIDR"},
		"node.k8s.io":                  {"RuntimeClass"},
		"rbac.authorization.k8s.io":    {"ClusterRole", "ClusterRoleBinding"},
		"resource.k8s.io":              {"DeviceClass", "ResourceSlice"},
		"scheduling.k8s.io":            {"PriorityClass"},
		"storage.k8s.io":               {"StorageClass", "CSIDriver", "CSINode", "VolumeAttachment", "VolumeAttributesClass"},
		"storagemigration.k8s.io":      {"StorageVersionMigration"},
	} {
		for _, k := range kinds {
			out[schema.GroupKind{Group: group, Kind: k}] = true
		}
	}
	return out
}()

// ClusterScoped returns a best guess, without a cluster, of whether a kind
// has no namespace: the built-in cluster-scoped kinds, and the kinds of the
// CustomResourceDefinitions among objs by their scope. Any other kind is
// taken to be namespaced. Only the cluster's REST mapping knows for sure;
// commands that talk to a cluster correct the guess (kube.Client.Scope).
func ClusterScoped(objs []*unstructured.Unstructured) func(schema.GroupKind) bool {
	crds := map[schema.GroupKind]bool{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		crds[schema.GroupKind{Group: group, Kind: kind}] = scope == "Cluster"
	}
	return func(gk schema.GroupKind) bool {
		if scoped, ok := crds[gk]; ok {
			return scoped
		}
		return clusterScoped[gk]
	}
}

func setDefaultNamespace(objs []*unstructured.Unstructured, ns string) {
	if ns == "" {
		return
	}
	scoped := ClusterScoped(objs)
	for _, o := range objs {
		if o.GetNamespace() == "" && !scoped(o.GroupVersionKind().GroupKind()) {
			o.SetNamespace(ns)
		}
	}
}
