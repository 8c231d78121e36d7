#!/usr/bin/env bash
# What a chartpilot process costs before it does anything, for one or more launchers side by side
# (e.g. another checkout's bin/chartpilot.js as the "before"), in interleaved rounds so that a
# shared machine's load falls on all of them alike. Per launcher, the medians of:
#   help      `chartpilot --help`: CPU (user+sys) and peak RSS of the process (/usr/bin/time)
#   generate  `chartpilot generate crd --watches-file watches.yaml` (the sample): likewise
#   ready     `chartpilot run` on the sample until /readyz answers 200: the operator process's own
#             CPU and peak RSS at that moment (/proc/<pid>/stat, VmHWM), and the wall time; its
#             helm workers are not counted (the bundle does not change them)
# and the machine's load average before and after.
#
# Usage: scripts/start-costs.sh [-n ROUNDS] [BIN...]    (default: 7 rounds of this checkout's bin/chartpilot.js)
# The cluster: CHARTPILOT_TEST_KUBECONFIG, default .cluster/kubeconfig (npm run cluster:up).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=7
if [[ ${1:-} == -n ]]; then rounds=$2; shift 2; fi
bins=("$@")
((${#bins[@]})) || bins=("$ROOT/bin/chartpilot.js")
KUBECONFIG_FILE=${CHARTPILOT_TEST_KUBECONFIG:-$ROOT/.cluster/kubeconfig}
[[ -f $KUBECONFIG_FILE ]] || { echo "start-costs: no cluster: set CHARTPILOT_TEST_KUBECONFIG or run npm run cluster:up" >&2; exit 1; }
BIN_DIR=${CHARTPILOT_TEST_BIN:-${CHARTPILOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chartpilot}/bin}
# The project's Node 24 and the operator's V8 flags (src/cli/node-flags.ts), as the harness runs it.
NODE=$ROOT/node_modules/.bin/node
[[ -x $NODE ]] || NODE=node
FLAGS=(--max-semi-space-size=4 --optimize-for-size)
export KUBECONFIG=$KUBECONFIG_FILE PATH=$BIN_DIR:$PATH
TICK=$(getconf CLK_TCK)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/start-costs.XXXXXX")
NS=start-costs-$$
OP_PID=
cleanup() {
  [[ -n $OP_PID ]] && kill "$OP_PID" 2>/dev/null && wait "$OP_PID" 2>/dev/null || true
  kubectl delete namespace "$NS" --wait=false --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$NODE" "${bins[0]}" generate crd --watches-file "$ROOT/watches.yaml" | kubectl apply -f - >/dev/null
kubectl create namespace "$NS" >/dev/null

# One process to exit: "cpu_s rss_mb".
timed() { /usr/bin/time -f '%U %S %M' -o "$WORK/time" "$@" >/dev/null 2>"$WORK/stderr" || { cat "$WORK/stderr" >&2; return 1; }; awk '{ printf "%.2f %.1f\n", $1 + $2, $3 / 1024 }' "$WORK/time"; }

# The operator until /readyz is 200: "cpu_s rss_mb wall_s".
ready() {
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  local start=$EPOCHREALTIME
  WATCH_NAMESPACE=$NS "$NODE" "${FLAGS[@]}" "$1" run --watches-file "$ROOT/watches.yaml" \
    --metrics-bind-address 0 --health-probe-bind-address "127.0.0.1:$port" >"$WORK/op.log" 2>&1 &
  OP_PID=$!
  until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
    kill -0 "$OP_PID" 2>/dev/null || { cat "$WORK/op.log" >&2; return 1; }
    sleep 0.02
  done
  local wall stat hwm
  wall=$(echo "$EPOCHREALTIME - $start" | bc)
  stat=$(cut -d' ' -f14,15 "/proc/$OP_PID/stat")
  hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$OP_PID/status")
  kill "$OP_PID"; wait "$OP_PID" 2>/dev/null || true; OP_PID=
  awk -v s="$stat" -v h="$hwm" -v w="$wall" -v t="$TICK" 'BEGIN { split(s, a, " "); printf "%.2f %.1f %.2f\n", (a[1] + a[2]) / t, h / 1024, w }'
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
for ((r = 0; r < rounds; r++)); do
  for i in "${!bins[@]}"; do
    b=${bins[$i]}
    timed "$NODE" "${FLAGS[@]}" "$b" --help >>"$WORK/help.$i"
    timed "$NODE" "${FLAGS[@]}" "$b" generate crd --watches-file "$ROOT/watches.yaml" >>"$WORK/generate.$i"
    ready "$b" >>"$WORK/ready.$i"
  done
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-10s %-52s %10s %10s %8s\n' what bin 'cpu s' 'rss MB' 'wall s'
for i in "${!bins[@]}"; do
  for what in help generate ready; do
    f=$WORK/$what.$i
    wall=-
    [[ $what == ready ]] && wall=$(cut -d' ' -f3 "$f" | median)
    printf '%-10s %-52s %10s %10s %8s   (%s runs; cpu %s)\n' "$what" "${bins[$i]}" "$(cut -d' ' -f1 "$f" | median)" "$(cut -d' ' -f2 "$f" | median)" "$wall" "$(wc -l <"$f")" "$(cut -d' ' -f1 "$f" | sort -n | tr '\n' ' ')"
  done
done
