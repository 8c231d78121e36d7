/**
 * `chartpilot run --shards` and the releases' objects (dependents), on the real control plane with
 * the real helm. Each replica's dependent caches hold only the objects of the CRs its share of the
 * ring gives it (its chartpilot_dependent_cached_objects says so, and the replicas' together hold
 * every object once). A bucket label a namespace admin changes or removes neither hides drift (the
 * owner's watch sees the object leave, and its pass repairs the object and the label) nor makes
 * another replica act on the CR. When a fourth replica joins, the watches follow the CRs: the three
 * shrink to their new shares (at most one swap per change of their view), the new one holds its
 * share, and drift on an object of a CR that moved is repaired by its new owner alone. The replicas
 * run with --reconcile-period 0, so every repair here comes from a dependent watch.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { pickOf } from '../../src/controller/sharding/guard.js';
import { bucketOf } from '../../src/lib/uid-bucket.js';
import { isDeployed, type Cr } from './crs.js';
import { fixtureChart } from './fixtures.js';
import { logLines } from './operator-log.js';
import { setUp } from './scenario.js';
import { metric } from './scrape.js';
import { countBy, crList, listCrs, owners, startReplica, type Replica } from './shard-replicas.js';
import { overlaps } from './timed-helm.js';
import { waitFor } from './wait.js';

const CHART = fixtureChart('tiny');
const RING = 'deps';
const LABEL = `shard.chartpilot.io/${RING}`;
const DRAIN = `drain.${LABEL}`;
const BUCKET = 'chartpilot.io/owner-bucket';
const LEASE_S = 3;
const COUNT = 24;
/** The tiny chart's objects: a ConfigMap and a Deployment, both labelled with their owner. */
const OBJECTS_PER_CR = 2;

function args(ns: string): string[] {
  return [
    '--helm-mode=cli', '--shards', '--leader-election-id', RING, '--leader-election-namespace', ns, '--shard-lease-duration', `${String(LEASE_S)}s`,
    '--max-concurrent-reconciles', '2', '--reconcile-period', '0', '--metrics-bind-address', '127.0.0.1:0', '--log-level', 'debug',
  ];
}

interface Cached {
  readonly owned: number;
  readonly unbucketed: number;
  readonly buckets: number;
  readonly swaps: number;
}

async function metricsText(r: Replica): Promise<string> {
  const address = await waitFor(`${r.name}'s metrics address`, () => {
    const a = logLines(r.op).find((l) => l.msg === 'metrics server listening')?.address;
    return Promise.resolve(typeof a === 'string' ? a : undefined);
  });
  return (await fetch(`http://${address}/metrics`)).text();
}

async function cachedBy(r: Replica): Promise<Cached> {
  const text = await metricsText(r);
  const read = (name: string, labels: Record<string, string> = {}): number => metric(text, name, labels) ?? Number.NaN;
  return {
    owned: read('chartpilot_dependent_cached_objects', { watch: 'owned' }),
    unbucketed: read('chartpilot_dependent_cached_objects', { watch: 'unbucketed' }),
    buckets: read('chartpilot_dependent_watch_buckets'),
    swaps: read('chartpilot_dependent_watch_swaps_total'),
  };
}

/** The drift repairs replica `r` made on the objects of CR `name`. */
async function repairsBy(r: Replica, name: string): Promise<number> {
  return metric(await metricsText(r), 'chartpilot_drift_repairs_total', { name }) ?? 0;
}

/**
 * Whether `r` counts a repair of `name`'s objects beyond `before` within a few seconds: the count
 * follows the repair's write once the whole keep pass returns, so the object can look set back a
 * moment before it.
 */
async function repairedSince(r: Replica, name: string, before: number): Promise<boolean> {
  try {
    await waitFor(`${r.name} to count a repair of ${name}`, async () => ((await repairsBy(r, name)) > before ? true : undefined), { timeoutMs: 10_000, intervalMs: 100 });
    return true;
  } catch {
    return false;
  }
}

/** How many objects each replica should cache: those of the CRs the ring of `view` gives it. */
function shares(view: readonly string[], crs: readonly Cr[]): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(view.map((m) => [m, 0]));
  for (const cr of crs) {
    const owner = pickOf(view, cr.metadata.uid ?? '');
    if (owner !== undefined) out[owner] = (out[owner] ?? 0) + OBJECTS_PER_CR;
  }
  return out;
}

/** Waits until every replica caches exactly its share of `view` and nothing without a bucket label. */
async function cachesHoldShares(t: TestContext, replicas: readonly Replica[], view: readonly string[], crs: readonly Cr[]): Promise<Record<string, Cached>> {
  const want = shares(view, crs);
  let seen: Record<string, Cached> = {};
  try {
    return await waitFor('each replica caches its share', async () => {
      seen = Object.fromEntries(await Promise.all(replicas.map(async (r) => [r.name, await cachedBy(r)] as const)));
      return replicas.every((r) => seen[r.name]?.owned === want[r.name] && seen[r.name]?.unbucketed === 0) ? seen : undefined;
    }, { timeoutMs: 90_000, intervalMs: 500 });
  } finally {
    t.diagnostic(`want ${JSON.stringify(want)}; cached ${JSON.stringify(seen)}`);
  }
}

/**
 * Waits until each replica's release keeper holds the releases of exactly the CRs labelled for it
 * (all are deployed, so each was reconciled by its owner): those handed to another replica are
 * forgotten. Returns what each held.
 */
async function keepersHoldShares(t: TestContext, replicas: readonly Replica[], crs: readonly Cr[]): Promise<Record<string, number>> {
  const want = countBy(owners(crs, LABEL));
  let seen: Record<string, number> = {};
  try {
    return await waitFor('each replica\'s keeper holds its own releases only', async () => {
      seen = Object.fromEntries(await Promise.all(replicas.map(async (r) => [r.name, metric(await metricsText(r), 'chartpilot_release_keeper_releases') ?? Number.NaN] as const)));
      return replicas.every((r) => seen[r.name] === (want[r.name] ?? 0)) ? seen : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500 });
  } finally {
    t.diagnostic(`keepers: want ${JSON.stringify(want)}; hold ${JSON.stringify(seen)}`);
  }
}

/** The replica's log lines about the CR `name` (JSON lines carrying its name). */
function linesAbout(r: Replica, name: string): string[] {
  return r.op.logs().split('\n').filter((l) => l.includes(`"name":"${name}"`));
}

function viewChanges(r: Replica): number {
  return logLines(r.op).filter((l) => l.msg?.startsWith('ring view changed') === true).length;
}

describe('shards: each replica watches only its own CRs\' objects', () => {
  it('caches its share, follows a ring change, and neither a forged nor a removed bucket label hides drift or makes another replica act', { timeout: 8 * 60_000 }, async (t: TestContext) => {
    const s = await setUp(t, { kind: 'ShardDeps', chart: CHART });
    const { cluster, ns, kind } = s;
    const dir = mkdtempSync(join(tmpdir(), 'chartpilot-shard-deps-'));
    const replicas = [await startReplica(s, dir, 'a', args(ns)), await startReplica(s, dir, 'b', args(ns)), await startReplica(s, dir, 'c', args(ns))];
    const names = Array.from({ length: COUNT }, (_, i) => `d${String(i).padStart(2, '0')}`);
    await cluster.kubectl(['create', '-f', '-'], { input: crList(kind, ns, names) });
    const crs = await waitFor('all deployed, each replica owning some', async () => {
      const all = await listCrs(cluster, kind, ns);
      const counts = countBy(owners(all, LABEL));
      return all.length === COUNT && all.every(isDeployed) && ['a', 'b', 'c'].every((m) => (counts[m] ?? 0) > 0) ? all : undefined;
    }, { timeoutMs: 180_000, intervalMs: 500 });

    // 1. Each replica caches the objects of exactly its CRs; together, every object once.
    const three = await cachesHoldShares(t, replicas, ['a', 'b', 'c'], crs);
    assert.equal(Object.values(three).reduce((n, c) => n + c.owned, 0), COUNT * OBJECTS_PER_CR, 'together they hold every object once');
    assert.equal(Object.values(three).reduce((n, c) => n + c.buckets, 0), 1024, 'and every bucket once');
    const keptByThree = await keepersHoldShares(t, replicas, await listCrs(cluster, kind, ns));
    for (const r of replicas) assert.ok((three[r.name]?.owned ?? 0) < COUNT * OBJECTS_PER_CR, `${r.name} holds less than all`);

    const byName = new Map(crs.map((c) => [c.metadata.name, c]));
    const ownerOf = (name: string): string | undefined => owners(crs, LABEL).get(name);
    const replica = (name: string | undefined): Replica => {
      const r = replicas.find((x) => x.name === name);
      assert.ok(r !== undefined, `replica ${String(name)}`);
      return r;
    };
    const configMap = async (name: string): Promise<{ labels: Record<string, string>; message: string | undefined }> => {
      const cm = JSON.parse((await cluster.kubectl(['get', 'configmap', `${name}-tiny`, '-n', ns, '-o', 'json'])).stdout) as { metadata: { labels?: Record<string, string> }; data?: Record<string, string> };
      return { labels: cm.metadata.labels ?? {}, message: cm.data?.['message'] };
    };
    const patchConfigMap = (name: string, patch: unknown) => cluster.kubectl(['patch', 'configmap', `${name}-tiny`, '-n', ns, '--type', 'merge', '-p', JSON.stringify(patch)]);

    // 2. A namespace admin moves an object of a's CR x into b's bucket, changing its data too.
    const x = names.find((n) => ownerOf(n) === 'a') ?? '';
    const y = names.find((n) => ownerOf(n) === 'b') ?? '';
    const xUid = byName.get(x)?.metadata.uid ?? '';
    const bBucket = bucketOf(byName.get(y)?.metadata.uid ?? '');
    const [a, b, c] = [replica('a'), replica('b'), replica('c')];
    const repairedBefore = await repairsBy(a, x);
    const restored = async (): Promise<true | undefined> => {
      const cm = await configMap(x);
      return cm.labels[BUCKET] === String(bucketOf(xUid)) && cm.message === x ? true : undefined;
    };
    let since = Date.now();
    await patchConfigMap(x, { metadata: { labels: { [BUCKET]: String(bBucket) } }, data: { message: 'forged' } });
    await waitFor(`${x}'s object and its bucket label set back`, restored, { timeoutMs: 60_000, intervalMs: 100 });
    t.diagnostic(`bucket label moved to b's bucket: set back with the data after ${String(Date.now() - since)} ms`);
    assert.ok(await repairedSince(a, x, repairedBefore), 'by its owner a, through its watch (no reconcile period runs)');

    // 3. ... then removes the label (every replica watches objects without one) and changes the data again.
    const repairedForged = await repairsBy(a, x);
    since = Date.now();
    await cluster.kubectl(['label', 'configmap', `${x}-tiny`, '-n', ns, `${BUCKET}-`]);
    await patchConfigMap(x, { data: { message: 'unlabelled' } });
    await waitFor(`${x}'s object and its bucket label set back again`, restored, { timeoutMs: 60_000, intervalMs: 100 });
    t.diagnostic(`bucket label removed (then the data changed): set back after ${String(Date.now() - since)} ms`);
    assert.ok(await repairedSince(a, x, repairedForged), 'by a again');

    // 4. The object is in a's caches again: plain drift is repaired as before.
    const repairedUnlabelled = await repairsBy(a, x);
    await patchConfigMap(x, { data: { message: 'drifted' } });
    await waitFor(`${x}'s object set back once more`, restored, { timeoutMs: 60_000, intervalMs: 250 });
    assert.ok(await repairedSince(a, x, repairedUnlabelled), 'by a once more');
    assert.ok(linesAbout(a, x).some((l) => l.includes('"msg":"planned"')), 'the log probe sees the owner\'s reconciles of x, so its silence about b and c means something');
    for (const other of [b, c]) {
      assert.deepEqual(linesAbout(other, x).filter((l) => l.includes('"msg":"planned"')), [], `${other.name} never reconciled ${x}`);
      assert.equal(await repairsBy(other, x), 0, `${other.name} repaired nothing of ${x}`);
    }

    // 5. A fourth replica joins: the CRs and the watches of their objects move together.
    const before = await Promise.all([a, b, c].map(async (r) => ({ r, swaps: (await cachedBy(r)).swaps, views: viewChanges(r) })));
    const d = await startReplica(s, dir, 'd', args(ns));
    replicas.push(d);
    const moved = await waitFor('d takes its share of the CRs', async () => {
      const all = await listCrs(cluster, kind, ns);
      const settled = all.every((cr) => cr.metadata.labels?.[LABEL] !== undefined && cr.metadata.labels[DRAIN] === undefined);
      return settled && (countBy(owners(all, LABEL))['d'] ?? 0) > 0 && all.every(isDeployed) ? all : undefined;
    }, { timeoutMs: 90_000, intervalMs: 250 });
    const joinedAt = Date.now();
    const four = await cachesHoldShares(t, replicas, ['a', 'b', 'c', 'd'], moved);
    t.diagnostic(`every replica's caches held its new share ${String(Date.now() - joinedAt)} ms after the CRs settled`);
    assert.equal(Object.values(four).reduce((n, x4) => n + x4.owned, 0), COUNT * OBJECTS_PER_CR, 'still every object once');
    for (const { r, swaps, views } of before) {
      const now = await cachedBy(r);
      const changes = viewChanges(r) - views;
      t.diagnostic(`${r.name}: ${String(changes)} view change(s), ${String(now.swaps - swaps)} swap(s) of its dependent watches`);
      assert.ok(now.swaps - swaps >= 1, `${r.name} let go of the buckets d took`);
      assert.ok(now.swaps - swaps <= changes, `${r.name}: at most one swap (one LIST per kind) per change of its view`);
    }

    // The releases of the CRs d took are forgotten by their old owners, and held by d.
    const keptByFour = await keepersHoldShares(t, replicas, await listCrs(cluster, kind, ns));
    assert.ok([a, b, c].some((r) => (keptByFour[r.name] ?? 0) < (keptByThree[r.name] ?? 0)), 'an old owner forgot releases it handed to d');

    // 6. Drift on an object of a CR that moved to d: d repairs it, nobody else.
    const z = moved.find((cr) => cr.metadata.labels?.[LABEL] === 'd' && ownerOf(cr.metadata.name) !== 'd')?.metadata.name ?? '';
    assert.notEqual(z, '', 'a CR that moved to d');
    await patchConfigMap(z, { data: { message: 'drifted' } });
    await waitFor(`${z}'s object set back`, async () => ((await configMap(z)).message === z ? true : undefined), { timeoutMs: 60_000, intervalMs: 250 });
    assert.ok(await repairedSince(d, z, 0), 'by its new owner d');
    for (const other of [a, b, c]) assert.equal(await repairsBy(other, z), 0, `${other.name} repaired nothing of ${z}`);

    assert.deepEqual(overlaps(replicas.flatMap((r) => r.calls())), [], 'no release was acted on by two replicas at once');
    for (const r of replicas) {
      const errors = r.op.logs().split('\n').filter((l) => l.includes('"level":50'));
      assert.deepEqual(errors, [], `${r.name} logged no error`);
    }
  });
});
