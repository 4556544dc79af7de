package render

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
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

// buildKustomize runs kustomize in process on dir, guarded against panics.
func buildKustomize(dir string) (raws []rawObject, err error) {
	krustyMu.Lock()
	defer krustyMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kustomize build %s: recovered from panic: %v", displayPath(dir), r)
		}
	}()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %s", displayPath(dir), strings.TrimSpace(err.Error()))
	}
	for _, res := range resMap.Resources() {
		text, err := res.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", displayPath(dir), err)
		}
		objs, err := parseDocument(text)
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", displayPath(dir), res.CurId(), err)
		}
		raws = append(raws, objs...)
	}
	return raws, nil
}
