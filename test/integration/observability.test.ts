/**
 * Metrics, probes, leader election, graceful shutdown and start-up failures of the real binary
 * against the real control plane.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { installCrd, testKind } from './crd.js';
import { condition, crsOf, helmList } from './crs.js';
import { SAMPLE_CHART } from './fixtures.js';
import { testCluster } from './harness.js';
import { startOperator, type RunningOperator } from './operator.js';
import { logLines, logged, waitForLog } from './operator-log.js';
import { metric } from './scrape.js';
import { operatorScenario, setUp } from './scenario.js';
import { waitFor } from './wait.js';
import { freePort } from '../../devcluster/ports.js';

const PROBES = ['--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'];

/** The address a server logged once it listened (port 0 → the real port). */
async function listening(op: RunningOperator, msg: 'metrics server listening' | 'health probe server listening'): Promise<string> {
  return waitFor(msg, () => {
    const address = logLines(op).find((l) => l.msg === msg)?.address;
    return Promise.resolve(typeof address === 'string' ? address : undefined);
  });
}

async function get(address: string, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://${address}${path}`);
  return { status: res.status, body: await res.text() };
}

describe('observability', () => {
  it('serves controller-runtime, workqueue, helm and process metrics, /healthz and /readyz', async (t) => {
    const { op, cr } = await operatorScenario(t, {
      kind: 'Metrics',
      chart: SAMPLE_CHART,
      extra: { maxConcurrentReconciles: 3 },
      operator: { args: [...PROBES, '--zap-stacktrace-level', 'error'] },
    });
    const metricsAt = await listening(op, 'metrics server listening');
    const probesAt = await listening(op, 'health probe server listening');
    assert.match(metricsAt, /^127\.0\.0\.1:\d+$/);

    assert.ok(
      logLines(op).some((l) => l.msg?.includes('no effect') === true && JSON.stringify(l.flags) === '["--zap-stacktrace-level"]'),
      'ignored operator-sdk flags are named once at start',
    );

    await waitFor('/readyz 200 once informers synced', async () => (await get(probesAt, '/readyz')).status === 200);
    assert.deepEqual(await get(probesAt, '/healthz'), { status: 200, body: 'ok\n' });

    await cr.apply('scraped', { message: 'hi' });
    await cr.deployed('scraped');

    const controller = { controller: 'appmetrics' };
    const text = await waitFor('reconcile counted', async () => {
      const r = await get(metricsAt, '/metrics');
      return (metric(r.body, 'controller_runtime_reconcile_total', controller) ?? 0) > 0 ? r.body : undefined;
    });
    for (const result of ['success', 'error', 'requeue', 'requeue_after']) {
      assert.notEqual(metric(text, 'controller_runtime_reconcile_total', { ...controller, result }), undefined, `result=${result} series exists`);
    }
    assert.equal(metric(text, 'controller_runtime_reconcile_errors_total', controller), 0);
    assert.ok((metric(text, 'controller_runtime_reconcile_time_seconds_count', controller) ?? 0) >= 1);
    assert.equal(metric(text, 'controller_runtime_max_concurrent_reconciles', controller), 3);
    assert.notEqual(metric(text, 'controller_runtime_active_workers', controller), undefined);
    assert.ok((metric(text, 'workqueue_adds_total', { name: 'appmetrics' }) ?? 0) >= 1);
    assert.notEqual(metric(text, 'workqueue_depth', { name: 'appmetrics' }), undefined);
    assert.ok((metric(text, 'workqueue_queue_duration_seconds_count', { name: 'appmetrics' }) ?? 0) >= 1);
    assert.ok((metric(text, 'workqueue_work_duration_seconds_count', { name: 'appmetrics' }) ?? 0) >= 1);
    assert.ok((metric(text, 'chartpilot_helm_calls_total', { action: 'upgrade', outcome: 'success' }) ?? 0) >= 1);
    assert.ok((metric(text, 'chartpilot_helm_call_duration_seconds_count', { action: 'upgrade' }) ?? 0) >= 1);
    assert.ok((metric(text, 'chartpilot_kube_requests_total', { method: 'GET', code: '200' }) ?? 0) >= 1);
    assert.ok((metric(text, 'chartpilot_kube_requests_total', { method: 'WATCH', code: '200' }) ?? 0) >= 1);
    assert.equal(metric(text, 'helm_operator_build_info'), 1);
    assert.ok((metric(text, 'process_cpu_seconds_total') ?? 0) > 0);
    assert.ok((metric(text, 'process_resident_memory_bytes') ?? 0) > 0);
    assert.notEqual(metric(text, 'nodejs_eventloop_lag_seconds'), undefined);
    assert.equal(metric(text, 'leader_election_master_status'), undefined, 'no leader election, no leader series');
    const perObject = text.split('\n').filter((l) => l.includes('scraped'));
    // operator-sdk's one per-CR series, plus #29's bounded set of per-CR insight series (no other per-object labels).
    const perCrNames = new Set(['resource_created_at_seconds', 'chartpilot_resource_condition', 'chartpilot_release_info', 'chartpilot_release_revision',
      'chartpilot_release_last_deployed_timestamp_seconds', 'chartpilot_resource_ready_transition_timestamp_seconds', 'chartpilot_drift_repairs_total']);
    const names = perObject.map((l) => l.split('{')[0] ?? '');
    assert.deepEqual(names.filter((n) => !perCrNames.has(n)), [], 'no per-object series beyond the per-CR set');
    assert.equal(names.filter((n) => n === 'resource_created_at_seconds').length, 1);
    assert.ok(names.length <= 10, `a few series per CR, got ${String(names.length)}`);
    const createdAt = (await cr.get('scraped'))?.metadata.creationTimestamp;
    const crSeries = { name: 'scraped', namespace: cr.ns, group: cr.kind.group, version: cr.kind.version, kind: cr.kind.kind };
    assert.equal(metric(text, 'resource_created_at_seconds', crSeries), Date.parse(createdAt ?? '') / 1000);
    await cr.delete('scraped');
    await cr.gone('scraped');
    await waitFor('the deleted CR\'s series to go', async () => !(await get(metricsAt, '/metrics')).body.split('\n').some((l) => l.includes('scraped')));

    assert.equal(await op.stop('SIGTERM'), 0);
    await assert.rejects(fetch(`http://${metricsAt}/metrics`), 'servers are closed on exit');
  });

  it('lets exactly one of two replicas act, and the standby take over after the leader is killed', async (t) => {
    const s = await setUp(t, { kind: 'Leader', chart: SAMPLE_CHART });
    const { cluster, ns } = s;
    const leaseId = `chartpilot-test-${ns}`;
    const replica = { args: [...PROBES, '--leader-elect', '--leader-election-namespace', ns, '--leader-election-id', leaseId], noWait: true };
    const a = await s.start(replica);
    await waitForLog(a, 'became leader');
    const b = await s.start(replica);
    await waitForLog(b, 'another replica is the leader; standing by');

    // Both are ready: readiness does not depend on leadership.
    const probesA = await listening(a, 'health probe server listening');
    const probesB = await listening(b, 'health probe server listening');
    await waitFor('leader ready', async () => (await get(probesA, '/readyz')).status === 200);
    assert.equal((await get(probesB, '/readyz')).status, 200);
    const leaderSeries = { name: leaseId };
    assert.equal(metric((await get(await listening(a, 'metrics server listening'), '/metrics')).body, 'leader_election_master_status', leaderSeries), 1);
    assert.equal(metric((await get(await listening(b, 'metrics server listening'), '/metrics')).body, 'leader_election_master_status', leaderSeries), 0);

    const crs = crsOf(cluster, s.kind, ns, a);
    await crs.apply('first', {});
    await crs.deployed('first');
    assert.ok(a.helmCalls().some((c) => c.startsWith('upgrade ')), a.helmCalls().join(' | '));
    assert.deepEqual(b.helmCalls(), [], 'the standby runs no helm');
    assert.equal(logged(b, 'controller started'), false, 'the standby starts no controllers');
    const lease = JSON.parse((await cluster.kubectl(['get', 'lease', leaseId, '-n', ns, '-o', 'json'])).stdout) as {
      spec: { holderIdentity: string; leaseDurationSeconds: number };
    };
    assert.equal(lease.spec.leaseDurationSeconds, 15);
    assert.match(lease.spec.holderIdentity, /^[^_]+_[0-9a-f-]{36}$/);

    const killedAt = Date.now();
    await a.stop('SIGKILL');
    await waitForLog(b, 'became leader', 30_000);
    const tookMs = Date.now() - killedAt;
    assert.ok(tookMs > 5_000, `waited for the lease to expire (${tookMs} ms)`);
    assert.ok(tookMs < 22_000, `took over within the lease duration plus a retry (${tookMs} ms)`);

    await crs.apply('second', {});
    await crsOf(cluster, s.kind, ns, b).deployed('second');
    assert.ok(b.helmCalls().some((c) => c.startsWith('upgrade ') && c.includes(' second ')), b.helmCalls().join(' | '));
  });

  it('hands the lease over at once on SIGTERM', async (t) => {
    const s = await setUp(t, { kind: 'Handover', chart: SAMPLE_CHART });
    const replica = { args: ['--leader-elect', '--leader-election-namespace', s.ns, '--leader-election-id', 'handover'], noWait: true };
    const a = await s.start(replica);
    await waitForLog(a, 'became leader');
    const b = await s.start(replica);
    await waitForLog(b, 'another replica is the leader; standing by');
    const stoppedAt = Date.now();
    assert.equal(await a.stop('SIGTERM'), 0);
    assert.ok(logged(a, 'released the leader lease'));
    await waitForLog(b, 'became leader', 10_000);
    assert.ok(Date.now() - stoppedAt < 10_000, 'a released lease is taken at the next retry, not after expiry');
  });

  it('exits non-zero when another identity takes its lease, so the pod restarts as a standby', async (t) => {
    const s = await setUp(t, { kind: 'Usurped', chart: SAMPLE_CHART });
    const { cluster, ns } = s;
    const op = await s.start({ args: [...PROBES, '--leader-elect', '--leader-election-namespace', ns, '--leader-election-id', 'usurped'], noWait: true });
    await waitForLog(op, 'controller started');
    await cluster.kubectl(['patch', 'lease', 'usurped', '-n', ns, '--type=merge', '-p', JSON.stringify({ spec: { holderIdentity: 'intruder' } })]);
    const patchedAt = Date.now();
    assert.equal(await op.exitCode(20_000), 1);
    assert.ok(Date.now() - patchedAt < 15_000, 'stopped within the renew deadline, before the intruder could count on the lease');
    assert.ok(logged(op, 'leader election lost: exiting without waiting for running work'));
    const holder = await cluster.kubectl(['get', 'lease', 'usurped', '-n', ns, '-o', 'jsonpath={.spec.holderIdentity}']);
    assert.equal(holder.stdout, 'intruder', 'a replica that lost never writes the lease again');
  });

  it('finishes a running install on SIGTERM, exits 0 and leaves no pending release', async (t) => {
    const s = await setUp(t, { kind: 'Drain', chart: SAMPLE_CHART });
    const { cluster, ns } = s;
    // A helm that takes a few seconds to start an upgrade: SIGTERM lands while the call runs.
    const dir = mkdtempSync(join(tmpdir(), 'chartpilot-drain-'));
    t.after(() => { rmSync(dir, { recursive: true, force: true }); });
    const marker = join(dir, 'upgrade-started');
    const slowHelm = join(dir, 'slow-helm.sh');
    writeFileSync(slowHelm, `#!/bin/sh\nif [ "$1" = upgrade ]; then echo x >> '${marker}'; sleep 4; fi\nexec '${cluster.helmBin}' "$@"\n`);
    chmodSync(slowHelm, 0o755);
    const op = await s.start({ env: { HELM_BIN: slowHelm } });
    const cr = crsOf(cluster, s.kind, ns, op);

    await cr.apply('midway', {});
    await waitFor('helm upgrade running', () => Promise.resolve(existsSync(marker)), { intervalMs: 50 });
    const signalledAt = Date.now();
    // Not op.stop(): execa follows its SIGTERM with SIGKILL after 5 s, and draining may take longer.
    process.kill(op.process.pid ?? 0, 'SIGTERM');
    assert.equal(await op.exitCode(30_000), 0);
    assert.ok(Date.now() - signalledAt >= 3_000, 'waited for the running helm call');
    assert.equal(readFileSync(marker, 'utf8'), 'x\n', 'no new helm call started after SIGTERM');

    const releases = await helmList(cluster, ns);
    assert.deepEqual(
      releases.map((r) => [r.name, r.status]),
      [['midway', 'deployed']],
    );
    const midway = await cr.until('midway', 'Deployed', (c) => condition(c, 'Deployed') !== undefined, 5_000);
    assert.equal(condition(midway, 'Deployed')?.status, 'True', 'status was written before exiting');
    assert.ok(logged(op, 'stopped'));
  });

  it('exits 3 within seconds, naming the server, when the API server is unreachable', async (t) => {
    const cluster = await testCluster();
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'chartpilot-unreachable-'));
    t.after(() => { rmSync(dir, { recursive: true, force: true }); });
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'gone', cluster: { server: `https://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'u', user: { token: 'x' } }],
        contexts: [{ name: 'c', context: { cluster: 'gone', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    const startedAt = Date.now();
    const op = await startOperator(t, cluster, {
      namespaces: [],
      watches: [{ kind: testKind('Unreachable'), chart: SAMPLE_CHART }],
      args: PROBES,
      env: { KUBECONFIG: kubeconfig },
      noWait: true,
    });
    // A bound that tells a prompt exit from a hang, with room for a loaded CI machine.
    assert.equal(await op.exitCode(40_000), 3);
    assert.ok(Date.now() - startedAt < 40_000);
    assert.match(op.logs(), new RegExp(`error: cannot reach the Kubernetes API server at https://127\\.0\\.0\\.1:${port}`));
  });

  it('refuses bad metrics flags, an unreadable certificate, a missing lease or operator namespace and a taken port, with exit codes 2 and 3', async (t) => {
    const cluster = await testCluster();
    const kind = testKind('Refuse');
    await installCrd(cluster, kind);
    const watches = [{ kind, chart: SAMPLE_CHART }];
    const rbacOnly = await startOperator(t, cluster, { namespaces: [], watches, args: ['--metrics-require-rbac'], noWait: true });
    assert.equal(await rbacOnly.exitCode(40_000), 2);
    assert.match(rbacOnly.logs(), /^error: --metrics-require-rbac needs --metrics-secure: .*; add --metrics-secure$/m);

    const certDir = mkdtempSync(join(tmpdir(), 'chartpilot-nocert-'));
    t.after(() => { rmSync(certDir, { recursive: true, force: true }); });
    const noCert = await startOperator(t, cluster, {
      namespaces: [],
      watches,
      args: ['--metrics-secure', '--metrics-bind-address=127.0.0.1:0', `--metrics-cert-path=${certDir}`],
      noWait: true,
    });
    assert.equal(await noCert.exitCode(40_000), 3);
    assert.match(noCert.logs(), new RegExp(`^error: cannot read the metrics TLS certificate ${certDir}/tls\.crt: no such file; mount it there or leave out --metrics-cert-path`, 'm'));

    const noNamespace = await startOperator(t, cluster, { namespaces: [], watches, args: ['--leader-elect'], env: { POD_NAMESPACE: '' }, noWait: true });
    assert.equal(await noNamespace.exitCode(40_000), 2);
    assert.match(noNamespace.logs(), /--leader-elect needs a namespace.*set --leader-election-namespace/);

    // `chartpilot run` on a laptop, as it comes: the seal key's namespace is never guessed.
    const noOperatorNamespace = await startOperator(t, cluster, { namespaces: [], watches, env: { POD_NAMESPACE: '' }, noWait: true });
    assert.equal(await noOperatorNamespace.exitCode(40_000), 3);
    assert.match(noOperatorNamespace.logs(), /^error: the operator's namespace \(where its seal key Secret is kept\) is unknown: .*set POD_NAMESPACE \(or --leader-election-namespace\)/m);

    const missing = await startOperator(t, cluster, {
      namespaces: [],
      watches,
      args: ['--leader-elect', '--leader-election-namespace', 'no-such-namespace-here'],
      noWait: true,
    });
    assert.equal(await missing.exitCode(40_000), 3);
    assert.match(missing.logs(), /cannot create the leader election Lease no-such-namespace-here\/chartpilot-[0-9a-f]{10}: .*not found/);

    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    t.after(() => taken.close());
    const port = (taken.address() as AddressInfo).port;
    const busy = await startOperator(t, cluster, {
      namespaces: [],
      watches,
      args: ['--health-probe-bind-address', `127.0.0.1:${port}`],
      noWait: true,
    });
    assert.equal(await busy.exitCode(40_000), 3);
    assert.match(busy.logs(), new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port} for the health probe server: the address is already in use`));

    const busySecure = await startOperator(t, cluster, { namespaces: [], watches, args: ['--metrics-secure', '--metrics-bind-address', `127.0.0.1:${port}`], noWait: true });
    assert.equal(await busySecure.exitCode(40_000), 3);
    assert.match(busySecure.logs(), new RegExp(`^error: cannot listen on 127\\.0\\.0\\.1:${port} for the metrics server: the address is already in use; choose another address`, 'm'));
  });
});
