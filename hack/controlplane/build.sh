#!/usr/bin/env bash
# Builds the control-plane binaries used by the test harness from the Go
# module proxy (no other network access needed), into a versioned cache:
#
#   ${FLEET_CACHE:-<repo>/.cache}/k8s/<K8S_VERSION>/bin/
#       kube-apiserver kubectl kube-controller-manager kube-scheduler   (k8s.io/kubernetes)
#       etcd                                                            (go.etcd.io/etcd/server/v3)
#       kwok                                                            (sigs.k8s.io/kwok)
#       krew validate-krew-manifest                                     (sigs.k8s.io/krew)
#       kustomize                           (sigs.k8s.io/kustomize/kustomize/v5, for make bench)
#       envsubst                            (github.com/a8m/envsubst, for make bench)
#       helm                                (helm.sh/helm/v4: the fidelity test's reference, and make bench)
#       sops                                (github.com/getsops/sops/v3: make bench's SOPS loop)
#       source-controller kustomize-controller   (github.com/fluxcd/*: the e2e test bed's Flux,
#                                                 run out of cluster; their CRDs in flux-crds/)
#       prometheus                          (github.com/prometheus/prometheus: the analyses' e2e,
#                                            without its web UI's assets)
#   ${FLEET_CACHE:-<repo>/.cache}/k8s/<K8S_VERSION>/kwok-stages/
#       kwok's stage configs (kustomize/stage/ of its module); use e.g.
#       `kwok --config <dir>/kwok-stages/fast.yaml` (or the `fast` kustomize dir).
#
# Every binary is built only when it is missing, so a second run is a no-op.
# Each build happens in a throwaway module under <cache>/k8s/<ver>/src/<name>/,
# never in the repository's go.mod.
#
# Usage: hack/controlplane/build.sh [--print-dir|--print-stages-dir|--help] [component...]
#   components: etcd kube-apiserver kubectl kube-controller-manager kube-scheduler
#               kwok krew kustomize envsubst helm sops
#               source-controller kustomize-controller prometheus (only when named)
#               (default: all but Flux's two and Prometheus; krew is skipped on failure unless named)
# Progress goes to stderr; on success the bin dir is printed on stdout, so
#   BIN=$(hack/controlplane/build.sh) works.
# Environment: FLEET_CACHE, K8S_VERSION, ETCD_VERSION, KWOK_VERSION, KREW_VERSION,
#   KUSTOMIZE_VERSION, ENVSUBST_VERSION, HELM_VERSION.
set -euo pipefail

# v1.37.1, not v1.37.2: the Go module proxy answers 403 "This module version is
# not available" for the k8s.io/kubernetes v1.37.2 zip (its .mod and .info are
# served, and the v0.37.2 staging modules are fine). Override with K8S_VERSION.
K8S_VERSION=${K8S_VERSION:-v1.37.1}
ETCD_VERSION=${ETCD_VERSION:-v3.6.4}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
KREW_VERSION=${KREW_VERSION:-v0.4.4}
# kustomize v5.8.2 builds with Go 1.26 (later ones may want a newer Go).
KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-v5.8.2}
ENVSUBST_VERSION=${ENVSUBST_VERSION:-v1.4.3}
# The Helm SDK version kubectl fleet is built with (go.mod).
HELM_VERSION=${HELM_VERSION:-v4.3.1}
SOPS_VERSION=${SOPS_VERSION:-v3.13.3}
# Prometheus v0.316.0 is Prometheus 3.16 under Go's module numbering.
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}
# Flux's controllers: v1.9.6 declares Go 1.26.0 (v1.10 needs Go 1.27).
FLUX_VERSION=${FLUX_VERSION:-v1.9.6}
# Dependencies of theirs the module proxy refuses ("403 This module
# version is not available"), pinned to the nearest patch it serves.
FLUX_PINS=${FLUX_PINS:-github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.1}

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE_ROOT=${FLEET_CACHE:-$REPO_ROOT/.cache}
BASE=$CACHE_ROOT/k8s/$K8S_VERSION
BIN=$BASE/bin
SRC=$BASE/src
STAGES=$BASE/kwok-stages

KUBE_CMDS=(kube-apiserver kubectl kube-controller-manager kube-scheduler)
FLUX_CMDS=(source-controller kustomize-controller)
ALL_COMPONENTS=(etcd "${KUBE_CMDS[@]}" kwok krew kustomize envsubst helm sops "${FLUX_CMDS[@]}" prometheus)

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; }

want=()
for arg in "$@"; do
  case $arg in
    --print-dir) echo "$BIN"; exit 0 ;;
    --print-stages-dir) echo "$STAGES"; exit 0 ;;
    --print-flux-crds-dir) echo "$BASE/flux-crds"; exit 0 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "unknown flag: $arg" >&2; usage; exit 2 ;;
    *)
      case " ${ALL_COMPONENTS[*]} " in
        *" $arg "*) want+=("$arg") ;;
        *) echo "unknown component: $arg (known: ${ALL_COMPONENTS[*]})" >&2; exit 2 ;;
      esac ;;
  esac
done
explicit_krew=false
if [ ${#want[@]} -eq 0 ]; then
  # Flux's controllers only when named: what the e2e suite starts.
  want=(etcd "${KUBE_CMDS[@]}" kwok krew kustomize envsubst helm sops)
else
  case " ${want[*]} " in *" krew "*) explicit_krew=true ;; esac
fi
wanted() { case " ${want[*]} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

log() { printf '[controlplane %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null || die "go is not on PATH"

# Go settings for the throwaway modules: module mode with go.mod updates
# allowed, no workspace, static binaries, no VCS stamping.
gf=()
for f in ${GOFLAGS:-}; do case $f in -mod=*|-buildvcs=*) ;; *) gf+=("$f") ;; esac; done
export GOFLAGS="${gf[*]:+${gf[*]} }-mod=mod -buildvcs=false"
export GOWORK=off GO111MODULE=on CGO_ENABLED=0
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

mkdir -p "$BIN" "$SRC"

# Serialise concurrent runs (e.g. parallel make targets) on the same cache.
if command -v flock >/dev/null; then
  exec 9>"$BASE/.lock"
  flock 9
fi

have() { [ -x "$BIN/$1" ]; }

# build_bin <module-dir> <name> <package> [ldflags]
# Builds to a temporary name and renames, so an interrupted build never
# leaves a half-written binary that would be mistaken for a finished one.
build_bin() {
  local dir=$1 name=$2 pkg=$3 ldflags=${4:-}
  local t0=$SECONDS
  log "building $name ($pkg) ..."
  (cd "$dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$BIN/.$name.tmp" "$pkg") \
    || { rm -f "$BIN/.$name.tmp"; return 1; }
  mv -f "$BIN/.$name.tmp" "$BIN/$name"
  log "built $name in $((SECONDS - t0))s"
}

# tidy <module-dir> <what>
tidy() {
  local t0=$SECONDS
  log "go mod tidy for $2 ..."
  (cd "$1" && go mod tidy) || return 1
  log "go mod tidy for $2 took $((SECONDS - t0))s"
}

# json_field <field>: a string field of `go mod download -json` output on stdin.
json_field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" | head -n1; }

# module_info <module@version> <field>  -> value of a field of `go mod download -json`
# Runs in a module of its own so that no enclosing go.mod (e.g. the
# repository's, when the cache lives inside it) is consulted or touched.
module_info() {
  local json probe=$SRC/.probe
  mkdir -p "$probe"
  [ -f "$probe/go.mod" ] || printf 'module fleet.local/controlplane/probe\n\ngo 1.24\n' >"$probe/go.mod"
  if ! json=$(cd "$probe" && go mod download -json "$1"); then
    log "go mod download $1 failed: $(printf '%s\n' "$json" | json_field Error)"
    return 1
  fi
  printf '%s\n' "$json" | json_field "$2"
}

total0=$SECONDS

# ---------------------------------------------------------------- etcd
build_etcd() {
  local dir=$SRC/etcd
  mkdir -p "$dir"
  cat >"$dir/go.mod" <<EOF
module fleet.local/controlplane/etcd

go 1.24

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
EOF
  cat >"$dir/main.go" <<'EOF'
// Command etcd is etcd's server built from the Go module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
  tidy "$dir" "etcd $ETCD_VERSION"
  build_bin "$dir" etcd .
}
if wanted etcd; then
  if have etcd; then log "etcd: present"; else build_etcd; fi
fi

# ---------------------------------------------------------------- kubernetes
kube_missing=()
for c in "${KUBE_CMDS[@]}"; do
  if wanted "$c"; then
    if have "$c"; then log "$c: present"; else kube_missing+=("$c"); fi
  fi
done
if [ ${#kube_missing[@]} -gt 0 ]; then
  dir=$SRC/kubernetes
  mkdir -p "$dir"
  t0=$SECONDS
  log "downloading k8s.io/kubernetes@$K8S_VERSION ..."
  kgomod=$(module_info "k8s.io/kubernetes@$K8S_VERSION" GoMod) || die "cannot download k8s.io/kubernetes@$K8S_VERSION"
  [ -n "$kgomod" ] && [ -f "$kgomod" ] || die "no go.mod path for k8s.io/kubernetes@$K8S_VERSION"
  log "downloaded in $((SECONDS - t0))s"
  # Staging modules: lines `k8s.io/x => ./staging/src/k8s.io/x` (inside a
  # replace block or as single `replace` lines).
  mapfile -t staging < <(awk '
    { sub(/^[[:space:]]*replace[[:space:]]+/, ""); sub(/^[[:space:]]+/, "") }
    $2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }
  ' "$kgomod" | sort -u)
  [ ${#staging[@]} -gt 0 ] || die "found no ./staging replaces in $kgomod"
  staging_version=v0.${K8S_VERSION#v*.}   # v1.37.2 -> v0.37.2
  log "${#staging[@]} staging modules -> $staging_version"
  {
    echo "module fleet.local/controlplane/kubernetes"
    echo
    echo "go 1.24"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "tool ("
    for c in "${KUBE_CMDS[@]}"; do echo "	k8s.io/kubernetes/cmd/$c"; done
    echo ")"
    echo
    echo "replace ("
    for m in "${staging[@]}"; do echo "	$m => $m $staging_version"; done
    echo ")"
  } >"$dir/go.mod"
  tidy "$dir" "kubernetes $K8S_VERSION"

  ver=${K8S_VERSION#v}
  major=${ver%%.*}
  minor=${ver#*.}; minor=${minor%%.*}
  ld=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  for c in "${kube_missing[@]}"; do
    build_bin "$dir" "$c" "k8s.io/kubernetes/cmd/$c" "$ld"
  done
fi

# ---------------------------------------------------------------- kwok
if wanted kwok; then
  if have kwok; then
    log "kwok: present"
  else
    dir=$SRC/kwok
    mkdir -p "$dir"
    cat >"$dir/go.mod" <<EOF
module fleet.local/controlplane/kwok

go 1.24

require sigs.k8s.io/kwok $KWOK_VERSION

tool sigs.k8s.io/kwok/cmd/kwok
EOF
    tidy "$dir" "kwok $KWOK_VERSION"
    build_bin "$dir" kwok sigs.k8s.io/kwok/cmd/kwok \
      "-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${K8S_VERSION#v}"
  fi
  if [ -f "$STAGES/.done-$KWOK_VERSION" ]; then
    log "kwok stages: present"
  else
    kdir=$(module_info "sigs.k8s.io/kwok@$KWOK_VERSION" Dir) || die "cannot download sigs.k8s.io/kwok@$KWOK_VERSION"
    [ -d "$kdir/kustomize/stage" ] || die "no kustomize/stage in $kdir"
    rm -rf "$STAGES.tmp"
    mkdir -p "$STAGES.tmp"
    # Keep the tree (its kustomization.yaml files make each folder a valid
    # `kwok --config <dir>`), drop tests, docs and Go files.
    (cd "$kdir/kustomize/stage" && find . -type f -name '*.yaml' -not -path '*/testdata/*') |
      while read -r f; do
        mkdir -p "$STAGES.tmp/$(dirname "$f")"
        cp "$kdir/kustomize/stage/$f" "$STAGES.tmp/$f"
      done
    chmod -R u+w "$STAGES.tmp"
    # A flat multi-document file equal to the `fast` set (what kwokctl uses by
    # default): node initialise + heartbeat with lease + pod fast lifecycle.
    for f in "$STAGES.tmp"/node/fast/*.yaml "$STAGES.tmp"/node/heartbeat-with-lease/*.yaml "$STAGES.tmp"/pod/fast/*.yaml; do
      case $(basename "$f") in kustomization.yaml) continue ;; esac
      echo "---"
      cat "$f"
    done >"$STAGES.tmp/fast.yaml"
    touch "$STAGES.tmp/.done-$KWOK_VERSION"
    rm -rf "$STAGES"
    mv "$STAGES.tmp" "$STAGES"
    log "kwok stages copied to $STAGES"
  fi
fi

# ---------------------------------------------------------------- krew
build_krew() {
  local dir=$SRC/krew
  mkdir -p "$dir"
  cat >"$dir/go.mod" <<EOF
module fleet.local/controlplane/krew

go 1.24

require sigs.k8s.io/krew $KREW_VERSION

tool (
	sigs.k8s.io/krew/cmd/krew
	sigs.k8s.io/krew/cmd/validate-krew-manifest
)
EOF
  tidy "$dir" "krew $KREW_VERSION" || return 1
  local ld="-X sigs.k8s.io/krew/internal/version.gitTag=$KREW_VERSION"
  have krew || build_bin "$dir" krew sigs.k8s.io/krew/cmd/krew "$ld" || return 1
  have validate-krew-manifest || build_bin "$dir" validate-krew-manifest sigs.k8s.io/krew/cmd/validate-krew-manifest "$ld" || return 1
}
if wanted krew; then
  if have krew && have validate-krew-manifest; then
    log "krew, validate-krew-manifest: present"
  elif ! build_krew; then
    if $explicit_krew; then die "krew build failed"; fi
    log "WARNING: krew build failed; skipped (tests needing krew will not run)"
  fi
fi

# ---------------------------------------------------------------- tools for make bench
# build_tool <name> <module> <version> <package> [ldflags]: a CLI in a
# throwaway module of its own, for the loops users script (make bench).
build_tool() {
  local name=$1 mod=$2 ver=$3 pkg=$4 ld=${5:-}
  local dir=$SRC/$name
  mkdir -p "$dir"
  cat >"$dir/go.mod" <<EOF
module fleet.local/controlplane/$name

go 1.24

require $mod $ver

tool $pkg
EOF
  tidy "$dir" "$name $ver" || return 1
  build_bin "$dir" "$name" "$pkg" "$ld"
}
if wanted kustomize; then
  if have kustomize; then log "kustomize: present"; else
    build_tool kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION" sigs.k8s.io/kustomize/kustomize/v5 \
      "-X sigs.k8s.io/kustomize/api/provenance.version=kustomize/$KUSTOMIZE_VERSION" || die "kustomize build failed"
  fi
fi
if wanted envsubst; then
  if have envsubst; then log "envsubst: present"; else
    build_tool envsubst github.com/a8m/envsubst "$ENVSUBST_VERSION" github.com/a8m/envsubst/cmd/envsubst || die "envsubst build failed"
  fi
fi

if wanted helm; then
  if have helm; then log "helm: present"; else
    build_tool helm helm.sh/helm/v4 "$HELM_VERSION" helm.sh/helm/v4/cmd/helm \
      "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" || die "helm build failed"
  fi
fi

if wanted sops; then
  if have sops; then log "sops: present"; else
    build_tool sops github.com/getsops/sops/v3 "$SOPS_VERSION" github.com/getsops/sops/v3/cmd/sops || die "sops build failed"
  fi
fi

if wanted prometheus; then
  if have prometheus; then log "prometheus: present"; else
    build_tool prometheus github.com/prometheus/prometheus "$PROMETHEUS_VERSION" github.com/prometheus/prometheus/cmd/prometheus \
      "-X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION" || die "prometheus build failed"
  fi
fi

# ---------------------------------------------------------------- flux
# Each controller's module carries replace directives (pinned
# dependencies), which only count in the main module: so it is built
# inside a writable copy of its own module, not required from a
# throwaway one. Its api module, replaced by ./api in the repository, is
# a module of its own that the module's zip leaves out: it is taken at
# the version go.mod requires instead. Its CRDs (config/crd/bases) are
# copied beside.
build_flux() {
  local name=$1 mod=github.com/fluxcd/$1
  local dir=$SRC/$name
  local mdir pin
  mdir=$(module_info "$mod@$FLUX_VERSION" Dir) || return 1
  rm -rf "$dir"
  cp -r "$mdir" "$dir"
  chmod -R u+w "$dir"
  (cd "$dir" && go mod edit -dropreplace "$mod/api") || return 1
  for pin in $FLUX_PINS; do
    if grep -q "^[[:space:]]*${pin%%=*} " "$dir/go.mod"; then
      (cd "$dir" && go mod edit -replace "$pin") || return 1
    fi
  done
  build_bin "$dir" "$name" . || return 1
  mkdir -p "$BASE/flux-crds"
  cp "$mdir"/config/crd/bases/*.yaml "$BASE/flux-crds/"
  chmod u+w "$BASE"/flux-crds/*.yaml
  touch "$BASE/flux-crds/.done-$name-$FLUX_VERSION"
}
for c in "${FLUX_CMDS[@]}"; do
  if wanted "$c"; then
    if have "$c" && [ -f "$BASE/flux-crds/.done-$c-$FLUX_VERSION" ]; then log "$c: present"; else build_flux "$c" || die "$c build failed"; fi
  fi
done

log "done in $((SECONDS - total0))s; binaries in $BIN"
echo "$BIN"
