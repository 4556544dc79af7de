package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
)

// fluxArtifact packs the folder dir as flux push artifact does, with
// extra files (name: content) beside it.
func fluxArtifact(dir string, extra map[string][]byte) (v1.Image, error) {
	files := maps.Clone(extra)
	if files == nil {
		files = map[string][]byte{}
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err == nil {
			files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return registrytest.FluxArtifact(files)
}

// pushArtifact pushes img to the registry at addr as repo:v1 and
// returns its oci:// reference.
func pushArtifact(ctx context.Context, addr, repo string, img v1.Image) (string, error) {
	ref, err := name.ParseReference(addr + "/" + repo + ":v1")
	if err != nil {
		return "", err
	}
	return "oci://" + ref.String(), remote.Write(ref, img, remote.WithContext(ctx))
}

// ociScenarios time what reading a source from a registry costs: the
// render of n clusters from the kustomize source pushed as a Flux
// artifact against the same render from the folder (the difference is
// one pull: the artifact is fetched once per run, not per cluster), and
// the pull of a 5 MB artifact (kubectl fleet deps update: resolve,
// pull, check, unpack) against crane export | tar -x, what users run
// instead (flux pull artifact, oras pull do the same). Every run gets an
// empty cache.
func (b *bench) ociScenarios(ctx context.Context, n int) error {
	reg, err := b.startRegistry(ctx)
	if err != nil {
		return err
	}
	defer reg.stop()
	img, err := fluxArtifact(b.src, nil)
	if err != nil {
		return err
	}
	src, err := pushArtifact(ctx, reg.addr, "bench/src", img)
	if err != nil {
		return err
	}
	noise := make([]byte, 5<<20) // random: it compresses to 5 MB too
	if _, err := rand.Read(noise); err != nil {
		return err
	}
	img, err = fluxArtifact(b.src, map[string][]byte{"assets/blob.bin": noise})
	if err != nil {
		return err
	}
	big, err := pushArtifact(ctx, reg.addr, "bench/big", img)
	if err != nil {
		return err
	}
	ff, _, err := b.renderFleet(n)
	if err != nil {
		return err
	}
	fresh := func(rep int, what string) string {
		return filepath.Join(b.work, fmt.Sprintf("oci-cache-%s-%d", what, rep))
	}
	plugin := filepath.Join(b.bin, "kubectl-fleet")
	if err := b.scenario(ctx, fmt.Sprintf("oci-render-%d", n), []tool{
		{id: "fleet", command: "kubectl-fleet render -F fleet.yaml -k oci://REGISTRY/bench/src:v1 > /dev/null (an empty cache)", prepare: func(rep int) (string, []string, error) {
			return "env", []string{"KUBECTL_FLEET_OCI_CACHE=" + fresh(rep, "render"), plugin, "render", "-F", ff, "-k", src, "--name", "web"}, nil
		}},
		{id: "folder", command: "kubectl-fleet render -F fleet.yaml -k src > /dev/null (the same source, a folder)", prepare: func(int) (string, []string, error) {
			return plugin, []string{"render", "-F", ff, "-k", b.src, "--name", "web"}, nil
		}},
	}, nil); err != nil {
		return err
	}
	one := filepath.Join(b.work, "oci-pull.yaml")
	if err := os.WriteFile(one, []byte("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: bench}\ngroups: [{name: production}]\nclusters: [{name: c1, group: production, context: c1}]\napps:\n  - {name: big, kustomize: \""+big+"\"}\n"), 0o644); err != nil {
		return err
	}
	return b.scenario(ctx, "oci-pull-5mb", []tool{
		{id: "fleet", command: "kubectl-fleet deps update (resolve, pull, check and unpack a 5 MB artifact; an empty cache)", prepare: func(rep int) (string, []string, error) {
			return "env", []string{"KUBECTL_FLEET_OCI_CACHE=" + fresh(rep, "pull"), plugin, "deps", "update", "-F", one}, nil
		}},
		{id: "crane", command: "crane export REGISTRY/bench/big:v1 - | tar -x -C DIR", prepare: func(rep int) (string, []string, error) {
			dir := fresh(rep, "crane")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return "", nil, err
			}
			return "bash", []string{"-c", `set -o pipefail; "$0" export --insecure "$1" - | tar -x -C "$2"`, filepath.Join(b.bin, "crane"), reg.addr + "/bench/big:v1", dir}, nil
		}},
	}, nil)
}
