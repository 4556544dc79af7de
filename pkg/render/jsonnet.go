package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-jsonnet"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// evalJsonnet evaluates file in a fresh VM with the cluster as the
// top-level argument "cluster" and the external variable "cluster". Library
// folders: a vendor/ folder beside the file (jsonnet-bundler's convention),
// then jpath in order, the last one winning. Imports stay under the
// file's folder and the library folders, as kustomize's files stay under
// its root: a render never reads /etc/hostname or ~/.kube/config. Calls
// nest at most lim.MaxStack deep, and the output is at most lim.MaxBytes
// long.
func evalJsonnet(file string, jpath []string, clusterJSON string, lim Limits, fs files, trace io.Writer) ([]rawObject, error) {
	vm := jsonnet.MakeVM()
	vm.SetTraceOut(trace)
	vm.MaxStack = lim.MaxStack
	jpaths := append([]string{filepath.Join(filepath.Dir(file), "vendor")}, jpath...)
	roots := append([]string{filepath.Dir(file)}, jpaths...)
	vm.Importer(&confined{FileImporter: jsonnet.FileImporter{JPaths: jpaths}, roots: realPaths(roots), files: fs})
	vm.TLACode("cluster", clusterJSON)
	vm.ExtCode("cluster", clusterJSON)
	out, err := vm.EvaluateFile(file)
	if err != nil {
		msg := strings.TrimSpace(err.Error())
		msg = strings.Replace(msg, "max stack frames exceeded.", fmt.Sprintf("max stack frames exceeded (the limit is %d nested calls: does a function recurse forever?)", lim.MaxStack), 1)
		return nil, errors.New(msg)
	}
	if int64(len(out)) > lim.MaxBytes {
		return nil, overLimit("output", lim.MaxBytes)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var raws []rawObject
	if err := extract(v, "", &raws); err != nil {
		return nil, err
	}
	return raws, nil
}

// confined is a file importer whose imports must resolve under one of
// roots (symbolic links followed): `importstr '/etc/hostname'` or
// `import '../../.kube/config'` is an error, not a render. What it
// imports is decrypted if it is SOPS-encrypted.
type confined struct {
	jsonnet.FileImporter
	roots []string
	files files
}

// Import imports path as the file importer does, if it is under a root.
func (c *confined) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	contents, foundAt, err := c.FileImporter.Import(importedFrom, importedPath)
	if err != nil {
		return contents, foundAt, err
	}
	real := realPaths([]string{foundAt})[0]
	for _, root := range c.roots {
		if rel, err := filepath.Rel(root, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return c.decrypt(contents, foundAt)
		}
	}
	return jsonnet.Contents{}, "", fmt.Errorf("import %q: %s is outside the source's folder and the library folders (vendor/, -J, jpath: add its folder there)", importedPath, foundAt)
}

// decrypt is contents, read from foundAt, decrypted if it is encrypted.
// A file that never says "sops" is not copied.
func (c *confined) decrypt(contents jsonnet.Contents, foundAt string) (jsonnet.Contents, string, error) {
	if c.files.sops == nil || !strings.Contains(contents.String(), "sops") {
		return contents, foundAt, nil
	}
	data := []byte(contents.String())
	if !sopsfile.Encrypted(sopsfile.FormatOf(foundAt), data) {
		return contents, foundAt, nil
	}
	out, err := c.files.open(displayPath(foundAt), sopsfile.FormatOf(foundAt), data)
	if err != nil {
		return jsonnet.Contents{}, "", err
	}
	return jsonnet.MakeContents(string(out)), foundAt, nil
}

// realPaths are paths made absolute with their symbolic links resolved
// (as they are, where they cannot be).
func realPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		out[i] = p
	}
	return out
}

// extract finds the manifests in jsonnet output the way Tanka does: an
// object with apiVersion and kind is a manifest (a List is expanded), an
// array holds manifests, and any other object holds manifests in its
// fields, visited in key order. Null is skipped.
func extract(v any, path string, out *[]rawObject) error {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		for i, item := range x {
			if err := extract(item, fmt.Sprintf("%s[%d]", path, i), out); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		if isManifest(x) {
			j, err := json.Marshal(x)
			if err != nil {
				return err
			}
			objs, err := fromJSON(j, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", displayField(path), err)
			}
			for i := range objs {
				objs[i].source = displayField(path) + objs[i].source
			}
			*out = append(*out, objs...)
			return nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := extract(x[k], path+"."+k, out); err != nil {
				return err
			}
		}
		return nil
	default:
		// The type, not the value: a Secret that lacks its kind is walked
		// into, and its values must not be printed.
		return fmt.Errorf("%s: want a Kubernetes object, an array or an object of them, got %s", displayField(path), typeName(x))
	}
}

func isManifest(m map[string]any) bool {
	_, a := m["apiVersion"].(string)
	_, k := m["kind"].(string)
	return a && k
}

func displayField(path string) string {
	if path == "" {
		return "output"
	}
	return "output" + path
}
