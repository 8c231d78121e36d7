import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { limitConcurrentCalls } from '../../../src/helm/limited-actions.js';
import type { Release } from '../../../src/reconcile/model.js';
import { HelmCallsStopped, type ReleaseActions } from '../../../src/reconcile/ports.js';

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('limitConcurrentCalls', () => {
  it('never has more than `limit` helm calls open at once, whichever actions they are', async () => {
    let open = 0;
    let most = 0;
    const finishers: (() => void)[] = [];
    const call = <T>(value: T) =>
      new Promise<T>((resolve) => {
        open++;
        most = Math.max(most, open);
        finishers.push(() => {
          open--;
          resolve(value);
        });
      });
    const helm: ReleaseActions = {
      upgradeInstall: () => call({ revision: 1 } as Release),
      uninstall: () => call('uninstalled' as const),
      rollback: () => call(undefined),
      status: () => call(undefined),
    };
    const limited = limitConcurrentCalls(helm, 2);
    const base = { release: 'r', namespace: 'ns', timeoutMs: 1000 };
    const all = Promise.all([
      limited.upgradeInstall({ ...base, chart: 'c', values: {} }),
      limited.uninstall(base),
      limited.rollback(base),
      limited.status('r', 'ns', 1000),
    ]);
    await tick();
    assert.equal(open, 2);
    while (finishers.length > 0) {
      finishers.shift()?.();
      await tick();
    }
    const [release, uninstalled] = await all;
    assert.equal(release.revision, 1);
    assert.equal(uninstalled, 'uninstalled');
    assert.equal(most, 2);
    assert.equal(open, 0);
  });

  it('after stop() a call waiting for a slot never starts helm', async () => {
    const started: string[] = [];
    let finish: (() => void) | undefined;
    const helm: ReleaseActions = {
      upgradeInstall: (req) => {
        started.push(req.release);
        return new Promise((resolve) => {
          finish = () => {
            resolve({ revision: 1 } as Release);
          };
        });
      },
      uninstall: () => Promise.resolve('uninstalled'),
      rollback: () => Promise.resolve(),
      status: () => Promise.resolve(undefined),
    };
    const limited = limitConcurrentCalls(helm, 1);
    const base = { namespace: 'ns', timeoutMs: 1000, chart: 'c', values: {} };
    const running = limited.upgradeInstall({ ...base, release: 'first' });
    const waiting = limited.upgradeInstall({ ...base, release: 'second' });
    await tick();
    limited.stop();
    await assert.rejects(waiting, HelmCallsStopped);
    finish?.();
    assert.equal((await running).revision, 1);
    assert.deepEqual(started, ['first']);
  });
});
