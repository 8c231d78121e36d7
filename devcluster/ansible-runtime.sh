#!/usr/bin/env bash
# Builds the Ansible runtime that Ansible kinds run on: a Python venv with the exact packages of
# ansible/runtime/requirements.txt (ansible-core, ansible-runner, kubernetes, jsonpatch and their
# dependencies, from PyPI, hash-checked, compiled .pyc) and a collections path holding
# kubernetes.core (extracted from the `ansible` wheel, see ansible/runtime/collections-source.txt)
# and our own operator_sdk.util (ansible/collections/). Debian's ansible packages cannot serve:
# bookworm's python3-kubernetes is below kubernetes.core's minimum.
#
# The runtime is cached by content outside the repository, like the control plane's binaries:
#   ${CHARTPILOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chartpilot}/ansible-<hash>/
#     venv/bin/{python,ansible-runner,ansible-playbook,...}
#     collections/ansible_collections/{kubernetes/core,operator_sdk/util}/
#     runtime.json      versions and hash; written last, so its presence marks a complete runtime
# <hash> covers every input (this script, both requirement files, the collection's files, the
# Python it is built with), so a change lands in a new directory and an unchanged tree builds
# nothing. It is built in a temporary directory and renamed into place under a lock, so an
# interrupted or concurrent build never leaves a half runtime under the final name.
#
# Usage: ansible-runtime.sh            ensure the runtime; one timing line, then its directory LAST
#        ansible-runtime.sh --hash     print the inputs' hash only
#        ansible-runtime.sh --export <dir> <path>
#                                      copy the runtime into <dir>, rewritten to run from <path>
#                                      (the image's /opt/chartpilot/ansible)
# See docs/operations/ansible-runtime.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SELF=$ROOT/devcluster/ansible-runtime.sh
REQUIREMENTS=$ROOT/ansible/runtime/requirements.txt
COLLECTIONS_SOURCE=$ROOT/ansible/runtime/collections-source.txt
OWN_COLLECTIONS=$ROOT/ansible/collections
CACHE=${CHARTPILOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chartpilot}
# Debian's Python 3.11 (what the image has too), not whatever python3 comes first on PATH: the venv
# links to its interpreter, so it must be one that stays where it is.
PYTHON=${CHARTPILOT_ANSIBLE_PYTHON:-/usr/bin/python3}

die() { echo "ansible-runtime: $*" >&2; exit 1; }

# Installs python3-venv (and python3 itself) when missing, the way .ci/run installs its packages.
need_python() {
  if [[ -x $PYTHON ]] && "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then return; fi
  [[ $PYTHON == /usr/bin/python3 ]] || die "$PYTHON cannot create a venv (no ensurepip): install its venv module"
  command -v apt-get >/dev/null || die "/usr/bin/python3 with its venv module is needed (Debian: apt-get install python3-venv)"
  local sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo -n)
  echo "ansible-runtime: installing Debian packages: python3 python3-venv" >&2
  if ! { "${sudo[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends python3 python3-venv; } >&2; then
    die "could not install python3-venv (apt-get failed, see above): as root, apt-get install -y python3-venv"
  fi
}

own_collection_files() {
  (cd "$ROOT" && find ansible/collections -type f ! -path '*/__pycache__/*' ! -name '*.pyc' | LC_ALL=C sort)
}

inputs_hash() {
  local python_id
  python_id=$("$PYTHON" -c 'import sys, platform; print(sys.version, platform.machine())' 2>/dev/null || echo "missing $PYTHON")
  {
    echo "python $PYTHON $python_id"
    (cd "$ROOT" && sha256sum devcluster/ansible-runtime.sh ansible/runtime/requirements.txt ansible/runtime/collections-source.txt)
    own_collection_files | (cd "$ROOT" && xargs -d '\n' sha256sum)
  } | sha256sum | cut -c1-16
}

# Points every absolute path the venv holds (scripts' #! lines, activate) from <old> to <new>.
# pyvenv.cfg names only the base interpreter, which stays.
relocate() { # <venv dir> <old prefix> <new prefix>
  local venv=$1 old=$2 new=$3 f
  for f in "$venv"/bin/*; do
    [[ -f $f && ! -L $f ]] || continue
    grep -Iq . "$f" 2>/dev/null || continue
    if grep -qF "$old" "$f"; then sed -i "s#$old#$new#g" "$f"; fi
  done
}

# build <tmp dir> <final dir>: everything the runtime holds, in <tmp dir>, for use at <final dir>.
build() {
  local tmp=$1 final=$2 wheel
  "$PYTHON" -m venv "$tmp/venv"
  # --no-compile: compiled below, with the final paths in the .pyc files. No pip cache is kept.
  "$tmp/venv/bin/python" -m pip install --quiet --no-cache-dir --disable-pip-version-check --no-compile \
    --require-hashes --only-binary :all: --no-deps -r "$REQUIREMENTS" >&2
  # The `ansible` wheel (55 MB) is downloaded, mined for kubernetes.core and thrown away.
  mkdir -p "$tmp/download" "$tmp/collections/ansible_collections/kubernetes"
  "$tmp/venv/bin/python" -m pip download --quiet --no-cache-dir --disable-pip-version-check \
    --require-hashes --only-binary :all: --no-deps -d "$tmp/download" -r "$COLLECTIONS_SOURCE" >&2
  # pip and setuptools only served the install; nothing at run time imports them.
  "$tmp/venv/bin/python" -m pip uninstall --quiet --yes pip setuptools >&2
  wheel=$(echo "$tmp"/download/ansible-*.whl)
  [[ -f $wheel ]] || die "pip download gave no ansible wheel"
  "$tmp/venv/bin/python" - "$wheel" "$tmp/collections" <<'EOF'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
prefix = 'ansible_collections/kubernetes/core/'
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.startswith(prefix) and '/tests/' not in m[len(prefix) - 1:]]
    if not members:
        sys.exit(f'{wheel} has no {prefix}')
    z.extractall(dest, members)
EOF
  rm -rf "$tmp/download"
  cp -R "$OWN_COLLECTIONS/ansible_collections/operator_sdk" "$tmp/collections/ansible_collections/"
  find "$tmp/collections" -name __pycache__ -prune -exec rm -rf {} +
  relocate "$tmp/venv" "$tmp" "$final"
  # Compiled once here (a run without .pyc costs twice the CPU); unchecked-hash: the files never
  # change, and a read-only image root must not be asked to rewrite them.
  "$tmp/venv/bin/python" -m compileall -q -j 2 --invalidation-mode unchecked-hash -s "$tmp" -p "$final" \
    "$tmp/venv/lib" "$tmp/collections" >/dev/null
  write_runtime_json "$tmp" "$final"
}

write_runtime_json() { # <dir> <final dir>
  "$1/venv/bin/python" - "$1" "$2" "$HASH" <<'EOF' >"$1/runtime.json.tmp"
import json, sys, importlib.metadata as md
d, final, h = sys.argv[1], sys.argv[2], sys.argv[3]
def manifest(path):
    with open(f'{d}/collections/ansible_collections/{path}/MANIFEST.json') as f:
        return json.load(f)['collection_info']['version']
def galaxy(path):
    with open(f'{d}/collections/ansible_collections/{path}/galaxy.yml') as f:
        for line in f:
            if line.startswith('version:'):
                return line.split(':', 1)[1].strip().strip('"\'')
print(json.dumps({
    'hash': h,
    'python': '.'.join(map(str, sys.version_info[:3])),
    'ansibleCore': md.version('ansible-core'),
    'ansibleRunner': md.version('ansible-runner'),
    'kubernetes': md.version('kubernetes'),
    'collections': {'kubernetes.core': manifest('kubernetes/core'), 'operator_sdk.util': galaxy('operator_sdk/util')},
}, indent=2))
EOF
  mv "$1/runtime.json.tmp" "$1/runtime.json"
}

ensure() {
  local final start lock tmp
  need_python
  HASH=$(inputs_hash)
  final=$CACHE/ansible-$HASH
  if [[ -f $final/runtime.json ]]; then echo "ansible runtime $HASH: cached"; echo "$final"; return; fi
  mkdir -p "$CACHE"
  exec {lock}>"$final.lock"
  if ! flock -n "$lock"; then
    echo "ansible runtime $HASH: waiting for a concurrent provision to finish building it" >&2
    flock "$lock"
  fi
  if [[ -f $final/runtime.json ]]; then
    echo "ansible runtime $HASH: cached (built by a concurrent provision)"
  else
    start=$SECONDS
    # Under the lock, a directory without runtime.json or a temporary one is left by a build that
    # was killed: they go.
    rm -rf "$final" "$CACHE/.ansible-$HASH."*
    tmp=$(mktemp -d "$CACHE/.ansible-$HASH.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    build "$tmp" "$final"
    mv -T "$tmp" "$final"
    trap - EXIT
    echo "ansible runtime $HASH: built in $((SECONDS - start))s ($(du -sm "$final" | cut -f1) MiB)"
  fi
  exec {lock}>&-
  echo "$final"
}

# export <dir> <path>: a copy of the runtime for another location (an image's), its venv pointed
# there; the .pyc files keep the cache's paths in tracebacks only (Python corrects them on import).
export_to() {
  local dir=$1 path=$2 src
  src=$(ensure | tail -n 1)
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  cp -a "$src" "$dir"
  relocate "$dir/venv" "$src" "$path"
}

case ${1:-} in
  --hash) inputs_hash ;;
  --export) [[ $# == 3 ]] || die "usage: $0 --export <dir> <path the runtime will run from>"; export_to "$2" "$3" ;;
  '') ensure ;;
  *) die "unknown argument '$1' (usage: $0 [--hash | --export <dir> <path>])" ;;
esac
