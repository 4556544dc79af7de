package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// publishLoopScript is the loop users write to publish each cluster's
// render to a registry, as `flux push artifact` does after a render:
// per cluster, kustomize build | envsubst into manifests.yaml, a tar.gz
// of it, and crane append of that layer onto an empty OCI image, tagged
// with the cluster's name. Usage: publish-loop.sh SRC REPOSITORY CLUSTERS.
const publishLoopScript = `#!/usr/bin/env bash
set -uo pipefail
src=$1 repo=$2 clusters=$3 rc=0
export ns=bench registry=ghcr.io/acme
tmp=$(mktemp -d)
while read -r name group replicas region context; do
  export FLEET_CLUSTER_NAME=$name replicas region
  kustomize build "$src/$group" | envsubst >"$tmp/manifests.yaml" || rc=1
  tar -C "$tmp" -czf "$tmp/layer.tar.gz" manifests.yaml || rc=1
  crane append --insecure --oci-empty-base -f "$tmp/layer.tar.gz" -t "$repo:$name" >/dev/null || rc=1
done <"$clusters"
rm -rf "$tmp"
exit $rc
`

// registryProc is the benchmark's registry process (bench/registry).
type registryProc struct {
	cmd  *exec.Cmd
	addr string
}

// startRegistry starts a fresh, empty registry.
func (b *bench) startRegistry(ctx context.Context) (*registryProc, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(b.bin, "registry"))
	if os.Getenv("BENCH_REGISTRY_LOG") != "" {
		cmd.Stderr = os.Stderr // each request it answers (bench/registry)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("the registry did not start: %w", err)
	}
	return &registryProc{cmd: cmd, addr: strings.TrimSpace(line)}, nil
}

// counts are how many bytes were pushed to r so far, and how many
// requests it answered.
func (r *registryProc) counts() (pushed, requests int64, err error) {
	resp, err := http.Get("http://" + r.addr + "/bench/pushed")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	_, err = fmt.Sscan(string(b), &pushed, &requests)
	return pushed, requests, err
}

func (r *registryProc) stop() {
	if r != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
}

// publishSource writes the app of the publish scenarios: the apply
// scenarios' kustomize source, or, shared, the same without the
// cluster's name in it (two renders, eu and us, for every cluster).
func (b *bench) publishSource(shared bool) (string, error) {
	if !shared {
		return b.src, nil
	}
	dir := filepath.Join(b.work, "src-shared")
	if err := writeSource(dir, b.o.objects); err != nil {
		return "", err
	}
	return dir, filepath.WalkDir(filepath.Join(dir, "base"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil {
			err = os.WriteFile(p, []byte(strings.ReplaceAll(string(data), "${FLEET_CLUSTER_NAME}", "every")), 0o644)
		}
		return err
	})
}

// publishFleet is a fleet of cs, every one delivered through repository
// base on the registry at addr, none with a context: published, not
// observed; with key (a file beside it), its artifacts and records are
// signed.
func publishFleet(cs []cluster, addr, base, key string) string {
	var s strings.Builder
	signing := ""
	if key != "" {
		signing = ", signing: {key: " + key + "}"
	}
	fmt.Fprintf(&s, "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: bench}\ndefaults:\n  attributes: {registry: ghcr.io/acme, ns: bench}\ngroups:\n  - {name: production, attributes: {replicas: 2}, delivery: {oci: \"oci://%s/%s\", insecure: true%s}}\nclusters:\n", addr, base, signing)
	for _, c := range cs {
		fmt.Fprintf(&s, "  - {name: %s, group: production, attributes: {region: %s}}\n", c.name, c.region)
	}
	return s.String()
}

// publishScenario publishes a fleet of n clusters × the app's objects to
// a fresh loopback registry for each run: kubectl fleet apply of a
// delivered group (packs, pushes by digest, signs nothing, records and
// moves every tag) against the crane loop (up to -publish-loop
// clusters). Shared: every cluster's render is one of two, so the
// registry receives each blob once. The registry's CPU is the servers'
// CPU; the bytes pushed are counted.
//
// Again (noop): the same apply once more on the registry the first left,
// nothing changed: what a reconcile pass of a steady fleet costs. The
// first apply is not timed; the requests counted are the second's.
func (b *bench) publishScenario(ctx context.Context, n int, shared, signed, again bool) error {
	name, key := publishName(n, shared, signed, again), ""
	if signed {
		key = "bench-cosign.key"
		if err := os.WriteFile(filepath.Join(b.work, key), signingKey(), 0o600); err != nil {
			return err
		}
	}
	src, err := b.publishSource(shared)
	if err != nil {
		return err
	}
	cs := fleetClusters(n, 0, "ctx-")
	for i := range cs {
		cs[i].group = "production"
	}
	list := filepath.Join(b.work, name+".txt")
	if err := os.WriteFile(list, []byte(clustersTxt(cs)), 0o644); err != nil {
		return err
	}
	script := filepath.Join(b.work, "publish-loop.sh")
	if err := os.WriteFile(script, []byte(publishLoopScript), 0o755); err != nil {
		return err
	}
	r := &publishRegistry{b: b, name: name}
	defer r.stop(b.serverCPU)
	command := "kubectl-fleet apply -F fleet.yaml -k src --yes (a delivered group, no context)"
	if again {
		command += ", the second time"
	}
	tools := []tool{{id: "fleet", command: command, done: r.record("fleet"), prepare: func(rep int) (string, []string, error) {
		if err := r.fresh(ctx); err != nil {
			return "", nil, err
		}
		ff := filepath.Join(b.work, fmt.Sprintf("%s-%d.yaml", name, rep))
		if err := os.WriteFile(ff, []byte(publishFleet(cs, r.reg.addr, "bench", key)), 0o644); err != nil {
			return "", nil, err
		}
		bin, args := filepath.Join(b.bin, "kubectl-fleet"), []string{"apply", "-F", ff, "-k", src, "--name", "web", "--yes", "--parallel", "32"}
		if again {
			if _, err := timed(ctx, bin, args, b.env); err != nil {
				return "", nil, fmt.Errorf("the first apply: %w", err)
			}
		}
		return bin, args, r.counted()
	}}}
	if n <= b.o.publishLoop && !signed && !again {
		tools = append(tools, tool{id: "loop", command: "for each cluster: kustomize build | envsubst > manifests.yaml; tar czf; crane append --oci-empty-base -t REPO:CLUSTER", done: r.record("loop"), prepare: func(int) (string, []string, error) {
			if err := r.fresh(ctx); err != nil {
				return "", nil, err
			}
			return "bash", []string{script, src, r.reg.addr + "/bench/web", list}, r.counted()
		}})
	}
	return b.scenario(ctx, name, tools, nil)
}

// publishName is the name of a publish scenario of n clusters.
func publishName(n int, shared, signed, again bool) string {
	name := fmt.Sprintf("publish-%d", n)
	for _, part := range []struct {
		on     bool
		suffix string
	}{{shared, "-shared"}, {signed, "-signed"}, {again, "-noop"}} {
		if part.on {
			name += part.suffix
		}
	}
	return name
}

// publishRegistry is a publish scenario's registry, fresh for each run,
// whose CPU is the servers', and what it had counted when the timed run
// started.
type publishRegistry struct {
	b      *bench
	name   string
	reg    *registryProc
	before [2]int64 // bytes pushed, requests
}

// fresh starts an empty registry in place of the last.
func (r *publishRegistry) fresh(ctx context.Context) error {
	r.reg.stop()
	var err error
	if r.reg, err = r.b.startRegistry(ctx); err != nil {
		return err
	}
	pid := r.reg.cmd.Process.Pid
	r.b.serverCPU = func() time.Duration { return procCPU(pid) }
	return nil
}

// counted notes what the registry counted so far: the timed run's
// figures are what it counts after.
func (r *publishRegistry) counted() error {
	var err error
	r.before[0], r.before[1], err = r.reg.counts()
	return err
}

// record is a tool's done: the bytes pushed and the requests of its run.
func (r *publishRegistry) record(tool string) func() error {
	return func() error {
		n, reqs, err := r.reg.counts()
		k := r.name + "/" + tool
		r.b.pushed[k] = append(r.b.pushed[k], n-r.before[0])
		r.b.requests[k] = append(r.b.requests[k], reqs-r.before[1])
		progress("%s: %s: %s pushed, %d requests to the registry", r.name, tool, bytesOf(n-r.before[0]), reqs-r.before[1])
		return err
	}
}

// stop stops the last registry and gives the bench back its servers'
// CPU.
func (r *publishRegistry) stop(serverCPU func() time.Duration) {
	r.reg.stop()
	r.b.serverCPU = serverCPU
}

// pushedOf is the median of the bytes r's runs pushed and of the
// requests the registry answered, and whether they were counted.
func (b *bench) pushedOf(r row) (pushed, requests int64, ok bool) {
	median := func(ns []int64) int64 {
		ns = slices.Clone(ns)
		slices.Sort(ns)
		return ns[len(ns)/2]
	}
	k := r.Scenario + "/" + r.Tool
	if len(b.pushed[k]) == 0 {
		return 0, 0, false
	}
	return median(b.pushed[k]), median(b.requests[k]), true
}

// signingKey is a new ECDSA P-256 key, PKCS #8 PEM, as a delivery's
// signing takes.
func signingKey() []byte {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
