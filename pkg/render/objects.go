package render

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// parseDocuments splits a YAML or JSON stream into objects; Lists are
// expanded into their items and empty documents skipped.
func parseDocuments(data []byte) ([]rawObject, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []rawObject
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		objs, err := parseDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, objs...)
	}
}

// parseDocument parses one YAML or JSON document holding an object or a
// List.
func parseDocument(doc []byte) ([]rawObject, error) {
	var m map[string]any
	if err := yaml.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	return fromJSON(j, string(doc))
}

// fromJSON turns a JSON object into objects. text is the object's source,
// looked at for "${"; items of a List are looked at on their own.
func fromJSON(j []byte, text string) ([]rawObject, error) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		return nil, err
	}
	if err := checkObject(obj); err != nil {
		return nil, err
	}
	if !obj.IsList() {
		return []rawObject{{obj: obj, vars: strings.Contains(text, "${")}}, nil
	}
	items, _, _ := unstructured.NestedSlice(obj.Object, "items")
	var out []rawObject
	for i, item := range items {
		b, err := yaml.Marshal(item)
		if err != nil {
			return nil, err
		}
		objs, err := parseDocument(b)
		if err != nil {
			return nil, fmt.Errorf("%s item %d: %w", obj.GetKind(), i, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

func checkObject(o *unstructured.Unstructured) error {
	if o.IsList() {
		return nil
	}
	switch {
	case o.GetAPIVersion() == "":
		return fmt.Errorf("%s %q has no apiVersion", o.GetKind(), o.GetName())
	case o.GetName() == "" && o.GetGenerateName() == "":
		return fmt.Errorf("%s has no metadata.name", o.GetKind())
	}
	return nil
}

// readManifests reads a file, every .yaml/.yml/.json file under a folder
// (recursively, in lexical order), or standard input for "-".
func (e *Engine) readManifests(path string) ([]rawObject, error) {
	if path == "-" {
		e.stdin.once.Do(func() {
			if e.Stdin == nil {
				e.stdin.err = errors.New("no standard input")
				return
			}
			e.stdin.data, e.stdin.err = io.ReadAll(e.Stdin)
		})
		if e.stdin.err != nil {
			return nil, fmt.Errorf("reading standard input: %w", e.stdin.err)
		}
		objs, err := parseDocuments(e.stdin.data)
		if err != nil {
			return nil, fmt.Errorf("standard input: %w", err)
		}
		return objs, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
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
			return nil, err
		}
	}
	var out []rawObject
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := parseDocuments(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", displayPath(f), err)
		}
		out = append(out, objs...)
	}
	return out, nil
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
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		ra, rb := kindRank[a.GetKind()], kindRank[b.GetKind()]
		if ra != rb {
			return ra < rb
		}
		if a.GetKind() != b.GetKind() {
			return a.GetKind() < b.GetKind()
		}
		if ga, gb := a.GroupVersionKind().Group, b.GroupVersionKind().Group; ga != gb {
			return ga < gb
		}
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
}

// clusterScoped lists the built-in kinds that have no namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "StorageClass": true,
	"CustomResourceDefinition": true, "APIService": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "PriorityClass": true, "IngressClass": true,
	"RuntimeClass": true, "CSIDriver": true, "CSINode": true, "VolumeAttachment": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true,
	"CertificateSigningRequest": true, "FlowSchema": true,
	"PriorityLevelConfiguration": true, "ComponentStatus": true,
	"DeviceClass": true, "ResourceSlice": true,
}

// ClusterScoped returns a test of whether a kind has no namespace, as far as
// can be told without a cluster: the built-in kinds, and the kinds of the
// CustomResourceDefinitions among objs by their scope. Any other kind is
// taken to be namespaced until a cluster says otherwise.
func ClusterScoped(objs []*unstructured.Unstructured) func(kind string) bool {
	crds := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		crds[kind] = scope == "Cluster"
	}
	return func(kind string) bool {
		if scoped, ok := crds[kind]; ok {
			return scoped
		}
		return clusterScoped[kind]
	}
}

func setDefaultNamespace(objs []*unstructured.Unstructured, ns string) {
	if ns == "" {
		return
	}
	scoped := ClusterScoped(objs)
	for _, o := range objs {
		if o.GetNamespace() == "" && !scoped(o.GetKind()) {
			o.SetNamespace(ns)
		}
	}
}
