/**
 * The start-up warning for a container memory limit below what chartpilot needs. operator-sdk's
 * scaffold limits the manager to 128Mi, and "switch by changing the image" keeps that limit: the
 * operator must say so at start rather than thrash or be OOM-killed without a word.
 *
 * What it needs is measured, not modelled (docs/guides/from-operator-sdk.md, "Memory"): a memory
 * cgroup is charged for the pages of the node and helm binaries its processes touch whenever they
 * are not already in the page cache on another cgroup's account (a node that evicted them), and
 * then the operator needs about OPERATOR_MIB resident and each helm process about HELM_MIB. Under
 * 128 MiB a 20-CR upgrade wave thrashed (48 000 major faults, no wave finished in 240 s, the
 * leader lease lost) where 1 GiB took 8 s.
 *
 * The limit is cgroup v2's memory.max or cgroup v1's memory.limit_in_bytes of this process's cgroup.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** node running the operator, its binary's touched pages included (RSS measured idle and after a wave: 97-101 MiB). */
export const OPERATOR_MIB = 100;
/** One helm process (a warm chartpilot-helm worker or a helm call): RSS 53-55 MiB measured. */
export const HELM_MIB = 55;
const MIB = 1024 * 1024;
/** cgroup v1 writes "no limit" as a page-rounded 2^63-1; anything this large is none. */
const NO_LIMIT_FROM = 2 ** 60;

/** Reads a file's text, or undefined when it cannot be read: the one side effect. */
export type ReadText = (path: string) => Promise<string | undefined>;

const readText: ReadText = async (path) => {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
};

function limitOf(text: string | undefined): number | undefined {
  const value = text?.trim();
  if (value === undefined || value === '' || value === 'max') return undefined;
  const bytes = Number(value);
  return Number.isFinite(bytes) && bytes > 0 && bytes < NO_LIMIT_FROM ? bytes : undefined;
}

/**
 * This process's memory limit in bytes, or undefined for none (or no cgroup to tell). Inside a
 * container the cgroup's own directory is mounted at the hierarchy's root, while /proc/self/cgroup
 * may still name the host's path: both are tried.
 */
export async function memoryLimit(read: ReadText = readText, root = '/sys/fs/cgroup'): Promise<number | undefined> {
  const lines = (await read('/proc/self/cgroup'))?.split('\n') ?? [];
  const v2 = lines.find((l) => l.startsWith('0::'))?.slice(3);
  const v1 = lines.map((l) => l.split(':')).find((f) => f[1]?.split(',').includes('memory'))?.[2];
  const candidates = [
    ...(v1 === undefined ? [] : [join(root, 'memory', v1, 'memory.limit_in_bytes'), join(root, 'memory', 'memory.limit_in_bytes')]),
    ...(v2 === undefined ? [] : [join(root, v2, 'memory.max'), join(root, 'memory.max')]),
  ];
  for (const path of [...new Set(candidates)]) {
    const text = await read(path);
    if (text !== undefined) return limitOf(text);
  }
  return undefined;
}

export interface MemoryNeed {
  readonly mib: number;
  /** How many helm processes may run at once (warm workers, or helm calls in cli mode). */
  readonly helmProcesses: number;
}

export function memoryNeed(helmProcesses: number): MemoryNeed {
  return { mib: OPERATOR_MIB + HELM_MIB * helmProcesses, helmProcesses };
}

/** The warning line, or undefined when the limit is enough (or there is none). */
export function memoryWarning(limitBytes: number | undefined, need: MemoryNeed): string | undefined {
  if (limitBytes === undefined || limitBytes >= need.mib * MIB) return undefined;
  const limit = Math.floor(limitBytes / MIB);
  const helm = need.helmProcesses === 1 ? 'one helm process' : `up to ${String(need.helmProcesses)} helm processes`;
  return (
    `the container's memory limit (${String(limit)} MiB) is below what chartpilot needs here, about ${String(need.mib)} MiB ` +
    `(the operator ~${String(OPERATOR_MIB)} MiB and ${helm} ~${String(HELM_MIB)} MiB${need.helmProcesses === 1 ? '' : ' each'}, their binaries' pages included): ` +
    `it may thrash or be OOM-killed under load; raise resources.limits.memory to at least ${String(Math.ceil(need.mib / 64) * 64)}Mi ` +
    '(operator-sdk\'s scaffold sets 128Mi), or lower --max-concurrent-reconciles/--helm-workers'
  );
}
