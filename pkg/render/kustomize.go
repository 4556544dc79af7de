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
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
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
// at most max bytes, with aliases that expand it no further, decrypted
// if it is SOPS-encrypted (limitedFS), and so is its output.
func buildKustomize(dir string, fs files) ([]rawObject, error) {
	max := fs.max
	resMap, err := runKustomize(dir, fs)
	if err != nil {
		return nil, err
	}
	var (
		raws  []rawObject
		total int64
	)
	for _, res := range resMap.Resources() {
		if err := decryptResource(res, fs); err != nil {
			return nil, err
		}
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

// decryptResource decrypts a Secret that kustomize built still carrying
// SOPS metadata (Flux's convention: a file whose name says it is not
// YAML), as its YAML, in place. Its MAC holds only if no transformer
// changed it (a namespace, a label, a name prefix), unless it was
// encrypted with --mac-only-encrypted.
func decryptResource(res *resource.Resource, fs files) error {
	if fs.sops == nil || fs.sops.Off || res.GetKind() != "Secret" {
		return nil
	}
	if field, err := res.Pipe(kyaml.Lookup("sops")); err != nil || field == nil {
		return nil
	}
	text, err := res.AsYAML()
	if err != nil {
		return err
	}
	ref := "Secret " + res.GetName()
	if ns := res.GetNamespace(); ns != "" {
		ref = "Secret " + ns + "/" + res.GetName()
	}
	plain, err := fs.open(ref, sopsfile.YAML, text)
	if err != nil {
		return fmt.Errorf("%w (a Secret still encrypted after the kustomize build must come out of it as it was encrypted: give its file a .yaml name, so that it is decrypted as it is read, before kustomize changes it)", err)
	}
	node, err := kyaml.Parse(string(plain))
	if err != nil {
		return err
	}
	res.SetYNode(node.YNode())
	return nil
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
func runKustomize(dir string, fs files) (resmap.ResMap, error) {
	krustyMu.Lock()
	defer krustyMu.Unlock()
	fsys := &limitedFS{FileSystem: filesys.MakeFsOnDisk(), files: fs}
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
