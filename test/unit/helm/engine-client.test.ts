/**
 * The engine client's side of the engine protocol, against a fake engine
 * (test/unit/fakes/fake-helm-engine.ts): what a call sends (its own gate session, values as a
 * file's text, no identity of its own), post-render asked over the channel and refused there,
 * errors classified and redacted as helm's stderr is, calls in flight together, and deadlines,
 * aborts and deaths failing the way a helm process's do. That the real engine runs helm's actions
 * is helm-worker's own test suite and the integration tests'.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';

import type { ApiGate } from '../../../src/helm/api-gate.js';
import { createEngineHelmClient, type EngineEvent, type EngineHelmClient } from '../../../src/helm/engine-client.js';
import { parseAnswer } from '../../../src/helm/engine-process.js';
import { HelmKilledError, HelmProcessDied } from '../../../src/helm/exec.js';
import { HelmError, type UpgradeInstallRequest } from '../../../src/helm/types.js';
import { HelmCallInterrupted, HelmCallsStopped } from '../../../src/engines/helm/ports.js';

const FAKE_ENGINE = fileURLToPath(new URL('../../../../test/fixtures/helm/fake-helm-engine.sh', import.meta.url));
await chmod(FAKE_ENGINE, 0o755);

const SECRET = 'hunter2-engine';
const OWNER = { uid: 'uid-web', confinement: { namespace: 'team-a', allowClusterScoped: false, allowCrossNamespace: false } };
const REQ: UpgradeInstallRequest = {
  release: 'ok',
  namespace: 'team-a',
  chart: '/charts/webapp',
  values: { password: SECRET, n: 3 },
  timeoutMs: 60_000,
  releaseLabels: { 'chartpilot.io/fingerprint': 'abc123' },
  impersonate: 'system:serviceaccount:team-a:tenant',
  owner: OWNER,
};

interface Fixture {
  client: EngineHelmClient;
  events: EngineEvent[];
  sessions: { opened: number; closed: number; refusals: string[] };
  /** What the engine got, per call, in the order the calls were made. */
  sent(): Promise<Record<string, unknown>[]>;
}

const RECORD_KEY = Buffer.alloc(32, 7);

async function fixture(t: TestContext, env: Record<string, string> = {}, more: { killGraceMs?: number; confine?: { recordKey: (uid: string) => Buffer } } = {}): Promise<Fixture> {
  const dir = await mkdtemp(join(tmpdir(), 'chartpilot-engine-client-'));
  const events: EngineEvent[] = [];
  const sessions = { opened: 0, closed: 0, refusals: [] as string[] };
  const gate: ApiGate = {
    open: (call) => {
      const n = ++sessions.opened;
      return {
        kubeconfig: `session ${String(n)} for ${call.action} as ${call.impersonate ?? 'the operator'}\n`,
        cacheDir: '/the/gate/cache',
        refusals: () => sessions.refusals,
        close: () => {
          sessions.closed++;
        },
      };
    },
  };
  const client = createEngineHelmClient({
    bin: FAKE_ENGINE,
    env: { ...process.env, FAKE_WORKER_NODE: process.execPath, FAKE_ENGINE_DIR: dir, ...env },
    gate,
    template: () => Promise.reject(new Error('not in these tests')),
    onEngine: (e) => events.push(e),
    tempDir: dir,
    ...more,
  });
  t.after(async () => {
    await client.close();
    await rm(dir, { recursive: true, force: true });
  });
  const sent = async (): Promise<Record<string, unknown>[]> => {
    const files = (await readdir(dir)).filter((f) => f.endsWith('.json'));
    const calls = await Promise.all(files.map(async (f) => JSON.parse(await readFile(join(dir, f), 'utf8')) as Record<string, unknown>));
    return calls.sort((a, b) => Number(a['id']) - Number(b['id']));
  };
  return { client, events, sessions, sent };
}

describe('helm engine client', () => {
  it('sends each call with its own gate session and the values as a file’s text, never an identity of its own', async (t) => {
    const f = await fixture(t);
    const release = await f.client.upgradeInstall(REQ);
    assert.deepEqual(
      { name: release.name, revision: release.revision, status: release.status, chart: release.chartName, applyMethod: release.applyMethod },
      { name: 'ok', revision: 1, status: 'deployed', chart: 'webapp', applyMethod: 'ssa' },
    );
    const [sent] = await f.sent();
    assert.ok(sent !== undefined);
    assert.equal(sent['op'], 'upgrade');
    assert.equal(sent['values'], JSON.stringify(REQ.values));
    assert.deepEqual(sent['labels'], REQ.releaseLabels);
    assert.equal(sent['impersonate'], undefined, 'the gate impersonates, not helm');
    assert.equal(sent['kubeconfigContent'], 'session 1 for upgrade as system:serviceaccount:team-a:tenant\n');
    assert.equal(sent['kubeCacheDir'], '/the/gate/cache');
    assert.equal(sent['postRender'], false);
    assert.ok(Number(sent['timeoutMs']) < REQ.timeoutMs && Number(sent['timeoutMs']) > REQ.timeoutMs - 15_000, 'helm’s own timeout a little below the budget');
    assert.deepEqual(f.sessions, { opened: 1, closed: 1, refusals: [] });
    await assert.rejects(readFile(String(sent['kubeconfig'])), { code: 'ENOENT' }, 'the session’s kubeconfig is removed after the call');
  });

  it('answers post-renders over the channel with the same check, and a refusal applies nothing and says why', async (t) => {
    const f = await fixture(t);
    const postRender = { labels: { 'chartpilot.io/owner-uid': 'u-1' }, annotations: { 'operator-sdk/primary-resource': 'team-a/web' } };
    const release = await f.client.upgradeInstall({ ...REQ, postRender });
    assert.match(release.manifest, /chartpilot\.io\/owner-uid/u, 'the manifest helm applied is the post-rendered one');
    await assert.rejects(f.client.upgradeInstall({ ...REQ, release: 'badrender', postRender }), (err: unknown) => {
      assert.ok(err instanceof HelmError);
      assert.equal(err.kind, 'render');
      assert.match(err.message, /Nothing was applied/u);
      return true;
    });
  });

  it('classifies and redacts helm’s words as for a helm process; not found is not an error where the CLI’s is not', async (t) => {
    const f = await fixture(t);
    await assert.rejects(f.client.upgradeInstall({ ...REQ, release: 'fail' }), (err: unknown) => {
      assert.ok(err instanceof HelmError);
      assert.equal(err.kind, 'render');
      assert.ok(!err.message.includes(SECRET), err.message);
      return true;
    });
    const at = { release: 'missing', namespace: 'team-a', timeoutMs: 10_000, owner: OWNER };
    assert.equal(await f.client.status(at), undefined);
    assert.deepEqual(await f.client.history(at), []);
    assert.equal(await f.client.uninstall(at), 'not-found');
  });

  it('what the API layer refused is the call’s error, even where helm went on', async (t) => {
    const f = await fixture(t);
    f.sessions.refusals.push('create clusterrolebindings/escape: cluster-scoped objects are not allowed for this kind');
    await assert.rejects(f.client.upgradeInstall(REQ), { name: 'HelmError', kind: 'refused', message: /cluster-scoped objects are not allowed/u });
  });

  it('confined in the engine: sends the CR’s confinement, its record key and its identity, and opens no gate session', async (t) => {
    const asked: string[] = [];
    const f = await fixture(t, {}, { confine: { recordKey: (uid) => (asked.push(uid), RECORD_KEY) } });
    await f.client.upgradeInstall(REQ);
    await f.client.uninstall({ release: 'ok', namespace: 'team-a', timeoutMs: 10_000, owner: OWNER, impersonate: REQ.impersonate });
    const sent = await f.sent();
    assert.equal(sent.length, 2);
    for (const call of sent) {
      assert.deepEqual(call['confine'], { namespace: 'team-a', allowClusterScoped: false, allowCrossNamespace: false, recordKey: RECORD_KEY.toString('base64') });
      assert.equal(call['kubeconfig'], undefined, 'no session kubeconfig: the engine connects itself');
      assert.equal(call['impersonate'], REQ.impersonate, 'the engine asks for the tenant’s identity (--kube-as-user)');
      assert.match(String(call['kubeCacheDir']), /chartpilot-kubecache-/u);
    }
    assert.deepEqual(asked, ['uid-web', 'uid-web']);
    assert.deepEqual(f.sessions, { opened: 0, closed: 0, refusals: [] });
    const cacheDir = String(sent[0]?.['kubeCacheDir']);
    await f.client.close();
    await assert.rejects(readdir(cacheDir), { code: 'ENOENT' }, 'the discovery cache is removed at close');
  });

  it('what the engine’s own confinement refused is the call’s error, even where helm went on', async (t) => {
    const f = await fixture(t, {}, { confine: { recordKey: () => RECORD_KEY } });
    await assert.rejects(f.client.upgradeInstall({ ...REQ, release: 'refused' }), { name: 'HelmError', kind: 'refused', message: /cluster-config" in namespace kube-system/u });
    const plain = await fixture(t);
    await assert.rejects(plain.client.upgradeInstall({ ...REQ, release: 'refused' }), { name: 'HelmError', kind: 'refused' }, 'refusals in the answer count in gate mode too');
  });

  it('runs calls together on one engine, each answered with its own', async (t) => {
    const f = await fixture(t);
    const answered: string[] = [];
    const call = async (release: string): Promise<string> => {
      const r = await f.client.upgradeInstall({ ...REQ, release });
      answered.push(r.name);
      return r.name;
    };
    assert.deepEqual(await Promise.all([call('slow'), call('ok')]), ['slow', 'ok']);
    assert.deepEqual(answered, ['ok', 'slow'], 'the quick call did not wait for the slow one');
    assert.equal(f.events.filter((e) => e.event === 'started').length, 1);
  });

  it('a call past its time is cancelled, and killed with the engine when it does not answer; the next call gets a new engine', async (t) => {
    const f = await fixture(t, {}, { killGraceMs: 300 });
    await assert.rejects(f.client.upgradeInstall({ ...REQ, release: 'hang', timeoutMs: 500 }), HelmKilledError);
    assert.equal(f.events.filter((e) => e.event === 'exited').length, 0, 'a cancelled call that answers keeps the engine');

    const stubborn = await fixture(t, { FAKE_ENGINE_IGNORE_CANCEL: '1' }, { killGraceMs: 300 });
    await assert.rejects(stubborn.client.upgradeInstall({ ...REQ, release: 'hang', timeoutMs: 500 }), HelmKilledError);
    assert.ok((await stubborn.client.upgradeInstall(REQ)).revision === 1);
    const exited = stubborn.events.find((e) => e.event === 'exited');
    assert.equal(exited?.event === 'exited' ? exited.why : undefined, 'killed');
    const replaced = stubborn.events.filter((e) => e.event === 'started');
    assert.equal(replaced.length, 2);
    assert.equal(replaced[1]?.event === 'started' ? replaced[1].replaces : undefined, replaced[0]?.event === 'started' ? replaced[0].pid : -1);
  });

  it('an aborted call is interrupted; a call after the abort never starts', async (t) => {
    const f = await fixture(t);
    const stop = new AbortController();
    const running = f.client.upgradeInstall({ ...REQ, release: 'hang', signal: stop.signal });
    setTimeout(() => {
      stop.abort();
    }, 200);
    await assert.rejects(running, HelmCallInterrupted);
    await assert.rejects(f.client.upgradeInstall({ ...REQ, signal: stop.signal }), (err: unknown) => err instanceof HelmCallsStopped && !(err instanceof HelmCallInterrupted));
  });

  it('a call aborted while the engine is still starting is interrupted, not run to its deadline', async (t) => {
    const f = await fixture(t);
    const stop = new AbortController();
    const started = Date.now();
    // Aborted in the same tick: the engine is not up yet when the call reaches it.
    const running = f.client.upgradeInstall({ ...REQ, release: 'hang', signal: stop.signal });
    stop.abort();
    await assert.rejects(running, HelmCallInterrupted);
    assert.ok(Date.now() - started < 30_000, 'interrupted at once, not at the 60 s deadline');
    assert.equal(f.events.filter((e) => e.event === 'exited').length, 0, 'the engine was not killed for it');
  });

  it('the engine dying mid-call fails that call as a dead helm process, and the next call starts a new one', async (t) => {
    const f = await fixture(t);
    await assert.rejects(f.client.upgradeInstall({ ...REQ, release: 'die' }), HelmProcessDied);
    assert.equal((await f.client.upgradeInstall(REQ)).name, 'ok');
    assert.ok(f.events.some((e) => e.event === 'exited' && e.why === 'died'));
  });

  it('refuses a call for nobody in particular before anything runs', async (t) => {
    const f = await fixture(t);
    await assert.rejects(f.client.upgradeInstall({ ...REQ, owner: undefined }), TypeError);
    assert.equal(f.sessions.opened, 0);
  });

  it('an engine that is not one is a clear start-up error', async (t) => {
    const f = await fixture(t, { FAKE_WORKER_NODE: '/nonexistent/node' });
    await assert.rejects(f.client.warmUp(), /exited before it was ready|cannot start/u);
  });
});

describe('engine answers', () => {
  it('reads each frame shape and refuses what is not one', () => {
    assert.deepEqual(parseAnswer({ id: 1, done: true }), { done: true });
    assert.deepEqual(parseAnswer({ id: 1, error: { class: 'locked?', message: 'x' } }), { error: { class: 'failed', message: 'x' } });
    assert.equal(parseAnswer({ id: 1, release: { name: 'web' } }), undefined, 'a release needs its revision');
    assert.equal(parseAnswer({ id: 1, releases: [{ name: 'web', revision: 1 }, {}] }), undefined);
    assert.equal(parseAnswer({ id: 1 }), undefined);
    assert.deepEqual(parseAnswer({ id: 1, done: true, refusals: ['no'] }), { done: true, refusals: ['no'] });
    assert.equal(parseAnswer({ id: 1, done: true, refusals: 'no' }), undefined, 'refusals are a list of text');
    assert.equal(parseAnswer({ id: 1, done: true, refusals: [3] }), undefined);
  });
});
