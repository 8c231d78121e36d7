import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { limitConcurrentCalls } from '../../../src/helm/limited-actions.js';
import type { Release } from '../../../src/core/model.js';
import { HelmCallsStopped, type ReleaseActions } from '../../../src/engines/helm/ports.js';

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
    const a = { release: 'r', namespace: 'ns-a', timeoutMs: 1000 };
    const b = { ...a, namespace: 'ns-b' };
    const all = Promise.all([
      limited.upgradeInstall({ ...a, chart: 'c', values: {} }),
      limited.uninstall(b),
      limited.rollback(a),
      limited.status({ release: 'r', namespace: 'ns-b', timeoutMs: 1000 }),
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

  it('keeps a slot for other namespaces: one namespace never holds more than all but one', async () => {
    const open: string[] = [];
    const finish = new Map<string, () => void>();
    const helm: ReleaseActions = {
      upgradeInstall: (req) => {
        open.push(`${req.namespace}/${req.release}`);
        return new Promise((resolve) => finish.set(`${req.namespace}/${req.release}`, () => {
          open.splice(open.indexOf(`${req.namespace}/${req.release}`), 1);
          resolve({ revision: 1 } as Release);
        }));
      },
      uninstall: () => Promise.resolve('uninstalled'),
      rollback: () => Promise.resolve(),
      status: () => Promise.resolve(undefined),
    };
    const limited = limitConcurrentCalls(helm, 3);
    const install = (namespace: string, release: string) => limited.upgradeInstall({ namespace, release, timeoutMs: 1000, chart: 'c', values: {} });
    // Tenant a asks first and for more than there are slots: it gets two of three, never the third.
    const calls = ['h1', 'h2', 'h3', 'h4'].map((r) => install('a', r));
    await tick();
    assert.deepEqual(open, ['a/h1', 'a/h2']);
    // A newcomer gets the kept slot at once although a's calls came first and still hang.
    const victim = install('b', 'v');
    await tick();
    assert.deepEqual(open, ['a/h1', 'a/h2', 'b/v']);
    finish.get('b/v')?.();
    assert.equal((await victim).revision, 1);
    // The freed slot is b's to keep: a stays at two.
    await tick();
    assert.deepEqual(open, ['a/h1', 'a/h2']);
    finish.get('a/h1')?.();
    await tick();
    assert.deepEqual(open, ['a/h2', 'a/h3']);
    for (const r of ['h2', 'h3', 'h4']) {
      finish.get(`a/${r}`)?.();
      await tick();
    }
    await Promise.all(calls);
    assert.deepEqual(open, []);
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
