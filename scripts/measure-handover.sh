#!/usr/bin/env bash
# Hand-over time after SIGTERM during a long helm call (issue #25 item 6), as a pod would see it:
# a leader and a standby (--leader-elect), a CR whose pre-install hook never completes, SIGTERM
# to the leader while helm waits on it, the CR's spec fixed at once, and the kubelet's SIGKILL of
# the leader's whole process group (helm included) if it has not exited 30 s after SIGTERM.
# Prints SIGTERM → leader exit and SIGTERM → CR Deployed by the standby.
#
#   scripts/measure-handover.sh [checkout]   # a built chartpilot checkout (default: this one)
#
# Needs KUBECONFIG (e.g. .cluster/kubeconfig of `npm run cluster:up`) and helm/kubectl on PATH
# (${XDG_CACHE_HOME:-~/.cache}/chartpilot/bin). Uses a namespace and CRD of its own, removed after.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
checkout=$(cd "${1:-$here}" && pwd)
chart="$here/test/fixtures/charts/stoppable-hook"
ns="handover-$(date +%s)"
group=measure.chartpilot.io
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  # No operator is left to remove its finalizer, which would keep the namespace terminating.
  kubectl patch "handovers.$group" web -n "$ns" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
  kubectl delete ns "$ns" --wait=false >/dev/null 2>&1 || true
  kubectl delete crd "handovers.$group" --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }
wait_log() { until grep -q "$2" "$1"; do sleep 0.1; done; }

kubectl create ns "$ns" >/dev/null
kubectl apply -f - >/dev/null <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: handovers.$group}
spec:
  group: $group
  names: {kind: Handover, plural: handovers, singular: handover, listKind: HandoverList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
kubectl wait --for=condition=Established "crd/handovers.$group" >/dev/null
printf -- '- group: %s\n  version: v1\n  kind: Handover\n  chart: %s\n' "$group" "$chart" > "$work/watches.yaml"

start() { # $1 = log file; prints the pid (= its process group)
  WATCH_NAMESPACE=$ns setsid node "$checkout/bin/chartpilot.js" run --watches-file "$work/watches.yaml" \
    --metrics-bind-address 0 --health-probe-bind-address 0 --leader-elect \
    --leader-election-namespace "$ns" --leader-election-id handover >"$1" 2>&1 &
  echo $!
}
a=$(start "$work/a.log"); pids+=("$a")
wait_log "$work/a.log" 'became leader'
b=$(start "$work/b.log"); pids+=("$b")
wait_log "$work/b.log" 'standing by'

cr() { printf '{"apiVersion":"%s/v1","kind":"Handover","metadata":{"name":"web","namespace":"%s"},"spec":{"stuck":%s}}' "$group" "$ns" "$1" | kubectl apply -f - >/dev/null; }
cr true
until kubectl get secrets -n "$ns" -l owner=helm,name=web,status=pending-install -o name | grep -q .; do sleep 0.2; done

t0=$(now)
kill -TERM "$a"
cr false
killed=
while kill -0 "$a" 2>/dev/null; do
  if [ -z "$killed" ] && (( $(ms "$t0" "$(now)") >= 30000 )); then
    kill -KILL -- "-$a"; killed=1
    echo "leader still running 30 s after SIGTERM: SIGKILL of its process group (as the kubelet)"
  fi
  sleep 0.1
done
t1=$(now)
echo "SIGTERM → leader exited: $(ms "$t0" "$t1") ms"
until [ "$(kubectl get "handovers.$group" web -n "$ns" -o 'jsonpath={.status.conditions[?(@.type=="Deployed")].status}')" = True ] &&
      [ "$(kubectl get configmap web-config -n "$ns" -o 'jsonpath={.data.stuck}' 2>/dev/null)" = false ]; do sleep 0.5; done
t2=$(now)
echo "SIGTERM → CR Deployed by the standby: $(ms "$t0" "$t2") ms"
kubectl get secrets -n "$ns" -l owner=helm -L status --no-headers | awk '{print "record " $1 ": " $NF}'
