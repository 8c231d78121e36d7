// Memory bounded by design: the CR cache keeps no specs, so a tenant's megabytes of CRs cannot
// crash the operator for everyone. The operator runs with V8's old space capped as the shipped
// Deployment caps it (MEMORY_NODE_OPTIONS), beside 60 CRs of ~1.1 MB in one namespace, and is
// restarted among them; each test prints the operator's peak RSS (`peak RSS …`).
//
// CHARTPILOT_MEASURE_CACHE=1 adds the measurement docs/architecture/performance.md quotes: RSS at 1000 CRs with 10 KB
// and 100 KB specs (paused, so no helm runs: the cache and one read per CR), minutes long.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it, type TestContext } from 'node:test';
import { MEMORY_NODE_OPTIONS } from '../../src/generate/deploy.js';
import { installCrd, resourceOf, testKind, type TestKind } from './crd.js';
import { condition, crsOf, type Cr } from './crs.js';
import { fixtureChart } from './fixtures.js';
import { newNamespace, testCluster, type TestCluster } from './harness.js';
import { startOperator, type RunningOperator } from './operator.js';
import { waitFor } from './wait.js';

const CHART = fixtureChart('values-hook');

/** A spec of about `bytes` bytes of JSON, as many small keys (what makes a cached object large in V8). */
function specOf(bytes: number): Record<string, unknown> {
  const data: Record<string, string> = {};
  for (let i = 0; i < Math.ceil(bytes / 100); i++) data[`key${String(i)}`] = 'x'.repeat(88);
  return { data };
}

/** Creates CRs one request each (kubectl splits the List), `count` of them with `spec`. */
async function createMany(cluster: TestCluster, kind: TestKind, ns: string, prefix: string, count: number, spec: unknown, annotations: Record<string, string> = {}): Promise<void> {
  // At most ~10 MB a kubectl call: 50 CRs of 1.1 MB in one call took the API server past the
  // harness's 120 s kubectl timeout on a loaded CI machine, before the operator even started.
  const batch = Math.max(1, Math.min(50, Math.floor(10_000_000 / JSON.stringify(spec).length)));
  for (let start = 0; start < count; start += batch) {
    const items = Array.from({ length: Math.min(batch, count - start) }, (_, i) => ({
      apiVersion: `${kind.group}/${kind.version}`,
      kind: kind.kind,
      metadata: { name: `${prefix}-${String(start + i)}`, namespace: ns, annotations },
      spec,
    }));
    await cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) });
  }
}

async function listCrs(cluster: TestCluster, kind: TestKind, ns: string): Promise<Cr[]> {
  // Only metadata and status: the specs are what this test is about, not for the test to hold.
  const r = await cluster.kubectl(['get', resourceOf(kind), '-n', ns, '-o', 'jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.status.conditions}{"\\t"}{.metadata.finalizers}{"\\n"}{end}']);
  return r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const [name = '', conditions = '', finalizers = ''] = l.split('\t');
      return { metadata: { name, finalizers: finalizers === '' ? [] : (JSON.parse(finalizers) as string[]) }, status: { conditions: conditions === '' ? [] : (JSON.parse(conditions) as NonNullable<Cr['status']>['conditions']) } };
    });
}

/** KiB from /proc/<pid>/status (VmRSS: now, VmHWM: peak). */
function rssKiB(op: RunningOperator, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${String(op.process.pid)}/status`, 'utf8');
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
}

const mib = (kib: number): string => `${(kib / 1024).toFixed(0)} MiB`;

/** Strips finalizers so the namespaces can go once the operator is stopped. */
async function cleanUp(cluster: TestCluster, kind: TestKind, op: RunningOperator, namespaces: string[]): Promise<void> {
  await op.stop('SIGKILL');
  for (const ns of namespaces) {
    const names = (await listCrs(cluster, kind, ns)).filter((cr) => (cr.metadata.finalizers ?? []).length > 0).map((cr) => cr.metadata.name);
    for (const name of names) {
      await cluster.kubectl(['patch', resourceOf(kind), name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'], { allowFail: true });
    }
  }
}

async function operator(t: TestContext, cluster: TestCluster, kind: TestKind, namespaces: string[], dir?: string): Promise<RunningOperator> {
  return startOperator(t, cluster, {
    namespaces,
    watches: dir === undefined ? [{ kind, chart: CHART }] : [],
    ...(dir === undefined ? {} : { dir }),
    args: ['--max-concurrent-reconciles=2'],
    // CHARTPILOT_TEST_NODE_OPTIONS: measure without the cap (e.g. `--max-old-space-size=4096`).
    env: { NODE_OPTIONS: process.env['CHARTPILOT_TEST_NODE_OPTIONS'] ?? MEMORY_NODE_OPTIONS },
  });
}

describe('memory is bounded whatever tenants put in their CRs', () => {
  it('60 CRs of ~1.1 MB in one namespace: refused by size, the operator stays up across a restart, another namespace still reconciles', { timeout: 900_000 }, async (t) => {
    const cluster = await testCluster();
    const kind = testKind('BigSpecs');
    await installCrd(cluster, kind);
    const a = await newNamespace(t, 'big-a');
    const b = await newNamespace(t, 'big-b');
    await createMany(cluster, kind, a, 'big', 60, specOf(1_100_000));
    // Large but allowed: read in full and deployed.
    await createMany(cluster, kind, a, 'large', 3, specOf(900_000));
    let op = await operator(t, cluster, kind, [a, b]);
    const tooLarge = (cr: Cr): boolean => condition(cr, 'Irreconcilable')?.reason === 'ValuesTooLarge';
    await waitFor('60 oversized CRs Irreconcilable', async () => (await listCrs(cluster, kind, a)).filter(tooLarge).length === 60, { timeoutMs: 180_000 });
    const victim = crsOf(cluster, kind, b, op);
    await victim.create('small', {});
    await victim.deployed('small', 120_000);
    for (const name of ['large-0', 'large-1', 'large-2']) await crsOf(cluster, kind, a, op).deployed(name, 120_000);
    t.diagnostic(`first run: peak RSS ${mib(rssKiB(op, 'VmHWM'))}, now ${mib(rssKiB(op, 'VmRSS'))}`);
    assert.equal(op.helmCalls().filter((c) => c.includes(' -- big-')).length, 0, 'no helm call for an oversized CR');

    await op.stop('SIGKILL');
    op = await operator(t, cluster, kind, [a, b], op.dir);
    const after = crsOf(cluster, kind, b, op);
    await after.create('after-restart', {});
    await after.deployed('after-restart', 120_000);
    t.diagnostic(`after a restart among them: peak RSS ${mib(rssKiB(op, 'VmHWM'))}, now ${mib(rssKiB(op, 'VmRSS'))}`);
    assert.equal(await op.exitCode(1).catch(() => undefined), undefined, 'the operator is still running');
    assert.ok(op.logs().split('\n').every((l) => !l.includes('heap out of memory')));
    await cleanUp(cluster, kind, op, [a, b]);
  });

  for (const kb of [10, 100]) {
    it(`RSS at 1000 CRs with ${String(kb)} KB specs`, { skip: process.env['CHARTPILOT_MEASURE_CACHE'] !== '1', timeout: 1_800_000 }, async (t) => {
      const cluster = await testCluster();
      const kind = testKind(`Cache${String(kb)}k`);
      await installCrd(cluster, kind);
      const ns = await newNamespace(t, `cache-${String(kb)}k`);
      await createMany(cluster, kind, ns, 'cr', 1000, specOf(kb * 1000), { 'helm.sdk.operatorframework.io/pause-reconcile': 'true' });
      const started = Date.now();
      const op = await operator(t, cluster, kind, [ns]);
      await waitFor('1000 CRs paused', async () => (await listCrs(cluster, kind, ns)).filter((cr) => condition(cr, 'Paused')?.status === 'True').length === 1000, { timeoutMs: 600_000, intervalMs: 2000 });
      const settled = Date.now() - started;
      t.diagnostic(`${String(kb)} KB × 1000: peak RSS ${mib(rssKiB(op, 'VmHWM'))}, after all were seen ${mib(rssKiB(op, 'VmRSS'))} (${(settled / 1000).toFixed(0)} s)`);
      assert.equal(await op.exitCode(1).catch(() => undefined), undefined, 'the operator is still running');
      await cleanUp(cluster, kind, op, [ns]);
    });
  }
});
