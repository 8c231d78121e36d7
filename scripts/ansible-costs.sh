#!/usr/bin/env bash
# What one Ansible run costs: CPU seconds (user + sys of ansible-runner and every process it
# waits for) and wall time of `ansible-runner run` by hand, with the project's Ansible runtime,
# for a trivial playbook and for a role creating a ConfigMap with kubernetes.core.k8s against a
# cluster — each run first and then re-run unchanged. The floor an Ansible reconcile pays before
# any operator overhead (docs/operations/ansible-runtime.md).
#
# Usage: scripts/ansible-costs.sh [runs per case, default 3]
#   the cluster: CHARTPILOT_TEST_KUBECONFIG (default: .cluster/kubeconfig of `npm run cluster:up`)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=${1:-3}
KUBECONFIG_FILE=${CHARTPILOT_TEST_KUBECONFIG:-$ROOT/.cluster/kubeconfig}
[[ -f $KUBECONFIG_FILE ]] || { echo "ansible-costs: no cluster: set CHARTPILOT_TEST_KUBECONFIG or run npm run cluster:up" >&2; exit 1; }
KUBECTL=${CHARTPILOT_TEST_BIN:-${CHARTPILOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chartpilot}/bin}/kubectl
command -v "$KUBECTL" >/dev/null || KUBECTL=kubectl

RUNTIME=$(bash "$ROOT/devcluster/ansible-runtime.sh" | tail -n 1)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ansible-costs.XXXXXX")
NS=ansible-costs-$$
cleanup() {
  "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" delete namespace "$NS" --wait=false --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
"$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" create namespace "$NS" >/dev/null

# private data dir <name>: project/, inventory (localhost, the venv's Python), extravars.
setup() {
  local dir=$WORK/$1
  mkdir -p "$dir/project" "$dir/inventory" "$dir/env"
  echo "localhost ansible_connection=local ansible_python_interpreter=$RUNTIME/venv/bin/python" >"$dir/inventory/hosts"
  echo "{\"namespace\": \"$NS\"}" >"$dir/env/extravars"
}

setup trivial
cat >"$WORK/trivial/project/main.yml" <<'EOF'
- hosts: localhost
  gather_facts: false
  tasks:
    - name: nothing
      ansible.builtin.debug:
        msg: hello
EOF

setup configmap
mkdir -p "$WORK/configmap/project/roles/configmap/tasks"
cat >"$WORK/configmap/project/main.yml" <<'EOF'
- hosts: localhost
  gather_facts: false
  roles:
    - configmap
EOF
cat >"$WORK/configmap/project/roles/configmap/tasks/main.yml" <<'EOF'
- name: the ConfigMap
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: costs
        namespace: "{{ namespace }}"
      data:
        size: "3"
EOF

# The shape of test/fixtures/ansible/roles/webapp (the integration test's role) without its
# k8s_status task, which needs the custom resource: a ConfigMap, a Deployment and a Service.
setup app
mkdir -p "$WORK/app/project/roles/app/tasks"
cat >"$WORK/app/project/main.yml" <<'EOF'
- hosts: localhost
  gather_facts: false
  roles:
    - app
EOF
cat >"$WORK/app/project/roles/app/tasks/main.yml" <<'EOF'
- name: Config map
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: app-config, namespace: "{{ namespace }}"}
      data: {message: hello}
- name: Deployment
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: app, namespace: "{{ namespace }}"}
      spec:
        replicas: 1
        selector: {matchLabels: {app: app}}
        template:
          metadata: {labels: {app: app}}
          spec: {containers: [{name: web, image: registry.invalid/web:1, ports: [{containerPort: 8080}]}]}
- name: Service
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: Service
      metadata: {name: app, namespace: "{{ namespace }}"}
      spec: {selector: {app: app}, ports: [{port: 80, targetPort: 8080}]}
EOF

# measure <label> <private data dir> <run number>
measure() {
  local label=$1 dir=$2 n=$3 out times rc=0
  out=$WORK/$label-$n.log
  TIMEFORMAT='%R %U %S'
  times=$( { time env PATH="$RUNTIME/venv/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$RUNTIME/collections" \
    ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false K8S_AUTH_KUBECONFIG="$KUBECONFIG_FILE" \
    "$RUNTIME/venv/bin/ansible-runner" run "$dir" -p main.yml --ident "run-$n" >"$out" 2>&1 || rc=$?; } 2>&1 )
  ((rc == 0)) || { echo "ansible-costs: $label run $n failed (exit $rc):" >&2; tail -20 "$out" >&2; exit 1; }
  read -r wall user sys <<<"$times"
  local changed
  changed=$(grep -o 'changed=[0-9]*' "$out" | tail -n 1)
  printf '%-48s run %d: wall %5.2f s, CPU %5.2f s (user %.2f + sys %.2f), %s\n' \
    "$label" "$n" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" "$user" "$sys" "$changed"
}

echo "ansible-costs: runtime $RUNTIME ($(nproc) CPUs; $("$RUNTIME/venv/bin/python" -c "import json; d=json.load(open('$RUNTIME/runtime.json')); print('ansible-core', d['ansibleCore'], 'ansible-runner', d['ansibleRunner'], 'kubernetes.core', d['collections']['kubernetes.core'])"))"
for n in $(seq 1 "$RUNS"); do measure "trivial playbook (debug)" "$WORK/trivial" "$n"; done
for n in $(seq 1 "$RUNS"); do
  label="role: kubernetes.core.k8s ConfigMap"
  ((n == 1)) && label="$label (creates)" || label="$label (unchanged)"
  measure "$label" "$WORK/configmap" "$n"
done
for n in $(seq 1 "$RUNS"); do
  label="role: ConfigMap + Deployment + Service"
  ((n == 1)) && label="$label (creates)" || label="$label (unchanged)"
  measure "$label" "$WORK/app" "$n"
done
