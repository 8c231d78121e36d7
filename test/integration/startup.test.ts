/** Start-up problems end in one clear message and exit code 3, never a hang. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testKind } from './crd.js';
import { SAMPLE_CHART } from './fixtures.js';
import { newNamespace, testCluster } from './harness.js';
import { startOperator } from './operator.js';

describe('start-up', () => {
  it('names a watched kind whose CRD is missing, says how to fix it, and exits 3', async (t) => {
    const cluster = await testCluster();
    const k = testKind('NoCrdInstalled');
    const ns = await newNamespace(t, 'nocrd');
    const op = await startOperator(t, cluster, { namespaces: [ns], watches: [{ kind: k, chart: SAMPLE_CHART }], noWait: true });
    assert.equal(await op.exitCode(90_000), 3);
    const logs = op.logs();
    assert.match(logs, new RegExp(`no CustomResourceDefinition for kind ${k.kind} in ${k.group}/${k.version}`));
    assert.match(logs, /chartpilot generate crd/);
    assert.doesNotMatch(logs, /\n\s+at /, 'no stack trace');
  });
});
