import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getManifestArgs, historyArgs, rollbackArgs, statusArgs, templateArgs, uninstallArgs, upgradeArgs } from '../../../src/helm/argv.js';
import { dialectFor } from '../../../src/helm/dialect.js';

const helm4 = dialectFor('v4.1.4');
const helm3 = dialectFor('v3.17.3');

describe('argv', () => {
  it('upgrade: fixed flags, then labels, options, post-render flags, timeout, values and positionals', () => {
    const req = { release: 'web', namespace: 'ns', chart: '/c', values: {}, timeoutMs: 60_000, historyMax: 10, description: 'd', force: true, disableHooks: true };
    assert.deepEqual(upgradeArgs(req, helm4, { labelFlags: ['--labels=a=b'], postRenderFlags: ['--post-renderer=x'], budgetMs: 60_000, valuesFile: '/v' }), [
      'upgrade',
      '--install',
      '--namespace=ns',
      '--output=json',
      '--disable-openapi-validation',
      '--labels=a=b',
      '--history-max=10',
      '--description=d',
      '--server-side=true',
      '--force-conflicts',
      '--no-hooks',
      '--post-renderer=x',
      '--timeout=50000ms',
      '--values=/v',
      '--',
      'web',
      '/c',
    ]);
    assert.deepEqual(upgradeArgs({ release: 'web', namespace: 'ns', chart: '/c', values: {}, timeoutMs: 1000 }, helm3, { labelFlags: [], postRenderFlags: [], budgetMs: 1000, valuesFile: '/v' }), [
      'upgrade',
      '--install',
      '--namespace=ns',
      '--output=json',
      '--timeout=800ms',
      '--values=/v',
      '--',
      'web',
      '/c',
    ]);
  });

  it('the other actions', () => {
    assert.deepEqual(uninstallArgs({ release: 'web', namespace: 'ns', timeoutMs: 1, wait: true, disableHooks: true, description: 'bye' }, 20_000), [
      'uninstall',
      '--namespace=ns',
      '--timeout=16000ms',
      '--wait',
      '--no-hooks',
      '--description=bye',
      '--',
      'web',
    ]);
    assert.deepEqual(rollbackArgs({ release: 'web', namespace: 'ns', timeoutMs: 1, revision: 3, force: true }, helm3, 100_000), [
      'rollback',
      '--namespace=ns',
      '--force',
      '--timeout=90000ms',
      '--',
      'web',
      '3',
    ]);
    assert.deepEqual(rollbackArgs({ release: 'web', namespace: 'ns', timeoutMs: 1 }, helm4, 100_000).slice(-2), ['--', 'web'], 'no revision: the previous one');
    assert.deepEqual(statusArgs('web', 'ns', '@@b@@').slice(0, 3), ['get', 'all', '--namespace=ns']);
    assert.match(statusArgs('web', 'ns', '@@b@@')[3] ?? '', /^--template=.*@@b@@/su);
    assert.deepEqual(historyArgs('web', 'ns'), ['history', '--namespace=ns', '--output=json', '--max=2147483647', '--', 'web']);
    assert.deepEqual(templateArgs({ release: 'web', namespace: 'ns', chart: '/c', values: {}, timeoutMs: 1 }, '/v'), [
      'template',
      '--namespace=ns',
      '--values=/v',
      '--',
      'web',
      '/c',
    ]);
    assert.deepEqual(getManifestArgs('web', 'ns', 4), ['get', 'manifest', '--namespace=ns', '--revision=4', '--', 'web']);
  });

  it('every action that reaches the cluster runs as the impersonated user when one is given', () => {
    const as = '--kube-as-user=system:serviceaccount:ns:tenant';
    const impersonate = 'system:serviceaccount:ns:tenant';
    const lists = [
      upgradeArgs({ release: 'web', namespace: 'ns', chart: '/c', values: {}, timeoutMs: 1000, impersonate }, helm4, { labelFlags: [], postRenderFlags: [], budgetMs: 1000, valuesFile: '/v' }),
      uninstallArgs({ release: 'web', namespace: 'ns', timeoutMs: 1, impersonate }, 1000),
      rollbackArgs({ release: 'web', namespace: 'ns', timeoutMs: 1, impersonate }, helm4, 1000),
      statusArgs('web', 'ns', '@@b@@', impersonate),
      historyArgs('web', 'ns', impersonate),
      getManifestArgs('web', 'ns', 1, impersonate),
    ];
    for (const args of lists) {
      assert.deepEqual(args.filter((a) => a.startsWith('--kube-as')), [as], args.join(' '));
      assert.ok(args.indexOf(as) < args.indexOf('--'), 'a flag, before the positionals');
    }
    assert.equal(historyArgs('web', 'ns').some((a) => a.startsWith('--kube-as')), false, 'none without one');
  });
});
