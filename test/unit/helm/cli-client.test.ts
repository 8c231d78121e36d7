/**
 * The client's side of the contract, against a fake helm (test/fixtures/helm/fake-helm.sh) that
 * records its argv, environment and values file: what is passed how, timeouts, cleanup, error
 * mapping. That real helm accepts these arguments is the integration test's job.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';

import type { ApiGate, GatedCall } from '../../../src/helm/api-gate.js';
import { createHelmClient, dialectFor, helmTimeoutMs, releaseLabelFlags, SESSION_DIR_PREFIX, type CliHelmClientOptions, type HelmCallEvent } from '../../../src/helm/cli-client.js';
import { POSTRENDER_PLUGIN_NAME, POSTRENDER_SCRIPT } from '../../../src/helm/postrender/plugin.js';
import { HelmError, type UpgradeInstallRequest } from '../../../src/helm/types.js';
import { HelmCallInterrupted, HelmCallsStopped } from '../../../src/engines/helm/ports.js';

const FIXTURES = fileURLToPath(new URL('../../../../test/fixtures/helm/', import.meta.url));
const FAKE_HELM = join(FIXTURES, 'fake-helm.sh');
await chmod(FAKE_HELM, 0o755); // in case a checkout lost the mode

interface Call {
  args: string[];
  env: Record<string, string>;
  /** The per-call kubeconfig helm found, and its mode. */
  kubeconfig?: string;
  kubeconfigMode?: string;
  values?: string;
  valuesMode?: string;
  valuesPath?: string;
}

interface Fake {
  dir: string;
  events: HelmCallEvent[];
  client: ReturnType<typeof createHelmClient>;
  calls(): Promise<Call[]>;
  /** The single call whose first argument is `cmd`. */
  call(cmd: string): Promise<Call>;
}

/** A client on the fake helm; its record directory and plugin directory go away after `t`. */
async function fake(t: TestContext, env: Record<string, string> = {}, extra: Partial<CliHelmClientOptions> = {}): Promise<Fake> {
  const dir = await mkdtemp(join(tmpdir(), 'chartpilot-fake-helm-'));
  const events: HelmCallEvent[] = [];
  const client = createHelmClient({
    helmBin: FAKE_HELM,
    kubeconfig: '/path/to/kubeconfig',
    env: { FAKE_HELM_DIR: dir, ...env },
    log: (e) => events.push(e),
    // The script transport keeps the spec on the argv these tests check; the socket transport
    // has its own test below.
    curlBin: null,
    ...extra,
  });
  t.after(async () => {
    await client.close();
    await rm(dir, { recursive: true, force: true });
  });
  const calls = async (): Promise<Call[]> => {
    const out: Call[] = [];
    for (const f of (await readdir(dir)).filter((n) => n.endsWith('.args'))) {
      const base = join(dir, f.slice(0, -'.args'.length));
      const read = (suffix: string) => readFile(`${base}${suffix}`, 'utf8').catch(() => undefined);
      const args = (await readFile(`${base}.args`, 'utf8')).split('\0').slice(0, -1);
      const env = Object.fromEntries(((await read('.env')) ?? '').split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      const c: Call = { args, env };
      const values = await read('.values');
      if (values !== undefined) c.values = values;
      const mode = await read('.values-mode');
      if (mode !== undefined) c.valuesMode = mode.trim();
      const path = await read('.values-path');
      if (path !== undefined) c.valuesPath = path;
      const kubeconfig = await read('.kubeconfig');
      if (kubeconfig !== undefined) c.kubeconfig = kubeconfig;
      const kubeconfigMode = await read('.kubeconfig-mode');
      if (kubeconfigMode !== undefined) c.kubeconfigMode = kubeconfigMode.trim();
      out.push(c);
    }
    return out;
  };
  const call = async (cmd: string): Promise<Call> => {
    const matching = (await calls()).filter((c) => c.args[0] === cmd);
    assert.equal(matching.length, 1, `exactly one helm ${cmd} call`);
    const [c] = matching;
    assert.ok(c);
    return c;
  };
  return { dir, events, client, calls, call };
}

const SECRET = 'hunter2-secret';
const REQ: UpgradeInstallRequest = {
  release: 'web',
  namespace: 'team-a',
  chart: '/charts/webapp',
  values: { image: { tag: '1.2.3' }, password: SECRET, list: ['a,b=c', 'x y'] },
  timeoutMs: 300_000,
  description: '--looks-like-a-flag',
  historyMax: 5,
  releaseLabels: { 'chartpilot.io/fingerprint': 'abc123' },
  postRender: { labels: { 'chartpilot.io/owner-uid': 'u-1' }, annotations: { 'operator-sdk/primary-resource': 'team-a/web' } },
};

/**
 * Replaces `--timeout=<n>ms` by `--timeout=~<max>ms` after checking n is at most `max` and not
 * much less (helm gets what is left of the budget once the version probe has run).
 */
function timeoutArg(args: string[], max: number): string[] {
  return args.map((a) => {
    const m = /^--timeout=(\d+)ms$/.exec(a);
    if (m === null) return a;
    const n = Number(m[1]);
    assert.ok(n <= max && n > max - 5000, `${a} is just below ${String(max)}ms`);
    return `--timeout=~${String(max)}ms`;
  });
}

const exists = (p: string): Promise<boolean> => stat(p).then(() => true, () => false);

/** Polls `check` until it holds (at most 5 s). */
async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('helm CLI client', () => {
  it('upgradeInstall: argv for helm 4, values only in a 0600 file that is removed afterwards', async (t) => {
    const f = await fake(t, { FAKE_HELM_STDOUT: join(FIXTURES, 'upgrade-install.json') });
    const release = await f.client.upgradeInstall(REQ);
    assert.equal(release.revision, 1);
    assert.equal(release.chartName, 'webapp');

    const c = await f.call('upgrade');
    const file = c.valuesPath;
    assert.ok(file !== undefined);
    assert.deepEqual(timeoutArg(c.args, 290_000), [
      'upgrade',
      '--install',
      '--namespace=team-a',
      '--output=json',
      '--disable-openapi-validation',
      '--labels=chartpilot.io/fingerprint=abc123',
      '--history-max=5',
      '--description=--looks-like-a-flag',
      `--post-renderer=${POSTRENDER_PLUGIN_NAME}`,
      // The refusal file sits beside the values file, in the same private directory.
      `--post-renderer-args=${JSON.stringify({ ...REQ.postRender, errorFile: `${file}.refusal` })}`,
      '--timeout=~290000ms',
      `--values=${file}`,
      '--',
      'web',
      '/charts/webapp',
    ]);
    assert.ok(!c.args.some((a) => a.includes(SECRET) || a.includes('1.2.3')), 'no value on the command line');
    assert.ok(!c.args.some((a) => a === '--wait' || a.startsWith('--wait=') || a.startsWith('--set')));
    assert.equal(c.valuesMode, '600');
    assert.deepEqual(JSON.parse(c.values ?? ''), REQ.values);
    assert.equal(await exists(file), false, 'values file removed');
    assert.equal(await exists(dirname(file)), false, 'its private directory removed');

    // Environment: kubeconfig, and our plugin directory holding the post-renderer.
    assert.equal(c.env['KUBECONFIG'], '/path/to/kubeconfig');
    assert.equal(c.env['CHARTPILOT_POSTRENDER_SCRIPT'], POSTRENDER_SCRIPT);
    assert.equal(c.env['CHARTPILOT_NODE'], process.execPath);
    const pluginsDir = c.env['HELM_PLUGINS'] ?? '';
    assert.match(await readFile(join(pluginsDir, POSTRENDER_PLUGIN_NAME, 'plugin.yaml'), 'utf8'), /type: postrenderer\/v1/);
    await f.client.close();
    assert.equal(await exists(pluginsDir), false, 'close() removes the plugin directory');

    assert.deepEqual(f.events.map((e) => [e.action, e.release, e.namespace, e.outcome]), [['upgrade', 'web', 'team-a', 'success']]);
  });

  it('upgradeInstall: force and disableHooks map to helm 4 flags; version is asked once', async (t) => {
    const f = await fake(t, { FAKE_HELM_STDOUT: join(FIXTURES, 'upgrade-second.json') });
    await f.client.upgradeInstall({ ...REQ, postRender: undefined, releaseLabels: undefined, force: true, disableHooks: true });
    await f.client.upgradeInstall({ ...REQ, postRender: undefined });
    const calls = await f.calls();
    assert.equal(calls.filter((c) => c.args[0] === 'version').length, 1);
    const forced = calls.find((c) => c.args.includes('--force-conflicts'));
    assert.ok(forced);
    assert.ok(forced.args.includes('--server-side=true'));
    assert.ok(forced.args.includes('--no-hooks'));
    assert.ok(!forced.args.includes('--force-replace'), 'helm 4 refuses --force-replace with server-side apply');
    assert.ok(!calls.some((c) => c.args.some((a) => a.startsWith('--post-renderer'))));
  });

  it('upgradeInstall: the socket transport passes a render URL, never the spec, and curl and the socket in the environment', async (t) => {
    const f = await fake(t, { FAKE_HELM_STDOUT: join(FIXTURES, 'upgrade-install.json') }, { curlBin: '/bin/sh' });
    await f.client.upgradeInstall(REQ);
    const c = await f.call('upgrade');
    const arg = c.args.find((a) => a.startsWith('--post-renderer-args='));
    assert.match(arg ?? '', /^--post-renderer-args=http:\/\/chartpilot\/render\/[0-9a-f-]{36}$/);
    assert.equal(c.env['CHARTPILOT_CURL'], '/bin/sh');
    const pluginsDir = c.env['HELM_PLUGINS'] ?? '';
    assert.equal(c.env['CHARTPILOT_RENDER_SOCKET'], join(pluginsDir, 'render.sock'));
    assert.match(await readFile(join(pluginsDir, POSTRENDER_PLUGIN_NAME, 'plugin.yaml'), 'utf8'), /command: \$\{CHARTPILOT_CURL\}/);
    assert.equal(c.env['CHARTPILOT_POSTRENDER_SCRIPT'], '', 'the script transport is not set up');
  });

  it('helm 3 gets --force and an executable post-renderer', async (t) => {
    const f = await fake(t, { FAKE_HELM_VERSION: 'v3.17.3', FAKE_HELM_STDOUT: join(FIXTURES, 'upgrade-install.json') });
    await f.client.upgradeInstall({ ...REQ, force: true });
    const c = await f.call('upgrade');
    assert.ok(c.args.includes('--force'));
    const pr = c.args.find((a) => a.startsWith('--post-renderer='));
    assert.match(pr ?? '', /\/postrender\.sh$/);
  });

  it('a hung helm is killed after timeoutMs (SIGTERM, then SIGKILL) and leaves no values file', async (t) => {
    const f = await fake(t, { FAKE_HELM_MODE: 'hang' }, { killGraceMs: 200 });
    const started = Date.now();
    await assert.rejects(f.client.upgradeInstall({ ...REQ, timeoutMs: 300 }), (err: unknown) => {
      assert.ok(err instanceof HelmError);
      assert.equal(err.kind, 'timeout');
      assert.equal(err.action, 'upgrade');
      assert.equal(err.message, 'helm upgrade timed out after 0.3s');
      return true;
    });
    assert.ok(Date.now() - started < 5000, 'SIGKILL followed the grace period');
    const c = await f.call('upgrade');
    // From the argv, which the fake records first: on a loaded machine the SIGTERM at 300 ms can
    // end it before it records the values file itself.
    const valuesPath = c.args.find((a) => a.startsWith('--values='))?.slice('--values='.length);
    assert.ok(valuesPath !== undefined);
    assert.equal(await exists(dirname(valuesPath)), false, 'values directory removed after the kill');
    assert.deepEqual(f.events.map((e) => [e.outcome, e.errorKind]), [['error', 'timeout']]);
  });

  it('an aborted signal stops a running helm with SIGTERM; the call rejects as interrupted once helm has exited', async (t) => {
    const f = await fake(t, { FAKE_HELM_MODE: 'wait' }, { killGraceMs: 10_000 });
    const stop = new AbortController();
    const started = Date.now();
    const call = f.client.upgradeInstall({ ...REQ, timeoutMs: 60_000, signal: stop.signal });
    await until(async () => (await readdir(f.dir)).some((n) => n.endsWith('.running')));
    stop.abort();
    await assert.rejects(call, (err: unknown) => err instanceof HelmCallInterrupted && /helm upgrade was stopped \(SIGTERM\)/.test(err.message));
    assert.ok(Date.now() - started < 5000, 'SIGTERM ended it, well before the SIGKILL grace');
    const c = await f.call('upgrade');
    assert.equal(await exists(dirname(c.valuesPath ?? '')), false, 'values directory removed');
  });

  it('a helm that ignores SIGTERM is killed after the grace once the signal aborts', async (t) => {
    const f = await fake(t, { FAKE_HELM_MODE: 'hang' }, { killGraceMs: 200 });
    const stop = new AbortController();
    const call = f.client.uninstall({ release: 'web', namespace: 'team-a', timeoutMs: 60_000, signal: stop.signal });
    await until(async () => (await readdir(f.dir)).some((n) => n.endsWith('.running')));
    const aborted = Date.now();
    stop.abort();
    await assert.rejects(call, (err: unknown) => err instanceof HelmCallInterrupted && /SIGKILL/.test(err.message));
    assert.ok(Date.now() - aborted < 5000, 'SIGKILL followed the grace period');
  });

  it('a signal aborted before the call starts no helm at all', async (t) => {
    const f = await fake(t);
    const stop = new AbortController();
    stop.abort();
    await assert.rejects(f.client.status({ release: 'web', namespace: 'team-a', timeoutMs: 10_000, signal: stop.signal }), (err: unknown) => err instanceof HelmCallsStopped && !(err instanceof HelmCallInterrupted));
    assert.deepEqual((await f.calls()).map((c) => c.args[0]), []);
  });

  it('helm failures become typed HelmErrors with values redacted', async (t) => {
    const locked = await fake(t, { FAKE_HELM_MODE: 'fail', FAKE_HELM_STDERR: join(FIXTURES, 'stderr/upgrade-locked.txt') });
    await assert.rejects(locked.client.upgradeInstall({ ...REQ, postRender: undefined }), { name: 'HelmError', kind: 'locked' });
    assert.deepEqual(locked.events.map((e) => [e.outcome, e.errorKind]), [['error', 'locked']]);

    const schema = await fake(t, { FAKE_HELM_MODE: 'fail', FAKE_HELM_STDERR: join(FIXTURES, 'stderr/template-schema-pattern.txt') });
    await assert.rejects(schema.client.template({ release: 'web', namespace: 'ns', chart: '/c', values: { password: SECRET }, timeoutMs: 10_000 }), (err: unknown) => {
      assert.ok(err instanceof HelmError);
      assert.equal(err.kind, 'render');
      assert.doesNotMatch(err.message, /hunter2/);
      return true;
    });
  });

  it('not found: uninstall resolves not-found, status undefined, history []', async (t) => {
    const f = await fake(t, { FAKE_HELM_MODE: 'fail', FAKE_HELM_STDERR: join(FIXTURES, 'stderr/uninstall-not-found.txt') });
    assert.equal(await f.client.uninstall({ release: 'web', namespace: 'ns', timeoutMs: 10_000, wait: true, disableHooks: true }), 'not-found');
    const c = await f.call('uninstall');
    assert.deepEqual(c.args, ['uninstall', '--namespace=ns', '--timeout=8000ms', '--wait', '--no-hooks', '--', 'web']);

    const g = await fake(t, { FAKE_HELM_MODE: 'fail', FAKE_HELM_STDERR: join(FIXTURES, 'stderr/status-not-found.txt') });
    assert.equal(await g.client.status({ release: 'web', namespace: 'ns', timeoutMs: 10_000 }), undefined);
    assert.deepEqual(await g.client.history({ release: 'web', namespace: 'ns', timeoutMs: 10_000 }), []);
    const get = await g.call('get');
    assert.deepEqual(get.args.slice(0, 3), ['get', 'all', '--namespace=ns']);
    assert.match(get.args[3] ?? '', /^--template=@@chartpilot-[0-9a-f]{24}@@name\n/);
    assert.deepEqual(get.args.slice(4), ['--', 'web']);
    assert.deepEqual(g.events.map((e) => [e.action, e.outcome]), [['status', 'success'], ['history', 'success']]);
  });

  it('rollback argv: revision positional, force mapped, no values', async (t) => {
    const f = await fake(t);
    await f.client.rollback({ release: 'web', namespace: 'ns', timeoutMs: 60_000, revision: 3, force: true });
    const c = await f.call('rollback');
    assert.deepEqual(timeoutArg(c.args, 50_000), ['rollback', '--namespace=ns', '--server-side=true', '--force-conflicts', '--timeout=~50000ms', '--', 'web', '3']);
  });

  it('a missing helm binary is a failed HelmError, not a crash', async () => {
    const client = createHelmClient({ helmBin: '/nonexistent/helm' });
    await assert.rejects(client.history({ release: 'web', namespace: 'ns', timeoutMs: 5000 }), (err: unknown) => {
      assert.ok(err instanceof HelmError);
      assert.equal(err.kind, 'failed');
      assert.match(err.message, /could not be started/);
      return true;
    });
  });

  it('bad input is rejected before helm runs', async (t) => {
    assert.throws(() => createHelmClient({ helmBin: '' }), TypeError);
    assert.throws(() => createHelmClient({ helmBin: 'helm', killGraceMs: -1 }), RangeError);
    const f = await fake(t);
    await assert.rejects(f.client.upgradeInstall({ ...REQ, release: '' }), TypeError);
    await assert.rejects(f.client.upgradeInstall({ ...REQ, timeoutMs: 0 }), RangeError);
    await assert.rejects(f.client.upgradeInstall({ ...REQ, releaseLabels: { status: 'x' } }), /invalid release label key/);
    await assert.rejects(f.client.rollback({ release: 'web', namespace: 'ns', timeoutMs: 1000, revision: 0 }), RangeError);
    assert.deepEqual(await f.calls(), []);
  });

  it('a throwing log callback does not fail the call', async (t) => {
    const f = await fake(t, {}, { log: () => { throw new Error('metrics broke'); } });
    await f.client.rollback({ release: 'web', namespace: 'ns', timeoutMs: 10_000 });
  });

  it('helpers: helm timeout below ours, dialects, release label flags', () => {
    assert.equal(helmTimeoutMs(300_000), 290_000);
    assert.equal(helmTimeoutMs(10_000), 8_000);
    assert.equal(helmTimeoutMs(1), 1);
    assert.equal(dialectFor('v4.1.4').major, 4);
    assert.equal(dialectFor('v3.17.3\n').major, 3);
    // Helm 4 skips its costly client-side OpenAPI pass (the server validates); helm 3 keeps it.
    assert.deepEqual(dialectFor('v4.1.4').install, ['--disable-openapi-validation']);
    assert.deepEqual(dialectFor('v3.17.3').install, []);
    assert.throws(() => dialectFor('v2.16.0'), /unsupported helm version/);
    assert.deepEqual(releaseLabelFlags({ a: 'b', 'x.io/y': '' }), ['--labels=a=b', '--labels=x.io/y=']);
    assert.throws(() => releaseLabelFlags({ a: 'b,c' }), /invalid value/);
    assert.throws(() => releaseLabelFlags({ owner: 'me' }), /invalid release label key/);
  });

  describe('through the API gate', () => {
    const OWNER = { uid: 'uid-web', confinement: { namespace: 'team-a', allowClusterScoped: false, allowCrossNamespace: false } };

    /** A gate that hands out a recognisable kubeconfig per session and refuses what `refuse` says. */
    function recordingGate(refuse: (action: string) => readonly string[] = () => []): { gate: ApiGate; opened: GatedCall[]; closed: number } {
      const state = { opened: [] as GatedCall[], closed: 0 };
      const gate: ApiGate = {
        open: (call) => {
          state.opened.push(call);
          const n = state.opened.length;
          return {
            kubeconfig: `session ${String(n)} for ${call.action}\n`,
            cacheDir: '/the/gate/cache',
            refusals: () => refuse(call.action),
            close: () => { state.closed++; },
          };
        },
      };
      return { gate, get opened() { return state.opened; }, get closed() { return state.closed; } };
    }

    it('each helm process gets its own session: a private kubeconfig, no other way to the cluster, the identity left to the gate', async (t) => {
      const g = recordingGate();
      const f = await fake(t, { FAKE_HELM_STDOUT: join(FIXTURES, 'upgrade-install.json'), HELM_KUBEAPISERVER: 'https://elsewhere:6443', HELM_KUBETOKEN: 'stolen' }, { gate: g.gate });
      await f.client.upgradeInstall({ ...REQ, owner: OWNER, impersonate: 'system:serviceaccount:team-a:tenant' });
      await f.client.uninstall({ release: 'web', namespace: 'team-a', timeoutMs: 10_000, owner: OWNER, impersonate: 'system:serviceaccount:team-a:tenant' });
      const upgrade = await f.call('upgrade');
      assert.equal(upgrade.kubeconfig, 'session 1 for upgrade\n');
      assert.equal(upgrade.kubeconfigMode, '600');
      assert.match(upgrade.env['KUBECONFIG'] ?? '', /chartpilot-session-[^/]+\/kubeconfig$/, 'not the client’s own kubeconfig');
      assert.equal(upgrade.env['HELM_KUBEAPISERVER'], '', 'helm cannot be pointed elsewhere');
      assert.equal(upgrade.env['HELM_KUBETOKEN'], '');
      assert.equal(upgrade.env['KUBECACHEDIR'], '/the/gate/cache', 'discovery cached per gate, not under the home directory per proxy port');
      assert.ok(!upgrade.args.some((a) => a.startsWith('--kube-as-user')), 'the gate impersonates, not helm');
      const uninstall = await f.call('uninstall');
      assert.equal(uninstall.kubeconfig, 'session 2 for uninstall\n');
      assert.deepEqual(g.opened.map((c) => [c.action, c.release, c.namespace, c.owner.uid, c.impersonate]), [
        ['upgrade', 'web', 'team-a', 'uid-web', 'system:serviceaccount:team-a:tenant'],
        ['uninstall', 'web', 'team-a', 'uid-web', 'system:serviceaccount:team-a:tenant'],
      ]);
      assert.equal(g.closed, 2, 'every session is closed after its process');
      const left = (await readdir(tmpdir())).filter((n) => n.startsWith(SESSION_DIR_PREFIX));
      assert.deepEqual(left.filter((n) => upgrade.env['KUBECONFIG']?.includes(n) === true), [], 'the kubeconfig is removed');
    });

    it('a refusal of the gate is the call’s error, named, even when helm went on', async (t) => {
      const refusal = 'refused to delete ConfigMap "cluster-config" in namespace kube-system: objects of this custom resource must stay in its namespace team-a';
      const failing = await fake(t, { FAKE_HELM_MODE: 'fail', FAKE_HELM_STDERR: join(FIXTURES, 'stderr/uninstall-not-found.txt') }, { gate: recordingGate(() => [refusal]).gate });
      await assert.rejects(failing.client.uninstall({ release: 'web', namespace: 'team-a', timeoutMs: 10_000, owner: OWNER }), (err: unknown) => {
        assert.ok(err instanceof HelmError);
        assert.equal(err.kind, 'refused');
        assert.equal(err.message, `chartpilot's API gate stopped helm uninstall: ${refusal}`);
        return true;
      });
      const succeeding = await fake(t, {}, { gate: recordingGate((a) => (a === 'rollback' ? [refusal, 'and another'] : [])).gate });
      await assert.rejects(succeeding.client.rollback({ release: 'web', namespace: 'team-a', timeoutMs: 10_000, owner: OWNER }), { kind: 'refused', message: `chartpilot's API gate stopped helm rollback: ${refusal} (and 1 more refusal)` });
    });

    it('a confined client runs no helm for a request that does not say whom it acts for', async (t) => {
      const f = await fake(t, {}, { gate: recordingGate().gate });
      await assert.rejects(f.client.status({ release: 'web', namespace: 'team-a', timeoutMs: 10_000 }), /need the owner they act for/);
      await assert.rejects(f.client.upgradeInstall({ ...REQ, owner: { ...OWNER, uid: '' } }), TypeError);
      assert.deepEqual(await f.calls(), []);
    });
  });
});
