/**
 * Per-replica figures of a phase (`--replicas R`, run --shards) and what each chartpilot process
 * says of its share in `/metrics`: the CRs it holds and the objects its dependent watches cache
 * (`chartpilot_dependent_cached_objects`). Issue #27 asks for per-replica CPU and memory and for
 * each replica's dependents cache holding about 1/R; pure functions here, the I/O in contenders.ts.
 */
import { request } from 'node:https';
import type { MetricsTarget } from './metrics-probe.js';

/** One replica's counters at a moment: CPU (operator, its helm children and workers) and helm processes started. */
export interface ReplicaMark {
  readonly name: string;
  /** utime+stime of the operator process (s). */
  readonly self: number;
  /** Its reaped helm processes and live warm workers (s). */
  readonly children: number;
  readonly helm: number;
}

/** What one process's `/metrics` says of its share, one scrape after a wave (null: the series is absent). */
export interface ShareSnapshot {
  /** `chartpilot_shard_assigned_resources`: CRs this replica holds (--shards only). */
  assignedCrs: number | null;
  /** `chartpilot_shard_ring_members`: live members it sees (--shards only). */
  ringMembers: number | null;
  /** `chartpilot_dependent_cached_objects{watch="owned"}`: objects of its owners in its dependent caches. */
  dependentsOwned: number | null;
  /** `…{watch="unbucketed"}`: objects without an owner-bucket label, which every sharded replica caches. */
  dependentsUnbucketed: number | null;
  /** `chartpilot_dependent_watch_buckets`: uid buckets (of 1024) its dependent watches select. */
  dependentBuckets: number | null;
  /** `chartpilot_dependent_watch_swaps_total`. */
  dependentSwaps: number | null;
  /** Why the scrape failed, when it did. */
  error?: string;
}

/** One replica over one phase. */
export interface ReplicaPhase {
  readonly name: string;
  /** Operator + helm (s). */
  readonly cpuSeconds: number;
  /** Of which the operator process (s). */
  readonly cpuOperatorSeconds: number;
  readonly helmProcesses: number;
  /** Peak RSS of the operator process over the phase (MiB). */
  readonly peakRssMiB: number;
}

/** One process's share after a wave: its `/metrics`, and (with --shards) the CRs labelled for it as the bench counts them. */
export interface NamedShare extends ShareSnapshot {
  readonly name: string;
  crsLabelled?: number;
}

/** Each replica's deltas between two marks, with its peak RSS over the phase (KiB by name). */
export function replicaDeltas(a: readonly ReplicaMark[], b: readonly ReplicaMark[], peakKiB: ReadonlyMap<string, number>): ReplicaPhase[] {
  const before = new Map(a.map((m) => [m.name, m]));
  return b.map((m) => {
    const s = before.get(m.name) ?? { self: 0, children: 0, helm: 0 };
    return {
      name: m.name,
      cpuSeconds: m.self + m.children - s.self - s.children,
      cpuOperatorSeconds: m.self - s.self,
      helmProcesses: m.helm - s.helm,
      peakRssMiB: (peakKiB.get(m.name) ?? 0) / 1024,
    };
  });
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$/;

/** The share figures of one Prometheus text exposition (each absent series: null). */
export function shareFigures(text: string): ShareSnapshot {
  const out: ShareSnapshot = { assignedCrs: null, ringMembers: null, dependentsOwned: null, dependentsUnbucketed: null, dependentBuckets: null, dependentSwaps: null };
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (m === null) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    const labels = m[2] ?? '';
    switch (m[1]) {
      case 'chartpilot_shard_assigned_resources': out.assignedCrs = (out.assignedCrs ?? 0) + value; break;
      case 'chartpilot_shard_ring_members': out.ringMembers = value; break;
      case 'chartpilot_dependent_cached_objects':
        if (/(^|,)watch="owned"/.test(labels)) out.dependentsOwned = value;
        else if (/(^|,)watch="unbucketed"/.test(labels)) out.dependentsUnbucketed = value;
        break;
      case 'chartpilot_dependent_watch_buckets': out.dependentBuckets = value; break;
      case 'chartpilot_dependent_watch_swaps_total': out.dependentSwaps = value; break;
      default: break;
    }
  }
  return out;
}

/** Each value's share of their sum (0–1), in order; all 0 when the sum is 0. */
export function shares(values: readonly number[]): number[] {
  const sum = values.reduce((t, v) => t + v, 0);
  return values.map((v) => (sum === 0 ? 0 : v / sum));
}

/** One GET /metrics (HTTPS, self-signed, token), its body. */
export function scrapeText(target: Pick<MetricsTarget, 'port' | 'token'>): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: target.port, path: '/metrics', headers: { Authorization: `Bearer ${target.token}` }, rejectUnauthorized: false, agent: false, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`GET /metrics answered ${String(res.statusCode)}`));
          else resolve(Buffer.concat(chunks).toString('utf8'));
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('GET /metrics: no answer within 30 s')));
    req.on('error', reject);
    req.end();
  });
}

/** A process's share from one scrape; the failure as `error` rather than thrown (a figure, not a stop). */
export async function snapshotShare(target: () => Promise<Pick<MetricsTarget, 'port' | 'token'>>): Promise<ShareSnapshot> {
  try {
    return shareFigures(await scrapeText(await target()));
  } catch (err) {
    return { ...shareFigures(''), error: err instanceof Error ? err.message : String(err) };
  }
}
