#!/usr/bin/env bash
# What chartpilot pays per Ansible run, beside scripts/ansible-costs.sh's by-hand floor: the same
# three-object role (ConfigMap, Deployment, Service) as an Ansible kind, run by `chartpilot run`
# through its per-run API proxy: the first run (creates), a spec change (one run), then a restart
# of the operator with the converged CR (no run expected). Prints each run's wall and CPU as the
# operator logs them (`ansible run finished`: durationMs, cpuMs of the runner's process tree).
#
# Usage: scripts/ansible-operator-costs.sh   (the cluster: CHARTPILOT_TEST_KUBECONFIG, default .cluster/kubeconfig)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KUBECONFIG_FILE=${CHARTPILOT_TEST_KUBECONFIG:-$ROOT/.cluster/kubeconfig}
[[ -f $KUBECONFIG_FILE ]] || { echo "ansible-operator-costs: no cluster: set CHARTPILOT_TEST_KUBECONFIG or run npm run cluster:up" >&2; exit 1; }
KUBECTL=${CHARTPILOT_TEST_BIN:-${CHARTPILOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chartpilot}/bin}/kubectl
command -v "$KUBECTL" >/dev/null || KUBECTL=kubectl
[[ -f $ROOT/dist/bundle/chartpilot.js ]] || { echo "ansible-operator-costs: build first (npm run build)" >&2; exit 1; }
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"; }
# The project's Node 24 (the npm devDependency), as `npm run` would put it first on PATH.
NODE=$ROOT/node_modules/.bin/node
[[ -x $NODE ]] || NODE=node

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ansible-op-costs.XXXXXX")
NS=ansible-op-costs-$$
OP_PID=
cleanup() {
  [[ -n $OP_PID ]] && kill "$OP_PID" 2>/dev/null && wait "$OP_PID" 2>/dev/null || true
  k delete namespace "$NS" --wait=false --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

k apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: costapps.costs.chartpilot.io}
spec:
  group: costs.chartpilot.io
  names: {kind: CostApp, plural: costapps, singular: costapp, listKind: CostAppList}
  scope: Namespaced
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
            status: {type: object, x-kubernetes-preserve-unknown-fields: true}
EOF
k wait --for=condition=Established crd/costapps.costs.chartpilot.io --timeout=30s >/dev/null
k create namespace "$NS" >/dev/null

mkdir -p "$WORK/roles/app/tasks"
cat >"$WORK/roles/app/tasks/main.yml" <<'EOF'
- name: Config map
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: app-config, namespace: "{{ ansible_operator_meta.namespace }}"}
      data: {message: "{{ message | default('hello') }}"}
- name: Deployment
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: app, namespace: "{{ ansible_operator_meta.namespace }}"}
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
      metadata: {name: app, namespace: "{{ ansible_operator_meta.namespace }}"}
      spec: {selector: {app: app}, ports: [{port: 80, targetPort: 8080}]}
EOF
cat >"$WORK/watches.yaml" <<EOF
- {group: costs.chartpilot.io, version: v1alpha1, kind: CostApp, role: $WORK/roles/app}
EOF

start_operator() {
  # ANSIBLE_GATHERING=explicit: what `generate deploy` sets for Ansible kinds, and the by-hand
  # floor's playbook does not gather facts either (a role run would, at ~0.4 CPU-s).
  ANSIBLE_GATHERING=explicit KUBECONFIG=$KUBECONFIG_FILE WATCH_NAMESPACE=$NS "$NODE" "$ROOT/bin/chartpilot.js" run --watches-file "$WORK/watches.yaml" \
    --proxy-port 0 --metrics-bind-address 0 --health-probe-bind-address 0 >>"$WORK/operator.log" 2>&1 &
  OP_PID=$!
}
stop_operator() { kill "$OP_PID"; wait "$OP_PID" 2>/dev/null || true; OP_PID=; }
runs() { grep -c '"msg":"ansible run finished"' "$WORK/operator.log" || true; }
wait_runs() { # wait_runs <count>
  for _ in $(seq 1 240); do
    (($(runs) >= $1)) && return 0
    kill -0 "$OP_PID" 2>/dev/null || break
    sleep 0.5
  done
  echo "ansible-operator-costs: expected $1 runs; log:" >&2; tail -20 "$WORK/operator.log" >&2; exit 1
}

start_operator
k -n "$NS" apply -f - >/dev/null <<'EOF'
apiVersion: costs.chartpilot.io/v1alpha1
kind: CostApp
metadata: {name: app}
spec: {message: hello}
EOF
wait_runs 1
k -n "$NS" patch costapp app --type merge -p '{"spec":{"message":"changed"}}' >/dev/null
wait_runs 2
sleep 5
stop_operator
before=$(runs)
start_operator
# Every CR checked once it logs its plan; give it the time a run would take, and more.
sleep 15
after=$(runs)
stop_operator

"$NODE" -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter((l) => l.includes("\"ansible run finished\""));
const labels = ["first run (creates 3 objects)", "spec change (updates the ConfigMap)"];
lines.forEach((l, i) => { const j = JSON.parse(l); console.log(`${(labels[i] ?? "run " + (i + 1)).padEnd(40)} wall ${(j.durationMs / 1000).toFixed(2)} s, CPU ${j.cpuMs === undefined ? "?" : (j.cpuMs / 1000).toFixed(2)} s, trigger ${j.trigger}, changed=${j.changed}`); });
' "$WORK/operator.log"
echo "restart with the converged CR: $((after - before)) runs"
