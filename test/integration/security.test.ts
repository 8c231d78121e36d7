/**
 * Values, secrets included, never reach logs, events or helm's command line, also when helm fails
 * on them; values files are gone afterwards.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { installCrd, testKind } from './crd.js';
import { condition, crsOf, eventsFor } from './crs.js';
import { SAMPLE_CHART, fixtureChart } from './fixtures.js';
import { startOperator } from './operator.js';
import { operatorScenario } from './scenario.js';

const SECRET = 'hunter2-Zq9-do-not-log';

describe('security', () => {
  it('never writes values to logs or events, on success or on failure', async (t) => {
    const debug = ['--log-level', 'debug'];
    const { cluster, ns, op, cr } = await operatorScenario(t, { kind: 'Secrets', chart: fixtureChart('settings'), operator: { args: debug } });
    await cr.apply('ok', { settings: { password: SECRET } });
    await cr.deployed('ok');

    // The schema-checked sample chart rejects this value; helm's message would quote it.
    const k2 = testKind('SecretsSchema');
    await installCrd(cluster, k2);
    const op2 = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k2, chart: SAMPLE_CHART }], args: debug });
    const schema = crsOf(cluster, k2, ns, op2);
    await schema.apply('bad', { replicaCount: 1, image: { tag: SECRET, pullPolicy: SECRET } });
    const failed = await schema.until('bad', 'ReleaseFailed', (c) => condition(c, 'ReleaseFailed')?.status === 'True');
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
    // A private TMPDIR: other test files' operators write their own values files meanwhile.
    const tmp = mkdtempSync(join(tmpdir(), 'chartpilot-sec-'));
    const { op, cr } = await operatorScenario(t, { kind: 'TempFiles', chart: fixtureChart('settings'), operator: { env: { TMPDIR: tmp } } });
    for (const n of ['a', 'b', 'c']) await cr.apply(n, { settings: { n } });
    for (const n of ['a', 'b', 'c']) await cr.deployed(n);
    assert.equal(await op.stop(), 0);
    assert.deepEqual(readdirSync(tmp).filter((f) => f.startsWith('chartpilot-')), [], 'values files and plugin dirs are removed');
  });
});
