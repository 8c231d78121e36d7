/**
 * #25 item 5: a spec nested 9000 levels deep (the API server takes it) gets a condition and an
 * Event saying why it is refused, and nothing in the operator runs out of stack; a neighbour CR of
 * the same kind deploys meanwhile, and the CR deploys once its spec is flattened.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resourceOf } from './crd.js';
import { eventsFor } from './crs.js';
import { SAMPLE_CHART } from './fixtures.js';
import { operatorScenario } from './scenario.js';
import { waitFor } from './wait.js';

/** JSON text of a spec nested `levels` deep, written without recursion (JSON.stringify would overflow). */
function deepSpecJson(levels: number): string {
  return `{"message":"deep","extra":${'{"n":'.repeat(levels)}1${'}'.repeat(levels)}}`;
}

describe('values the operator cannot process', () => {
  it('refuses a spec nested 9000 levels deep with ValuesTooDeep, and keeps serving', { timeout: 5 * 60_000 }, async (t) => {
    const { cluster, ns, kind, op, cr } = await operatorScenario(t, { kind: 'Deep', chart: SAMPLE_CHART });
    const manifest = `{"apiVersion":"${kind.group}/${kind.version}","kind":"${kind.kind}","metadata":{"name":"deep","namespace":"${ns}"},"spec":${deepSpecJson(9000)}}`;
    await cluster.kubectl(['create', '-f', '-'], { input: manifest });
    await cr.apply('plain', { message: 'plain' });

    // Read with jsonpath: the whole object is too deep for the test's own JSON tools.
    const conditions = async (): Promise<{ type: string; status: string; reason: string; message: string }[]> => {
      const r = await cluster.kubectl(['get', resourceOf(kind), 'deep', '-n', ns, '-o', 'jsonpath={.status.conditions}'], { allowFail: true });
      return r.exitCode === 0 && r.stdout !== '' ? (JSON.parse(r.stdout) as { type: string; status: string; reason: string; message: string }[]) : [];
    };
    const condition = await waitFor('deep: Irreconcilable ValuesTooDeep', async () =>
      (await conditions()).find((x) => x.type === 'Irreconcilable' && x.status === 'True' && x.reason === 'ValuesTooDeep'),
    );
    assert.match(condition.message, /nested more than 1000 levels deep.*flatten the spec/);
    await waitFor('a ValuesTooDeep event', async () => (await eventsFor(cluster, ns, 'deep')).some((e) => e.reason === 'ValuesTooDeep' && e.type === 'Warning'));
    await cr.deployed('plain');
    assert.doesNotMatch(op.logs(), /Maximum call stack size exceeded/);
    assert.equal((await cluster.helm(['status', 'deep', '-n', ns], { allowFail: true })).exitCode, 1, 'nothing installed for it');

    // Made by `create`, so `apply` would keep the deep key: drop it by a merge patch.
    await cluster.kubectl(['patch', resourceOf(kind), 'deep', '-n', ns, '--type=merge', '-p', '{"spec":{"extra":null,"message":"flat now"}}']);
    await cr.deployed('deep');
  });
});
