import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { allImpersonate, impersonationChecks, serviceAccountOf, UNCONFINED_WARNING, warnUnconfinedCharts } from '../../../src/cli/tenancy.js';
import { capturingLogger } from '../fakes/reconcile-ports.js';
import { WATCH_FIXTURES } from '../config/fixtures.js';
import { watchEntry } from '../controller/watch-entry-fixture.js';

const CHARTS = join(dirname(WATCH_FIXTURES), 'charts');

describe('tenancy at start-up', () => {
  it('an entry’s serviceAccount wins over the default', () => {
    assert.equal(serviceAccountOf(watchEntry('A', { serviceAccount: 'mine' }), 'tenant'), 'mine');
    assert.equal(serviceAccountOf(watchEntry('A'), 'tenant'), 'tenant');
    assert.equal(serviceAccountOf(watchEntry('A'), undefined), undefined);
    assert.equal(allImpersonate([watchEntry('A'), watchEntry('B', { serviceAccount: 'b' })], undefined), false);
    assert.equal(allImpersonate([watchEntry('A'), watchEntry('B', { serviceAccount: 'b' })], 'tenant'), true);
  });

  it('checks impersonate on exactly the named ServiceAccounts, and reading ServiceAccounts, where the operator watches', () => {
    const entries = [watchEntry('A'), watchEntry('B', { serviceAccount: 'b' }), watchEntry('C', { serviceAccount: 'b' })];
    assert.deepEqual(impersonationChecks(entries, undefined, []), [
      { verb: 'impersonate', group: '', resource: 'serviceaccounts', name: 'b', namespace: undefined },
      { verb: 'list', group: '', resource: 'serviceaccounts', namespace: undefined },
      { verb: 'watch', group: '', resource: 'serviceaccounts', namespace: undefined },
    ]);
    const checks = impersonationChecks(entries, 'tenant', ['n1', 'n2']);
    assert.deepEqual(
      checks.filter((c) => c.verb === 'impersonate').map((c) => `${c.namespace ?? ''}/${c.name ?? ''}`),
      ['n1/b', 'n1/tenant', 'n2/b', 'n2/tenant'],
    );
    assert.deepEqual(impersonationChecks([watchEntry('A')], undefined, ['n1']), [], 'nothing without a ServiceAccount');
  });

  it('warns once per chart that calls lookup or tpl while its resources run as the operator', async () => {
    const note = join(CHARTS, 'tenant-note');
    const entries = [
      watchEntry('A', { chartPath: note }),
      watchEntry('B', { chartPath: note }),
      watchEntry('C', { chartPath: join(CHARTS, 'webapp') }),
      watchEntry('D', { chartPath: note, serviceAccount: 'tenant' }),
    ];
    const logged = capturingLogger();
    await warnUnconfinedCharts(entries, undefined, logged.log);
    const warnings = logged.lines.filter((l) => l['msg'] === UNCONFINED_WARNING);
    assert.equal(warnings.length, 1);
    const [w] = warnings;
    assert.ok(w);
    assert.deepEqual([w['level'], w['chart'], w['tpl'], w['lookup']], [40, note, ['templates/configmap.yaml'], []]);

    const quiet = capturingLogger();
    await warnUnconfinedCharts(entries, 'tenant', quiet.log);
    assert.deepEqual(quiet.lines.filter((l) => l['msg'] === UNCONFINED_WARNING), [], 'a default ServiceAccount confines every chart');
  });

  it('leaves Ansible entries alone: they have no chart to scan (chartPath is empty)', async () => {
    const ansible = {
      ...watchEntry('R', { chartPath: '' }),
      ansible: {
        role: join(CHARTS, 'no-such-role'), vars: {}, finalizer: undefined, manageStatus: true, watchClusterScopedResources: false, snakeCaseParameters: true,
        watchAnnotationsChanges: false, markUnsafe: false, blacklist: [], maxRunnerArtifacts: 20,
      },
    };
    const logged = capturingLogger();
    await warnUnconfinedCharts([ansible], undefined, logged.log);
    assert.deepEqual(logged.lines, [], 'no warning, and no failed attempt to read a chart at ""');
  });
});
