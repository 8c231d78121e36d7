/**
 * A timed helm stand-in per operator replica (helm runs as its child and each call's start and
 * end go to a log), and the check the sharding tests make on those logs: no two replicas ran a
 * call on one release at the same time. The replicas must run --helm-mode=cli, so every call is a
 * process the wrapper sees.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestCluster } from './harness.js';

/** One helm call as the wrapper logged it: replica, release, start and end (ms; end undefined while it runs). */
export interface HelmCall {
  readonly replica: string;
  readonly release: string;
  readonly verb: string;
  readonly start: number;
  readonly end: number | undefined;
}

/**
 * A helm stand-in for replica `name` that logs each call's start and end (helm runs as its child,
 * so a SIGKILLed operator's call still logs its end when helm finishes).
 */
export function timedHelm(cluster: TestCluster, dir: string, name: string): { bin: string; calls: () => HelmCall[] } {
  const log = join(dir, `${name}.calls`);
  const bin = join(dir, `${name}-helm.sh`);
  writeFileSync(
    bin,
    `#!/bin/sh\nid="$$"\nprintf 'start %s %s %s\\n' "$id" "$(date +%s%3N)" "$*" >> '${log}'\n'${cluster.helmBin}' "$@"\nrc=$?\nprintf 'end %s %s\\n' "$id" "$(date +%s%3N)" >> '${log}'\nexit $rc\n`,
  );
  chmodSync(bin, 0o755);
  const calls = (): HelmCall[] => {
    if (!existsSync(log)) return [];
    const open = new Map<string, { verb: string; release: string; start: number }>();
    const out: HelmCall[] = [];
    for (const line of readFileSync(log, 'utf8').split('\n')) {
      const [what, id = '', at = '', verb = '', ...rest] = line.split(' ');
      if (what === 'start') {
        if (verb === 'version') continue;
        // upgrade --install <release> … / uninstall <release> … / status <release> …: the first word not a flag.
        const release = rest.find((w) => !w.startsWith('-')) ?? '';
        open.set(id, { verb, release, start: Number(at) });
      } else if (what === 'end') {
        const o = open.get(id);
        if (o === undefined) continue;
        open.delete(id);
        out.push({ replica: name, ...o, end: Number(at) });
      }
    }
    for (const o of open.values()) out.push({ replica: name, ...o, end: undefined });
    return out;
  };
  return { bin, calls };
}

/** Pairs of calls on one release by two replicas whose times overlap. */
export function overlaps(calls: readonly HelmCall[]): string[] {
  const out: string[] = [];
  const byRelease = new Map<string, HelmCall[]>();
  for (const c of calls) byRelease.set(c.release, [...(byRelease.get(c.release) ?? []), c]);
  for (const [release, list] of byRelease) {
    for (const a of list) {
      for (const b of list) {
        if (a.replica >= b.replica) continue;
        const aEnd = a.end ?? Number.POSITIVE_INFINITY;
        const bEnd = b.end ?? Number.POSITIVE_INFINITY;
        if (a.start < bEnd && b.start < aEnd) out.push(`${release}: ${a.replica} ${a.verb} [${String(a.start)}, ${String(a.end)}] and ${b.replica} ${b.verb} [${String(b.start)}, ${String(b.end)}]`);
      }
    }
  }
  return out;
}
