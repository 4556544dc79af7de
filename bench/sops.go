package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// sopsLoopScript is the loop users write for SOPS-encrypted Secrets
// (what ksops or a CI step does): per cluster, every file decrypted with
// sops -d into a fresh folder, then kustomize build | envsubst. Usage:
// sops-loop.sh SRC CLUSTERS.
const sopsLoopScript = `#!/usr/bin/env bash
set -uo pipefail
src=$1 clusters=$2 rc=0
while read -r name group replicas region context; do
  export FLEET_CLUSTER_NAME=$name
  tmp=$(mktemp -d)
  cp "$src/kustomization.yaml" "$tmp/"
  for f in "$src"/secret-*.yaml; do sops -d "$f" >"$tmp/${f##*/}" || rc=1; done
  kustomize build "$tmp" | envsubst >/dev/null || rc=1
  rm -rf "$tmp"
done <"$clusters"
exit $rc
`

// writeSOPSSources writes a kustomize folder of files Secrets, each in a
// file of its own, twice: encrypted with SOPS for a new age key (Flux's
// encrypted_regex), and in plaintext. It returns both folders and the
// key.
func writeSOPSSources(dir string, files int) (enc, plain, identity string, err error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", "", "", err
	}
	enc, plain = filepath.Join(dir, "sops-enc"), filepath.Join(dir, "sops-plain")
	var names []string
	for i := range files {
		name := fmt.Sprintf("secret-%03d.yaml", i)
		names = append(names, name)
		text := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s%03d\n  namespace: sops\nstringData:\n  password: value-%03d-of-a-bench\n  user: app\n", i, i)
		encrypted, err := sopsfile.Encrypt(sopsfile.YAML, []byte(text), []string{id.Recipient().String()}, "^(data|stringData)$")
		if err != nil {
			return "", "", "", err
		}
		if err := writeFile(filepath.Join(enc, name), string(encrypted)); err != nil {
			return "", "", "", err
		}
		if err := writeFile(filepath.Join(plain, name), text); err != nil {
			return "", "", "", err
		}
	}
	k := "resources:\n- " + strings.Join(names, "\n- ") + "\n"
	for _, d := range []string{enc, plain} {
		if err := writeFile(filepath.Join(d, "kustomization.yaml"), k); err != nil {
			return "", "", "", err
		}
	}
	return enc, plain, id.String(), nil
}

// sopsScenario renders a fleet of n clusters whose app is files
// SOPS-encrypted Secrets: with kubectl fleet, which decrypts each file
// once for every cluster; with the same files in plaintext (what the
// decryption costs); and with the sops -d loop.
func (b *bench) sopsScenario(ctx context.Context, n, files int) error {
	ff, list, err := b.renderFleet(n)
	if err != nil {
		return err
	}
	enc, plain, identity, err := writeSOPSSources(b.work, files)
	if err != nil {
		return err
	}
	script := filepath.Join(b.work, "sops-loop.sh")
	if err := os.WriteFile(script, []byte(sopsLoopScript), 0o755); err != nil {
		return err
	}
	saved := b.env
	b.env = append(append([]string{}, b.env...), "SOPS_AGE_KEY="+identity)
	defer func() { b.env = saved }()
	fleet := filepath.Join(b.bin, "kubectl-fleet")
	return b.scenario(ctx, fmt.Sprintf("sops-render-%d", n), []tool{
		{id: "fleet", command: "SOPS_AGE_KEY=… kubectl-fleet render -F fleet.yaml -k encrypted > /dev/null", prepare: func(int) (string, []string, error) {
			return fleet, []string{"render", "-F", ff, "-k", enc}, nil
		}},
		{id: "plain", command: "kubectl-fleet render -F fleet.yaml -k plaintext > /dev/null (the same files, not encrypted)", prepare: func(int) (string, []string, error) {
			return fleet, []string{"render", "-F", ff, "-k", plain}, nil
		}},
		{id: "loop", command: "for each cluster: sops -d every file into a fresh folder; kustomize build | envsubst > /dev/null", prepare: func(int) (string, []string, error) {
			return "bash", []string{script, enc, list}, nil
		}},
	}, nil)
}
