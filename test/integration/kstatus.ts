/**
 * kstatus as GitOps tools compute it (devcluster/kstatus: cli-utils' status.Compute, unchanged),
 * over CRs as the API server returns them — now, or every version a watch saw.
 */
import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { execa } from 'execa';
import { provision } from '../../devcluster/provision.js';
import type { TestCluster } from './harness.js';

export interface Kstatus {
  status?: string;
  message?: string;
  error?: string;
}

/** kstatus of each object. */
export async function kstatusOf(objects: readonly unknown[]): Promise<Kstatus[]> {
  const bin = realpathSync(join(await provision({ components: ['kstatus'] }), 'kstatus'));
  const r = await execa(bin, [], { input: JSON.stringify(objects) });
  const results = JSON.parse(r.stdout) as Kstatus[];
  if (results.length !== objects.length) throw new Error(`kstatus answered ${String(results.length)} results for ${String(objects.length)} objects: ${r.stdout}`);
  return results;
}

/** What kstatus reads of a CR: generation, deletion and status (a watch line holds no more). */
export interface CrVersion {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { name: string; generation: number; deletionTimestamp?: string };
  readonly status?: unknown;
}

/**
 * Every version of the CRs of `resource` in `ns` a `kubectl get --watch` sees from now on (start
 * it before the CRs exist), as kstatus reads them, by name. A watch delivers each write (the
 * operator's announcement before helm runs, then how it went), which polling could miss.
 */
export function recordVersions(t: TestContext, cluster: TestCluster, resource: string, ns: string, apiVersion: string, kind: string): { versions: Map<string, CrVersion[]> } {
  const seen = { versions: new Map<string, CrVersion[]>() };
  // '|'-separated (kubectl's table writer turns tabs into padding): name, generation,
  // deletionTimestamp (empty when none), the status as JSON (the rest of the line).
  const jsonpath = 'jsonpath={.metadata.name}{"|"}{.metadata.generation}{"|"}{.metadata.deletionTimestamp}{"|"}{.status}{"\\n"}';
  const child = spawn(cluster.kubectlBin, ['get', resource, '-n', ns, '--watch', '-o', jsonpath], { env: cluster.env });
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    const lines = buffer.split('\n');
    buffer = lines.pop() ?? '';
    for (const line of lines) {
      const [name = '', generation = '', deletionTimestamp = '', ...rest] = line.split('|');
      const status = rest.join('|');
      if (name === '' || generation === '') continue;
      const version: CrVersion = {
        apiVersion,
        kind,
        metadata: { name, generation: Number(generation), ...(deletionTimestamp === '' ? {} : { deletionTimestamp }) },
        ...(status === '' ? {} : { status: JSON.parse(status) as unknown }),
      };
      seen.versions.set(name, [...(seen.versions.get(name) ?? []), version]);
    }
  });
  t.after(() => {
    child.kill();
  });
  return seen;
}
