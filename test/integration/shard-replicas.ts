/**
 * Ring members as the sharding tests run them: `chartpilot run --shards` replicas, each with a
 * timed helm (every call's start and end logged, timed-helm.ts), and the CRs with the shard labels
 * the ring wrote on them.
 */
import { resourceOf, type TestKind } from './crd.js';
import type { Cr } from './crs.js';
import type { TestCluster } from './harness.js';
import type { RunningOperator } from './operator.js';
import type { Setup } from './scenario.js';
import { timedHelm, type HelmCall } from './timed-helm.js';
import { waitFor } from './wait.js';

export interface Replica {
  readonly name: string;
  readonly op: RunningOperator;
  readonly calls: () => HelmCall[];
}

/**
 * Starts replica `name` (POD_NAME) with `args` (the --shards flags and any others) and a timed
 * helm, and resolves once its controllers started (it joined the ring).
 */
export async function startReplica(s: Setup, dir: string, name: string, args: readonly string[]): Promise<Replica> {
  const helm = timedHelm(s.cluster, dir, name);
  const op = await s.start({ args, env: { HELM_BIN: helm.bin, POD_NAME: name, POD_NAMESPACE: s.ns }, noWait: true });
  await waitFor(`${name} joined`, () => Promise.resolve(op.logs().includes('controller started')), { timeoutMs: 60_000, intervalMs: 100 });
  return { name, op, calls: helm.calls };
}

export async function listCrs(cluster: TestCluster, kind: TestKind, ns: string): Promise<Cr[]> {
  const r = await cluster.kubectl(['get', resourceOf(kind), '-n', ns, '-o', 'json']);
  return (JSON.parse(r.stdout) as { items: Cr[] }).items;
}

/** Each CR's owner as the shard label `label` names it. */
export function owners(crs: readonly Cr[], label: string): Map<string, string | undefined> {
  return new Map(crs.map((c) => [c.metadata.name, c.metadata.labels?.[label]]));
}

/** How many CRs each owner has ('<none>': unassigned). */
export function countBy(m: Map<string, string | undefined>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of m.values()) out[v ?? '<none>'] = (out[v ?? '<none>'] ?? 0) + 1;
  return out;
}

/** A List of CRs `names` (spec.message = the name), for one `kubectl create`. */
export function crList(kind: TestKind, ns: string, names: readonly string[]): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: names.map((name) => ({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name, namespace: ns }, spec: { message: name } })),
  });
}
