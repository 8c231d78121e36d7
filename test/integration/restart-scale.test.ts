/**
 * A restart with many converged CRs: the new process checks every one of them and acts on none —
 * no helm process, no write to any CR — and its first look reads the release records from one
 * LIST of them all. The 10,000-CR figure lives in the bench (`--scenarios create,restart`).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { condition, type Cr } from './crs.js';
import { resourceOf } from './crd.js';
import { REPO_ROOT } from './fixtures.js';
import { logLines, logTail, type LogLine } from './operator-log.js';
import type { RunningOperator } from './operator.js';
import { setUp } from './scenario.js';
import { waitFor } from './wait.js';

const N = 200;
/** One ConfigMap per release: the cheapest chart, so 200 installs fit a busy shared machine. */
const CHART = join(REPO_ROOT, 'bench/charts/configmap');
const CHECKED = 'every resource checked since start';

/** The operator's "every resource checked" lines, oldest first. */
function checkedLines(op: RunningOperator): LogLine[] {
  return logLines(op).filter((l) => l.msg === CHECKED);
}

describe('restart with many converged CRs', () => {
  it(`checks all ${N} CRs after a restart with no helm process and no write to any of them`, async (t) => {
    const s = await setUp(t, { kind: 'Restarted', chart: CHART });
    const op = await s.start({ args: ['--max-concurrent-reconciles', '10'] });
    const names = Array.from({ length: N }, (_, i) => `r-${String(i).padStart(3, '0')}`);
    const items = names.map((name) => ({ apiVersion: `${s.kind.group}/${s.kind.version}`, kind: s.kind.kind, metadata: { name, namespace: s.ns }, spec: { message: name } }));
    await s.cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) });

    type Versioned = Cr & { readonly metadata: { readonly resourceVersion?: string } };
    const listCrs = async (): Promise<Versioned[]> => {
      const r = await s.cluster.kubectl(['get', resourceOf(s.kind), '-n', s.ns, '-o', 'json']);
      return (JSON.parse(r.stdout) as { items: Versioned[] }).items;
    };
    let deployed = 0;
    await waitFor(
      `${N} CRs Deployed`,
      async () => {
        deployed = (await listCrs()).filter((cr) => condition(cr, 'Deployed')?.status === 'True').length;
        return deployed === N;
      },
      { timeoutMs: 900_000, intervalMs: 2_000 },
    ).catch((err: unknown) => {
      throw new Error(`${deployed}/${N} Deployed: ${String(err)}\n${logTail(op)}`);
    });
    // Converged: a whole round of status writes is over when the CRs stop changing.
    let versions = '';
    await waitFor(
      'the CRs settled',
      async () => {
        const now = JSON.stringify((await listCrs()).map((cr) => [cr.metadata.name, cr.metadata.resourceVersion]));
        const same = now === versions;
        versions = now;
        return same;
      },
      { timeoutMs: 120_000, intervalMs: 5_000 },
    );
    assert.equal(op.helmCalls().filter((c) => c.startsWith('upgrade')).length, N, 'one install per CR');
    const callsBefore = op.helmCalls().length;

    assert.equal(await op.stop('SIGTERM'), 0);
    const restarted = await s.restart(op);
    const line = await waitFor(
      `the restarted operator checked all ${N} CRs`,
      () => Promise.resolve(checkedLines(restarted).find((l) => l.resources === N)),
      { timeoutMs: 300_000 },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${logTail(restarted)}`);
    });
    t.diagnostic(`restart: every CR checked ${String(line.seconds)} s after the controller started`);
    assert.equal(line.failed, 0);

    // None acted on: no helm process (helmCalls leaves out `helm version`), no CR written.
    assert.deepEqual(restarted.helmCalls().slice(callsBefore), []);
    const after = JSON.stringify((await listCrs()).map((cr) => [cr.metadata.name, cr.metadata.resourceVersion]));
    assert.equal(after, versions, 'no CR was written by the restarted operator');
    // The first look read the records from one LIST of them all, not one LIST per CR.
    const listed = logLines(restarted).filter((l) => l.msg === 'release records listed for the first look at each resource');
    assert.equal(listed.length, 2, 'one snapshot per start (the first start found none)');
    assert.equal(listed[1]?.releases, N);
  });
});
