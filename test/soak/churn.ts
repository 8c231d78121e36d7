/**
 * The churn soak, shared by the short form in `npm test` (test/integration/soak.test.ts) and the
 * standalone long form (test/soak/long-soak.ts): random create / update / delete of CRs of the
 * `settings` chart among a fixed pool of names, a model of what must exist afterwards, and the
 * end-of-run invariants (releases match CRs exactly, nothing pending, no orphaned objects, no
 * leaked helm processes or values files, bounded memory).
 */
import { existsSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { resourceOf, type TestKind } from '../integration/crd.js';
import { crJson, helmList, type Cr } from '../integration/crs.js';
import type { TestCluster } from '../integration/harness.js';
import type { RunningOperator } from '../integration/operator.js';
import { logTail } from '../integration/operator-log.js';
import { waitFor } from '../integration/wait.js';
import { VALUES_DIR_PREFIX } from '../../src/helm/values-file.js';
import { descendants, rssKiB } from './procfs.js';
import { errorMessage } from '../../src/lib/errors.js';

/** Deterministic PRNG (mulberry32), so a failing run can be replayed from its printed seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ChurnOptions {
  readonly cluster: TestCluster;
  readonly kind: TestKind;
  readonly namespace: string;
  /** Names are `<prefix>-<i>` for i < pool. */
  readonly pool: number;
  readonly prefix?: string;
  readonly durationMs: number;
  readonly seed: number;
  /** Pause between operations, uniformly random in [min, max] ms. */
  readonly pauseMs?: readonly [number, number];
  /** Progress lines (one per ~10 s). */
  readonly log?: (line: string) => void;
  /** Called about every 10 s during the churn (e.g. to sample RSS). */
  readonly onTick?: () => void;
  /** Continue from an earlier churn's end state (same pool and prefix). */
  readonly from?: ChurnResult;
}

export interface ChurnResult {
  /** name → the `settings.color` its spec ends with, for every CR that must exist at the end. */
  readonly present: Map<string, string>;
  /** Names that were deleted (or never created) and must not exist at the end. */
  readonly absent: Set<string>;
  readonly ops: { create: number; update: number; delete: number; refused: number };
}

/**
 * Runs the churn for `durationMs`. Creates use `kubectl create`, so a name whose previous CR is
 * still terminating (finalizer not yet removed) is refused and stays absent in the model instead
 * of silently updating the dying object.
 */
export async function churn(opts: ChurnOptions): Promise<ChurnResult> {
  const { cluster, kind: k, namespace } = opts;
  const rnd = prng(opts.seed);
  const prefix = opts.prefix ?? 'churn';
  const [pmin, pmax] = opts.pauseMs ?? [100, 600];
  const names = Array.from({ length: opts.pool }, (_, i) => `${prefix}-${String(i)}`);
  const present = new Map<string, string>(opts.from?.present ?? []);
  const absent = new Set(opts.from?.absent ?? names);
  const ops = { ...(opts.from?.ops ?? { create: 0, update: 0, delete: 0, refused: 0 }) };
  const resource = resourceOf(k);
  // Colors stay unique across continued runs: a stale value can never look current.
  let counter = opts.from === undefined ? 0 : Object.values(opts.from.ops).reduce((a, b) => a + b, 0);
  const started = Date.now();
  let nextReport = started + 10_000;

  while (Date.now() - started < opts.durationMs) {
    const name = names[Math.floor(rnd() * names.length)] as string;
    const color = `c${String(++counter)}`;
    if (!present.has(name)) {
      const r = await cluster.kubectl(['create', '-f', '-'], { input: crJson(k, namespace, name, { settings: { color, churn: 'yes' } }), allowFail: true });
      if (r.exitCode === 0) {
        present.set(name, color);
        absent.delete(name);
        ops.create++;
      } else if (/AlreadyExists|already exists/.test(r.stderr)) {
        ops.refused++; // still terminating from an earlier delete
      } else {
        throw new Error(`kubectl create ${name} failed: ${r.stderr}`);
      }
    } else if (rnd() < 0.6) {
      const patch = JSON.stringify({ spec: { settings: { color } } });
      await cluster.kubectl(['patch', resource, name, '-n', namespace, '--type=merge', '-p', patch]);
      present.set(name, color);
      ops.update++;
    } else {
      await cluster.kubectl(['delete', resource, name, '-n', namespace, '--wait=false']);
      present.delete(name);
      absent.add(name);
      ops.delete++;
    }
    if (Date.now() >= nextReport) {
      nextReport += 10_000;
      opts.onTick?.();
      opts.log?.(
        `churn ${String(Math.round((Date.now() - started) / 1000))}s: ${String(present.size)} present, ` +
          `ops ${JSON.stringify(ops)}`,
      );
    }
    await sleep(pmin + rnd() * (pmax - pmin));
  }
  return { present, absent, ops };
}

interface CrList {
  items: Cr[];
}
interface CmList {
  items: { metadata: { name: string; labels?: Record<string, string> }; data?: Record<string, string> }[];
}
interface SecretList {
  items: { metadata: { name: string; labels?: Record<string, string> } }[];
}

/** Why the cluster does not (yet) match the model, or [] when it does. One LIST per resource. */
export async function convergenceProblems(cluster: TestCluster, k: TestKind, namespace: string, model: ChurnResult): Promise<string[]> {
  const problems: string[] = [];
  const crs = (JSON.parse((await cluster.kubectl(['get', resourceOf(k), '-n', namespace, '-o', 'json'])).stdout) as CrList).items;
  const byName = new Map(crs.map((c) => [c.metadata.name, c]));
  for (const [name] of model.present) {
    const cr = byName.get(name);
    const deployed = cr?.status?.conditions?.find((c) => c.type === 'Deployed');
    const failed = cr?.status?.conditions?.find((c) => c.type === 'ReleaseFailed');
    if (cr === undefined) problems.push(`${name}: CR missing`);
    else if (deployed?.status !== 'True' || failed !== undefined || cr.status?.observedGeneration !== cr.metadata.generation) {
      problems.push(`${name}: not converged (gen ${String(cr.metadata.generation)}, observed ${String(cr.status?.observedGeneration)}, Deployed ${String(deployed?.status)}, ReleaseFailed ${String(failed?.message)})`);
    }
  }
  for (const name of model.absent) if (byName.has(name)) problems.push(`${name}: deleted CR still exists (finalizer not removed?)`);

  const releases = await helmList(cluster, namespace);
  const relNames = new Set(releases.map((r) => r.name));
  for (const r of releases) {
    if (!model.present.has(r.name)) problems.push(`release ${r.name} has no CR (orphaned release, status ${r.status})`);
    else if (r.status !== 'deployed') problems.push(`release ${r.name} is ${r.status}`);
  }
  for (const name of model.present.keys()) if (!relNames.has(name)) problems.push(`${name}: no release`);

  const cms = (JSON.parse((await cluster.kubectl(['get', 'configmaps', '-n', namespace, '-o', 'json'])).stdout) as CmList).items;
  for (const cm of cms) {
    if (cm.metadata.name === 'kube-root-ca.crt') continue;
    const owner = cm.metadata.name.replace(/-settings$/, '');
    const want = model.present.get(owner);
    if (want === undefined) problems.push(`ConfigMap ${cm.metadata.name} is orphaned (its CR was deleted)`);
    else if (cm.data?.color !== want) problems.push(`ConfigMap ${cm.metadata.name}: color ${String(cm.data?.color)}, want ${want}`);
  }
  const cmNames = new Set(cms.map((c) => c.metadata.name));
  for (const name of model.present.keys()) if (!cmNames.has(`${name}-settings`)) problems.push(`${name}: ConfigMap missing`);

  const secrets = (JSON.parse((await cluster.kubectl(['get', 'secrets', '-n', namespace, '-l', 'owner=helm', '-o', 'json'])).stdout) as SecretList).items;
  for (const s of secrets) {
    const status = s.metadata.labels?.status ?? '?';
    const release = s.metadata.labels?.name ?? '?';
    if (!['deployed', 'superseded'].includes(status)) problems.push(`release record ${s.metadata.name} is ${status}`);
    if (!model.present.has(release)) problems.push(`release record ${s.metadata.name} belongs to deleted ${release}`);
  }
  return problems;
}

/** Polls until the cluster matches the model; the error lists what still differs. */
export async function waitConverged(cluster: TestCluster, k: TestKind, namespace: string, model: ChurnResult, timeoutMs: number, op?: RunningOperator): Promise<number> {
  const started = Date.now();
  let last: string[] = [];
  try {
    await waitFor(
      'the cluster to match the churn model',
      async () => {
        last = await convergenceProblems(cluster, k, namespace, model);
        return last.length === 0;
      },
      { timeoutMs, intervalMs: 2000 },
    );
  } catch (err) {
    const tail = op === undefined ? '' : `\n${logTail(op, 30)}`;
    throw new Error(`${errorMessage(err)}\nstill wrong (${String(last.length)}):\n  ${last.slice(0, 30).join('\n  ')}${tail}`, { cause: err });
  }
  return Date.now() - started;
}

/** Processes below the operator: an idle operator has none (every helm call has ended). */
export function childProcesses(op: RunningOperator): string[] {
  const pid = op.process.pid;
  if (pid === undefined) return [];
  return descendants(pid).map((p) => `${String(p.pid)} ${p.cmdline.slice(0, 160)}`);
}

/** Values directories left behind in the operator's private TMPDIR. */
export function leakedValuesDirs(tmp: string): string[] {
  if (!existsSync(tmp)) return [];
  return readdirSync(tmp).filter((f) => f.startsWith(VALUES_DIR_PREFIX));
}

/**
 * The operator's RSS once it has settled: the minimum of a few samples over `windowMs` (a single
 * sample can catch a transient peak between two GCs). KiB.
 */
export async function settledRssKiB(pid: number, windowMs = 10_000, samples = 5): Promise<number> {
  let min = Number.POSITIVE_INFINITY;
  for (let i = 0; i < samples; i++) {
    const r = rssKiB(pid);
    if (r === undefined) throw new Error(`process ${String(pid)} is gone`);
    min = Math.min(min, r);
    if (i < samples - 1) await sleep(windowMs / (samples - 1)); // measurement window, not a wait for state
  }
  return min;
}

const HELM_SUBCOMMANDS = new Set(['upgrade', 'install', 'uninstall', 'rollback', 'get', 'history', 'template', 'status', 'list']);

/**
 * Counts of helm subcommands in the wrapper's call log. The log writes each call's arguments on
 * one line, but `get all --template=…` carries a multi-line template: only lines that start with a
 * subcommand count.
 */
export function helmCallCounts(op: RunningOperator): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of op.helmCalls()) {
    const sub = line.split(' ')[0] ?? '';
    if (HELM_SUBCOMMANDS.has(sub)) out[sub] = (out[sub] ?? 0) + 1;
  }
  return out;
}
