/**
 * chartpilot acts only on Helm release records it wrote for this CR (issue #24, part 2). As a
 * namespace admin would attack it, with default settings (no ServiceAccount): forged records that
 * copy every label and annotation of a real one, records copied from another CR, a release made
 * by plain helm under a CR's name. Each time nothing outside the CR's namespace is created,
 * changed or deleted, and the CR says which record and what to do. `chartpilot adopt` is the
 * explicit way to take over a release plain helm (or operator-sdk) made.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { execa } from 'execa';
import { condition, crsOf, type Cr } from './crs.js';
import { BIN, fixtureChart } from './fixtures.js';
import { getJson, type TestCluster } from './harness.js';
import { OPERATOR_NAMESPACE } from './operator.js';
import { foreignObject, forgeNext, records, snapshot, victim, type ReleaseJson, type SecretJson } from './records-forgery.js';
import { operatorScenario, setUp, type Scenario } from './scenario.js';
import { waitFor } from './wait.js';

const CHART = fixtureChart('records');

const foreignCondition = (cr: Cr): boolean => condition(cr, 'Irreconcilable')?.reason === 'ForeignReleaseRecord';

async function deployedScenario(t: TestContext, kind: string, args: readonly string[] = []): Promise<Scenario> {
  // A short period: a forged record is noticed at the next look, as it would be at the next period.
  const s = await operatorScenario(t, { kind, chart: CHART, operator: { args: ['--log-level', 'debug', '--reconcile-period=5s', ...args] } });
  return s;
}

async function revisionsOf(c: TestCluster, ns: string, release: string): Promise<number[]> {
  return (await records(c, ns, release)).map((s) => Number(s.metadata.labels?.version));
}

describe('release records chartpilot did not write', () => {
  it('drift repair: a forged next revision listing an object in another namespace is refused, named, and nothing there changes', async (t) => {
    const { cluster, ns, cr } = await deployedScenario(t, 'RecRepair');
    const other = await victim(t, cluster);
    await cr.apply('web', { message: 'one' });
    await cr.deployed('web');
    const before = await snapshot(cluster, other);
    const forged = await forgeNext(cluster, ns, 'web', (r) => {
      r.manifest = `${r.manifest ?? ''}\n${foreignObject('ConfigMap', other, 'theirs', { owner: 'tenant' })}${foreignObject('ConfigMap', other, 'planted', { x: '1' })}`;
    });
    // Delete the real object: a repair pass would recreate it — and, were the forgery believed, the others.
    await cluster.kubectl(['delete', 'configmap', 'web-cfg', '-n', ns]);
    const refused = await cr.until('web', 'Irreconcilable ForeignReleaseRecord', foreignCondition);
    const message = condition(refused, 'Irreconcilable')?.message ?? '';
    assert.match(message, new RegExp(`record ${forged.replaceAll('.', '\\.')} was not written by chartpilot for this resource`));
    assert.match(message, /delete it if it is a forgery, or run `chartpilot adopt`/);
    assert.deepEqual(await snapshot(cluster, other), before, 'nothing in the other namespace was created, changed or deleted');
    const events = await getJson<{ items: { reason: string; type: string; message: string }[] }>(cluster, ['get', 'events', '-n', ns, '--field-selector', 'involvedObject.name=web', '-o', 'json']);
    assert.ok(events.items.some((e) => e.reason === 'ForeignReleaseRecord' && e.type === 'Warning' && e.message.includes(forged)));

    // Deleting the forgery is the way out: the release is kept again (the deleted object comes back).
    await cluster.kubectl(['delete', 'secret', forged, '-n', ns]);
    await cr.apply('web', { message: 'two' });
    await cr.until('web', 'recovered', (c) => condition(c, 'Irreconcilable') === undefined && condition(c, 'Deployed')?.status === 'True');
    await waitFor('web-cfg back', async () => (await cluster.kubectl(['get', 'configmap', 'web-cfg', '-n', ns], { allowFail: true })).exitCode === 0);
    assert.deepEqual(await snapshot(cluster, other), before);
  });

  it('upgrade: a forged “previous” revision listing an object elsewhere stops the upgrade before helm runs; that object stays', async (t) => {
    const { cluster, ns, cr, op } = await deployedScenario(t, 'RecUpgrade');
    const other = await victim(t, cluster);
    await cr.apply('web', { message: 'one' });
    await cr.deployed('web');
    const before = await snapshot(cluster, other);
    // helm upgrade deletes what the previous revision lists and the new one does not.
    await forgeNext(cluster, ns, 'web', (r) => {
      r.manifest = `${r.manifest ?? ''}\n${foreignObject('ConfigMap', other, 'theirs', { owner: 'team-b' })}`;
    });
    const upgradesBefore = op.helmCalls().filter((l) => l.startsWith('upgrade')).length;
    await cr.apply('web', { message: 'two' });
    await cr.until('web', 'Irreconcilable ForeignReleaseRecord', (c) => foreignCondition(c) && c.status?.observedGeneration === 2);
    assert.equal(op.helmCalls().filter((l) => l.startsWith('upgrade')).length, upgradesBefore, 'no helm upgrade ran');
    assert.deepEqual(await revisionsOf(cluster, ns, 'web'), [1, 2], 'no revision beside the forgery');
    assert.deepEqual(await snapshot(cluster, other), before, 'the object the forgery lists is still there, unchanged');
  });

  it('uninstall: a CR deleted while a forged record lists an object elsewhere keeps its finalizer; that object stays; deleting the forgery lets it go', async (t) => {
    const { cluster, ns, cr } = await deployedScenario(t, 'RecUninstall');
    const other = await victim(t, cluster);
    await cr.apply('web', { message: 'one' });
    await cr.deployed('web');
    const before = await snapshot(cluster, other);
    const forged = await forgeNext(cluster, ns, 'web', (r) => {
      r.manifest = `${r.manifest ?? ''}\n${foreignObject('ConfigMap', other, 'theirs', { owner: 'team-b' })}`;
    });
    await cr.delete('web');
    const held = await cr.until('web', 'Irreconcilable ForeignReleaseRecord while deleting', foreignCondition);
    assert.match(condition(held, 'Irreconcilable')?.message ?? '', /keeps its finalizer until then \(remove the finalizer by hand/);
    assert.ok((await cr.get('web')) !== undefined, 'the CR is still there');
    assert.deepEqual(await snapshot(cluster, other), before, 'nothing uninstalled outside the namespace');
    await cluster.kubectl(['get', 'configmap', 'web-cfg', '-n', ns]);

    await cluster.kubectl(['delete', 'secret', forged, '-n', ns]);
    await cr.gone('web', 120_000);
    assert.deepEqual(await revisionsOf(cluster, ns, 'web'), [], 'uninstalled once only its own records were left');
    assert.deepEqual(await snapshot(cluster, other), before);
  });

  it('a record copied from another CR of the same kind (renamed, re-labelled) is refused', async (t) => {
    const { cluster, ns, cr } = await deployedScenario(t, 'RecCopy');
    await cr.apply('a', { message: 'a' });
    await cr.apply('b', { message: 'b' });
    await cr.deployed('a');
    await cr.deployed('b');
    const bRecord = (await records(cluster, ns, 'b')).at(-1);
    // b's record, as a's next revision: its objects are sealed, but for b.
    const forged = await forgeNext(cluster, ns, 'a', () => undefined, bRecord);
    const refused = await cr.until('a', 'Irreconcilable ForeignReleaseRecord', foreignCondition, 120_000);
    assert.match(condition(refused, 'Irreconcilable')?.message ?? '', new RegExp(forged.replaceAll('.', '\\.')));
    const b = await cr.get('b');
    assert.equal(b === undefined ? undefined : condition(b, 'Irreconcilable'), undefined, 'b itself is untouched');
  });

  it('no oracle: forgeries naming a Secret with the right and with a wrong password give the same condition', async (t) => {
    const { cluster, ns, cr } = await deployedScenario(t, 'RecOracle');
    const other = await victim(t, cluster);
    await cr.apply('guess-a', { message: 'a' });
    await cr.apply('guess-b', { message: 'b' });
    await cr.deployed('guess-a');
    await cr.deployed('guess-b');
    const before = await snapshot(cluster, other);
    const guess = (password: string) => (r: ReleaseJson): void => {
      r.manifest = `${r.manifest ?? ''}\n${foreignObject('Secret', other, 'creds', { password: Buffer.from(password).toString('base64') })}`;
    };
    const fa = await forgeNext(cluster, ns, 'guess-a', guess('right-guess'));
    const fb = await forgeNext(cluster, ns, 'guess-b', guess('wrong-guess'));
    const a = await cr.until('guess-a', 'Irreconcilable ForeignReleaseRecord', foreignCondition);
    const b = await cr.until('guess-b', 'Irreconcilable ForeignReleaseRecord', foreignCondition);
    // Only the record's name differs (the tenant chose it); nothing tells what the Secret holds.
    const told = (c: Cr, forged: string): unknown =>
      (c.status?.conditions ?? []).map((k) => ({ type: k.type, status: k.status, reason: k.reason, message: k.message.replaceAll(forged, 'RECORD') }));
    assert.deepEqual(told(a, fa), told(b, fb));
    assert.deepEqual(await snapshot(cluster, other), before);
  });

  it('a CR named after a release plain helm made is not given it: Irreconcilable, the release untouched, and deleting the CR leaves it', async (t) => {
    const { cluster, ns, cr, op } = await deployedScenario(t, 'RecBorrow');
    await cluster.helm(['install', 'platform', CHART, '-n', ns, '--set', 'message=platform-team']);
    const cfgBefore = await getJson<SecretJson>(cluster, ['get', 'configmap', 'platform-cfg', '-n', ns, '-o', 'json']);
    await cr.apply('platform', { message: 'tenant' });
    const refused = await cr.until('platform', 'Irreconcilable ForeignReleaseRecord', foreignCondition);
    assert.match(condition(refused, 'Irreconcilable')?.message ?? '', /sh\.helm\.release\.v1\.platform\.v1 was not written by chartpilot/);
    assert.equal(op.helmCalls().filter((l) => / platform /.test(` ${l} `)).length, 0, 'no helm call on that release');
    await cr.delete('platform');
    await cr.gone('platform');
    assert.deepEqual(await revisionsOf(cluster, ns, 'platform'), [1], 'still revision 1, still there');
    const cfgAfter = await getJson<SecretJson>(cluster, ['get', 'configmap', 'platform-cfg', '-n', ns, '-o', 'json']);
    assert.equal(cfgAfter.metadata.resourceVersion, cfgBefore.metadata.resourceVersion, 'its object unchanged');
  });

  it('`chartpilot adopt` takes over a release plain helm made of the same chart: at once one upgrade, no object replaced', async (t) => {
    // A period far longer than the test: the CR leaves Irreconcilable because adopt told the operator, not because a period came round.
    const { cluster, ns, cr, op, kind } = await deployedScenario(t, 'RecAdopt', ['--reconcile-period=10m']);
    await cluster.helm(['install', 'shop', CHART, '-n', ns, '--set', 'message=by-hand']);
    const uidBefore = (await getJson<SecretJson>(cluster, ['get', 'configmap', 'shop-cfg', '-n', ns, '-o', 'json'])).metadata.uid;
    await cr.apply('shop', { message: 'by-hand' });
    await cr.until('shop', 'Irreconcilable ForeignReleaseRecord', foreignCondition);

    const adopt = (args: readonly string[]) =>
      execa(process.execPath, [BIN, 'adopt', '--watches-file', op.watchesFile, '--namespace', ns, '--operator-namespace', OPERATOR_NAMESPACE, ...args], { env: cluster.env, reject: false });
    const dry = await adopt(['--dry-run']);
    assert.equal(dry.exitCode, 0, dry.stderr);
    assert.match(dry.stdout, new RegExp(`would adopt ${ns}/sh\\.helm\\.release\\.v1\\.shop\\.v1 for ${kind.kind} ${ns}/shop`));
    assert.equal((await records(cluster, ns, 'shop'))[0]?.metadata.labels?.['chartpilot.io/adopted'], undefined, 'a dry run changes nothing');
    const run = await adopt([]);
    const adoptedAt = Date.now();
    assert.equal(run.exitCode, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`^adopted ${ns}/sh\\.helm\\.release\\.v1\\.shop\\.v1 for ${kind.kind} ${ns}/shop$`, 'm'));
    const annotated = await cr.get('shop');
    assert.match(annotated?.metadata.annotations?.['chartpilot.io/adopted-at'] ?? '', /^\d{4}-\d\d-\d\dT/u, 'adopt marks the CR it adopted for');

    const deployed = await cr.until('shop', 'Deployed after adoption', (c) => condition(c, 'Deployed')?.status === 'True' && condition(c, 'Irreconcilable') === undefined);
    const tookMs = Date.now() - adoptedAt;
    t.diagnostic(`adopt exit to Deployed: ${String(tookMs)} ms (reconcile period 10m)`);
    assert.ok(tookMs < 30_000, `Deployed ${String(tookMs)} ms after adopt: the operator waited for something other than adopt's annotation`);
    assert.equal(deployed.status?.deployedRelease?.revision, 2, 'one new revision');
    assert.deepEqual(await revisionsOf(cluster, ns, 'shop'), [1, 2]);
    const after = await getJson<SecretJson>(cluster, ['get', 'configmap', 'shop-cfg', '-n', ns, '-o', 'json']);
    assert.equal(after.metadata.uid, uidBefore, 'the object was taken over, not replaced');
    // helm rewrote revision 1 as superseded: its mark went with it, so the release stays ours.
    await cr.apply('shop', { message: 'changed' });
    await cr.until('shop', 'revision 3', (c) => c.status?.deployedRelease?.revision === 3 && condition(c, 'Irreconcilable') === undefined);
    // A second run has nothing left to adopt.
    const again = await adopt([]);
    assert.equal(again.exitCode, 0, again.stderr);
    assert.equal(again.stdout.trim(), '');
    const adoptedCfg = await getJson<SecretJson>(cluster, ['get', 'configmap', 'shop-cfg', '-n', ns, '-o', 'json']);
    assert.equal(adoptedCfg.metadata.uid, uidBefore);
  });

  it('`run --adopt-existing-releases` adopts at start what `chartpilot adopt` would, and refuses a release of another chart', async (t) => {
    const setup = await setUp(t, { kind: 'RecAdoptRun', chart: CHART });
    const { cluster, ns, kind } = setup;
    await cluster.helm(['install', 'mine', CHART, '-n', ns]);
    await cluster.helm(['install', 'other', fixtureChart('tiny'), '-n', ns]);
    const mine = crsOf(cluster, kind, ns);
    await mine.apply('mine', { message: 'hello' });
    await mine.apply('other', { message: 'hello' });
    const op = await setup.start({ args: ['--adopt-existing-releases', '--reconcile-period=5s'] });
    const deployed = await crsOf(cluster, kind, ns, op).until('mine', 'Deployed after adoption at start', (c) => c.status?.deployedRelease?.revision === 2);
    assert.equal(condition(deployed, 'Irreconcilable'), undefined);
    assert.match(op.logs(), /refused [^ ]+\/sh\.helm\.release\.v1\.other\.v1 for [^:]+: it was made from chart \\"tiny\\", not \\"records\\"/);
    await crsOf(cluster, kind, ns, op).until('other', 'Irreconcilable ForeignReleaseRecord', foreignCondition);
    assert.deepEqual(await revisionsOf(cluster, ns, 'other'), [1]);
  });
});
