// The test runner's namespace reaper (namespace-reaper.ts) against the real API server and
// controller manager: a namespace held in Terminating by a finalizer goes once the reaper looks
// after it, and one it does not look after stays held.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { isNotFound } from '../../src/kube/errors.js';
import { createKubeClient, loadKubeConfig } from '../../src/kube/rest.js';
import { testCluster } from './harness.js';
import { startNamespaceReaper } from './namespace-reaper.js';
import { waitFor } from './wait.js';

const c = await testCluster();
const client = createKubeClient(loadKubeConfig({ files: [c.kubeconfig] }), { userAgent: 'chartpilot-test' });
// A label of this test's own, so the runner's reaper (the harness's label) leaves these alone.
const LABEL = 'chartpilot.test/reaper-test';
const HOLD = 'chartpilot.test/hold';

async function heldNamespace(prefix: string, labelled: boolean): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await client.request('POST', '/api/v1/namespaces', { body: { metadata: { name, labels: labelled ? { [LABEL]: 'true' } : {} } } });
  await client.request('POST', `/api/v1/namespaces/${name}/configmaps`, { body: { metadata: { name: 'held', finalizers: [HOLD] }, data: { a: 'b' } } });
  await client.request('DELETE', `/api/v1/namespaces/${name}`);
  return name;
}

const exists = async (path: string): Promise<boolean> => {
  try {
    await client.request('GET', path);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
};

describe('namespace reaper', () => {
  it('clears the finalizers that hold a namespace it looks after, and only there', { timeout: 120_000 }, async (t) => {
    const looked = await heldNamespace('reaped', true);
    const other = await heldNamespace('kept', false);
    t.after(async () => {
      // The namespace the reaper left alone: let it go.
      await client.request('PATCH', `/api/v1/namespaces/${other}/configmaps/held`, { body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json' }).catch(() => undefined);
    });
    const cleared: string[] = [];
    const reaper = startNamespaceReaper(client, { labelSelector: LABEL, graceMs: 0, intervalMs: 200, onCleared: (ns) => cleared.push(ns) });
    t.after(() => reaper.stop());

    await waitFor(`namespace ${looked} gone`, async () => !(await exists(`/api/v1/namespaces/${looked}`)), { timeoutMs: 90_000, intervalMs: 250 });
    assert.deepEqual(cleared, [looked]);
    // The other one had the same time: still terminating, its ConfigMap still held.
    const ns = await client.request<{ metadata: { deletionTimestamp?: string } }>('GET', `/api/v1/namespaces/${other}`);
    assert.ok(ns.metadata.deletionTimestamp !== undefined, 'the unlabelled namespace is terminating');
    const cm = await client.request<{ metadata: { finalizers?: string[] } }>('GET', `/api/v1/namespaces/${other}/configmaps/held`);
    assert.deepEqual(cm.metadata.finalizers, [HOLD]);
  });
});
