import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadWatches } from '../../../src/config/watches.js';
import { WATCH_FIXTURES } from './fixtures.js';

describe('loadWatches', () => {
  it('the operator-sdk sample watches.yaml loads unchanged', async () => {
    const dir = join(WATCH_FIXTURES, 'operator-sdk');
    const r = await loadWatches(join(dir, 'watches.yaml'), { HTTP_PROXY: 'http://proxy.local:3128' });
    assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
    assert.deepEqual(r.entries, [
      {
        group: 'demo.example.com',
        version: 'v1alpha1',
        kind: 'Nginx',
        chartPath: join(dir, 'helm-charts', 'nginx'),
        overrideValues: { 'image.repository': 'quay.io/mynginx', proxy: 'http://proxy.local:3128' },
        watchDependentResources: false,
        reconcilePeriodMs: 120_000,
        maxConcurrentReconciles: 4,
        labelSelector: 'app=web',
        dryRunOption: undefined,
        allowClusterScoped: false,
        allowCrossNamespace: false,
        serviceAccount: undefined,
      },
    ]);
  });

  it('a file with every key, a packaged chart and no group loads', async () => {
    const dir = join(WATCH_FIXTURES, 'valid');
    const r = await loadWatches(join(dir, 'all-keys.yaml'), { REGISTRY: 'registry.local' });
    assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
    assert.deepEqual(r.entries, [
      {
        group: 'demo.example.com',
        version: 'v1alpha1',
        kind: 'Web',
        chartPath: join(WATCH_FIXTURES, 'charts', 'ok'),
        overrideValues: {
          'image.repository': 'registry.local/web',
          'image.tag': '1.10',
          'env[0].name': 'MODE',
          'nodeSelector.kubernetes\\.io/os': 'linux',
        },
        watchDependentResources: true,
        reconcilePeriodMs: 90_000,
        maxConcurrentReconciles: 2,
        labelSelector: 'team=web,tier in (edge,frontend)',
        dryRunOption: 'server',
        allowClusterScoped: true,
        allowCrossNamespace: false,
        serviceAccount: 'web-tenant',
      },
      {
        group: '',
        version: 'v1',
        kind: 'Packaged',
        chartPath: join(WATCH_FIXTURES, 'charts', 'ok-0.1.0.tgz'),
        overrideValues: {},
        watchDependentResources: true,
        reconcilePeriodMs: 0,
        maxConcurrentReconciles: undefined,
        labelSelector: undefined,
        dryRunOption: undefined,
        allowClusterScoped: false,
        allowCrossNamespace: false,
        serviceAccount: undefined,
      },
    ]);
  });

  it('chart paths do not depend on the directory the operator starts in', async () => {
    const before = process.cwd();
    process.chdir(tmpdir());
    try {
      const r = await loadWatches(join(WATCH_FIXTURES, 'operator-sdk', 'watches.yaml'), {});
      assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
      assert.equal(r.entries[0]?.chartPath, join(WATCH_FIXTURES, 'operator-sdk', 'helm-charts', 'nginx'));
    } finally {
      process.chdir(before);
    }
  });

  it('a missing watches file says so and points at --watches-file', async () => {
    const r = await loadWatches('/nonexistent/watches.yaml', {});
    assert.deepEqual(r, {
      ok: false,
      problems: ['cannot read watches file /nonexistent/watches.yaml: no such file; pass the path of your watches.yaml with --watches-file'],
    });
  });

  it('a directory given as the watches file is refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'chartpilot-watches-'));
    try {
      const r = await loadWatches(dir, {});
      assert.deepEqual(r, {
        ok: false,
        problems: [`cannot read watches file ${dir}: it is a directory; pass the path of your watches.yaml with --watches-file`],
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
