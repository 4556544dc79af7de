package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// KustomizeDir picks the overlay for a cluster: dir/<cluster>, else
// dir/<group>, else dir itself, the first that holds a kustomization file.
func KustomizeDir(dir string, c *Cluster) (string, error) {
	candidates := []string{filepath.Join(dir, c.Name), filepath.Join(dir, c.Group), dir}
	for _, d := range candidates {
		if hasKustomization(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no kustomization in %s, %s or %s", displayPath(candidates[0]), displayPath(candidates[1]), displayPath(dir))
}

func hasKustomization(dir string) bool {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if info, err := os.Stat(filepath.Join(dir, name)); err == nil && !info.IsDir() {
			return true
		}
	}
	return false
}

// krustyMu serialises kustomize builds: parts of kustomize (its OpenAPI
// schema cache) are not safe for concurrent use, as fluxcd found.
var krustyMu sync.Mutex

// buildKustomize runs kustomize in process on dir. Every file it reads is
// at most max bytes, with aliases that expand it no further (limitedFS), and
// so is its output.
func buildKustomize(dir string, max int64) ([]rawObject, error) {
	resMap, err := runKustomize(dir, max)
	if err != nil {
		return nil, err
	}
	var (
		raws  []rawObject
		total int64
	)
	for _, res := range resMap.Resources() {
		objs, size, err := objectsOf(res)
		if total += size; total > max {
			return nil, overLimit("output", max)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res.CurId(), err)
		}
		raws = append(raws, objs...)
	}
	return raws, nil
}

// objectsOf is what kustomize built of one resource, and about its size
// in bytes: read from its YAML node, or, for what the node does not say
// as its YAML would, from the YAML printed.
func objectsOf(res *resource.Resource) ([]rawObject, int64, error) {
	if obj, size, vars, ok := nodeObject(res.YNode()); ok {
		u := &unstructured.Unstructured{Object: obj}
		return []rawObject{{obj: u, vars: vars}}, size, checkObject(u)
	}
	text, err := res.AsYAML()
	if err != nil {
		return nil, 0, err
	}
	objs, err := parseDocument(text)
	return objs, int64(len(text)), err
}

// runKustomize is kustomize's build of dir, one at a time (krustyMu);
// what it built is read outside the lock.
func runKustomize(dir string, max int64) (resmap.ResMap, error) {
	krustyMu.Lock()
	defer krustyMu.Unlock()
	fsys := &limitedFS{FileSystem: filesys.MakeFsOnDisk(), max: max}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(fsys, dir)
	if err != nil {
		if fsys.err != nil {
			return nil, fsys.err
		}
		return nil, kustomizeError(err)
	}
	return resMap, nil
}

// outsideRoot matches kustomize's refusal to read a file outside the
// kustomization's folder (its default load restrictions).
var outsideRoot = regexp.MustCompile(`security; file '([^']*)' is not in or below '([^']*)'`)

// kustomizeError makes kustomize's error for a file outside the
// kustomization's folder say so plainly; kustomize reports it amid the
// errors of its other attempts to read the path.
func kustomizeError(err error) error {
	msg := strings.TrimSpace(err.Error())
	if m := outsideRoot.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s is outside the kustomization folder %s: kustomize reads files only in or below a kustomization's folder (make the file's folder a kustomization and list that folder in resources)", displayPath(m[1]), displayPath(m[2]))
	}
	return errors.New(msg)
}
