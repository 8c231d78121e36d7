/**
 * The Ansible runtime and our operator_sdk.util collection, run for real: ansible-runner from the
 * runtime devcluster/ansible-runtime.sh builds, playbooks calling k8s_status, k8s_event and
 * requeue_after against the test cluster (through K8S_AUTH_KUBECONFIG, as a run of the operator
 * reaches its proxy), and osdk_metric against a small HTTP listener standing in for the
 * operator's :5050 endpoint.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { execa } from 'execa';
import { installCrd, resourceOf, testKind } from './crd.js';
import { ansibleRuntime, runAnsible, taskResult } from './ansible-run.js';
import { getJson, newNamespace, testCluster } from './harness.js';

const cluster = await testCluster();
const work = mkdtempSync(join(tmpdir(), 'chartpilot-ansible-runtime-'));
after(() => { rmSync(work, { recursive: true, force: true }); });
const kind = testKind('AnsibleRuntime');

interface Condition { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }
interface Cr { metadata: { uid: string }; status?: { phase?: string; items?: string[]; conditions?: Condition[] } }
interface Event { count: number; reason: string; message: string; type: string; involvedObject: { uid?: string; kind: string; name: string }; source?: { component?: string } }

const STATUS_PLAYBOOK = `
- hosts: localhost
  gather_facts: false
  tasks:
    - name: set the status
      operator_sdk.util.k8s_status:
        api_version: "{{ api_version }}"
        kind: "{{ kind }}"
        name: "{{ name }}"
        namespace: "{{ namespace }}"
        status:
          phase: Done
          items: [a, b]
        conditions:
          - type: Converged
            status: "{{ converged }}"
            reason: RoleRan
            message: the role ran
            lastTransitionTime: "{{ ltt | default(omit) }}"
    - name: record an event
      operator_sdk.util.k8s_event:
        name: "{{ name }}-ran"
        namespace: "{{ namespace }}"
        reason: RoleRan
        message: the role ran
        type: Normal
        source:
          component: chartpilot-test
        involvedObject:
          apiVersion: "{{ api_version }}"
          kind: "{{ kind }}"
          name: "{{ name }}"
          namespace: "{{ namespace }}"
    - name: ask for a requeue
      operator_sdk.util.requeue_after:
        time: 1m30s
`;

describe('the Ansible runtime', () => {
  before(async () => {
    await ansibleRuntime();
    await installCrd(cluster, kind);
  });

  it('has the pinned versions, kubernetes.core and operator_sdk.util, and ansible-doc reads our modules', async (t) => {
    const rt = await ansibleRuntime();
    t.diagnostic(`${rt.dir} (${rt.source}): ${JSON.stringify(rt.versions)}`);
    assert.equal(rt.versions.ansibleCore, '2.19.14');
    assert.equal(rt.versions.ansibleRunner, '2.4.3');
    assert.equal(rt.versions.kubernetes, '35.0.0');
    assert.equal(rt.versions.collections['kubernetes.core'], '6.2.0');
    assert.equal(rt.versions.collections['operator_sdk.util'], '0.5.0');
    assert.equal((await execa(rt.ansibleRunner, ['--version'])).stdout.trim(), '2.4.3');
    assert.equal((await execa(rt.python, ['-c', 'import kubernetes, jsonpatch; print(kubernetes.__version__)'])).stdout.trim(), '35.0.0');
    const env = { ANSIBLE_COLLECTIONS_PATH: rt.collectionsPath.join(':'), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH: 'false' };
    const doc = await execa(join(rt.binDir, 'ansible-doc'), ['--json', 'operator_sdk.util.k8s_status', 'operator_sdk.util.osdk_metric', 'kubernetes.core.k8s'], { env });
    const docs = JSON.parse(doc.stdout) as Record<string, { doc: { options: Record<string, unknown> } }>;
    for (const option of ['api_version', 'kind', 'name', 'namespace', 'status', 'conditions', 'replace', 'replace_lists', 'kubeconfig']) {
      assert.ok(option in (docs['operator_sdk.util.k8s_status']?.doc.options ?? {}), `k8s_status documents ${option}`);
    }
    for (const option of ['name', 'description', 'address', 'counter', 'gauge', 'histogram', 'summary']) {
      assert.ok(option in (docs['operator_sdk.util.osdk_metric']?.doc.options ?? {}), `osdk_metric documents ${option}`);
    }
    assert.ok('resource_definition' in (docs['kubernetes.core.k8s']?.doc.options ?? {}));
  });

  it('k8s_status merges status and conditions, k8s_event counts repeats, requeue_after reports its period in the runner event', async (t) => {
    const ns = await newNamespace(t, 'ansible-rt');
    const name = 'cr1';
    await cluster.kubectl(['apply', '-n', ns, '-f', '-'], {
      input: JSON.stringify({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name }, spec: { size: 1 } }),
    });
    // A status of its own the role does not mention: merged into, never dropped.
    await cluster.kubectl(['patch', resourceOf(kind), name, '-n', ns, '--subresource=status', '--type=merge', '-p', '{"status":{"observedBy":"test"}}']);
    const vars = { api_version: `${kind.group}/${kind.version}`, kind: kind.kind, name, namespace: ns };
    const run = (ident: string, extra: Record<string, unknown>) => runAnsible({
      dir: join(work, ns), project: { 'main.yml': STATUS_PLAYBOOK }, playbook: 'main.yml', ident,
      extravars: { ...vars, ...extra }, kubeconfig: cluster.kubeconfig,
    });
    const cr = (): Promise<Cr & { status: { observedBy?: string } }> => getJson(cluster, ['get', resourceOf(kind), name, '-n', ns]);

    // 1: status and a condition with the role's own lastTransitionTime.
    const first = await run('first', { converged: 'True', ltt: '2020-01-01T00:00:00Z' });
    assert.equal(first.exitCode, 0, first.output);
    assert.equal(taskResult(first, 'set the status').res['changed'], true);
    let got = await cr();
    assert.equal(got.status.phase, 'Done');
    assert.deepEqual(got.status.items, ['a', 'b']);
    assert.equal(got.status.observedBy, 'test');
    assert.deepEqual(got.status.conditions, [{ type: 'Converged', status: 'True', reason: 'RoleRan', message: 'the role ran', lastTransitionTime: '2020-01-01T00:00:00Z' }]);
    const events = async (): Promise<Event[]> =>
      (await getJson<{ items: Event[] }>(cluster, ['get', 'events', '-n', ns, '--field-selector', `metadata.name=${name}-ran`])).items;
    let [event] = await events();
    assert.ok(event !== undefined, 'the event exists');
    assert.equal(event.count, 1);
    assert.equal(event.reason, 'RoleRan');
    assert.equal(event.type, 'Normal');
    assert.equal(event.source?.component, 'chartpilot-test');
    assert.equal(event.involvedObject.uid, got.metadata.uid, 'the event points at the CR by uid');
    // The operator reads the period from this event: runner_on_ok of the requeue_after task.
    const requeue = first.events.find((e) => e.event === 'runner_on_ok' && e.event_data?.task_action === 'operator_sdk.util.requeue_after');
    assert.equal(requeue?.event_data?.res?.['period'], '1m30s');
    assert.equal(requeue.event_data.res['period_seconds'], 90);

    // 2: the same status without a lastTransitionTime: nothing to write, the old time stays.
    const second = await run('second', { converged: 'True' });
    assert.equal(second.exitCode, 0, second.output);
    assert.equal(taskResult(second, 'set the status').res['changed'], false, 'an unchanged status is not written');
    got = await cr();
    assert.equal(got.status.conditions?.[0]?.lastTransitionTime, '2020-01-01T00:00:00Z');
    [event] = await events();
    assert.equal(event?.count, 2, 'a repeat of the event counts up');

    // 3: the condition's status changes: a new lastTransitionTime, of now.
    const before3 = Date.now();
    const third = await run('third', { converged: 'False' });
    assert.equal(third.exitCode, 0, third.output);
    got = await cr();
    const condition = got.status.conditions?.[0];
    assert.equal(condition?.status, 'False');
    const ltt = Date.parse(condition.lastTransitionTime ?? '');
    assert.ok(ltt >= Math.floor(before3 / 1000) * 1000 && ltt <= Date.now(), `lastTransitionTime ${String(condition.lastTransitionTime)} is the time of the change`);
    assert.equal(got.status.conditions?.length, 1, 'merged by type, not appended');
  });

  it('k8s_status: a list counts as unchanged when it holds the given items, unless replace_lists; replace puts the whole status', async (t) => {
    const ns = await newNamespace(t, 'ansible-rt-lists');
    const name = 'cr2';
    await cluster.kubectl(['apply', '-n', ns, '-f', '-'], {
      input: JSON.stringify({ apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name }, spec: {} }),
    });
    await cluster.kubectl(['patch', resourceOf(kind), name, '-n', ns, '--subresource=status', '--type=merge', '-p', '{"status":{"items":["a","b"],"observedBy":"test"}}']);
    const r = await runAnsible({
      dir: join(work, ns), playbook: 'main.yml', ident: 'lists', kubeconfig: cluster.kubeconfig,
      extravars: { api_version: `${kind.group}/${kind.version}`, kind: kind.kind, name, namespace: ns },
      project: {
        'main.yml': `
- hosts: localhost
  gather_facts: false
  module_defaults:
    operator_sdk.util.k8s_status: {api_version: "{{ api_version }}", kind: "{{ kind }}", name: "{{ name }}", namespace: "{{ namespace }}"}
  tasks:
    - name: a subset
      operator_sdk.util.k8s_status:
        status: {items: [a]}
    - name: a subset, lists replaced
      operator_sdk.util.k8s_status:
        status: {items: [a]}
        replace_lists: true
    - name: the whole status
      operator_sdk.util.k8s_status:
        status: {phase: Replaced}
        force: true
`,
      },
    });
    assert.equal(r.exitCode, 0, r.output);
    assert.equal(taskResult(r, 'a subset').res['changed'], false);
    assert.equal(taskResult(r, 'a subset, lists replaced').res['changed'], true);
    assert.equal(taskResult(r, 'the whole status').res['changed'], true);
    const got = await getJson<{ status?: Record<string, unknown> }>(cluster, ['get', resourceOf(kind), name, '-n', ns]);
    assert.deepEqual(got.status, { phase: 'Replaced' }, 'replace (alias force) drops what it does not name');
  });

  it('k8s_status fails clearly on an object that does not exist, and requeue_after on a bad period', async (t) => {
    const ns = await newNamespace(t, 'ansible-rt-bad');
    const r = await runAnsible({
      dir: join(work, ns), playbook: 'main.yml', ident: 'bad', kubeconfig: cluster.kubeconfig,
      project: {
        'main.yml': `
- hosts: localhost
  gather_facts: false
  tasks:
    - name: status of nothing
      operator_sdk.util.k8s_status:
        api_version: ${kind.group}/${kind.version}
        kind: ${kind.kind}
        name: missing
        namespace: ${ns}
        status: {phase: Done}
      ignore_errors: true
    - name: bad period
      operator_sdk.util.requeue_after:
        time: soon
      ignore_errors: true
`,
      },
    });
    assert.equal(r.exitCode, 0, r.output);
    const missing = taskResult(r, 'status of nothing');
    assert.equal(missing.event, 'runner_on_failed');
    assert.match(String(missing.res['msg']), /^Could not read AppAnsibleRuntime missing: Not Found/);
    const bad = taskResult(r, 'bad period');
    assert.equal(bad.event, 'runner_on_failed');
    assert.match(String(bad.res['msg']), /time 'soon' is not a duration like 30s, 5m or 1h30m/);
  });

  it('osdk_metric posts the documented JSON body to the metrics endpoint and fails with its answer', async (t) => {
    const bodies: { url: string | undefined; type: string | undefined; body: unknown }[] = [];
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let data = '';
      req.on('data', (c: Buffer) => { data += c.toString(); });
      req.on('end', () => {
        bodies.push({ url: req.url, type: req.headers['content-type'], body: JSON.parse(data) as unknown });
        if (req.url === '/refuse') {
          res.writeHead(400).end('cannot change metric type of backups_total, which is a counter');
          return;
        }
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => { server.close(); });
    const address = server.address();
    assert.ok(address !== null && typeof address !== 'string');
    const url = `http://127.0.0.1:${String(address.port)}`;
    const r = await runAnsible({
      dir: join(work, 'metrics'), playbook: 'main.yml', ident: 'metrics',
      project: {
        'main.yml': `
- hosts: localhost
  gather_facts: false
  tasks:
    - name: count
      operator_sdk.util.osdk_metric:
        address: ${url}/metrics
        name: backups_total
        description: Backups taken
        counter:
          increment: true
    - name: gauge
      operator_sdk.util.osdk_metric:
        address: ${url}/metrics
        name: backup_size_bytes
        description: Size of the last backup
        gauge:
          set: "{{ 2048 * 2 }}"
    - name: observe
      operator_sdk.util.osdk_metric:
        address: ${url}/metrics
        name: backup_seconds
        description: How long backups take
        histogram:
          observe: 1.5
    - name: refused
      operator_sdk.util.osdk_metric:
        address: ${url}/refuse
        name: backups_total
        description: Backups taken
        gauge:
          increment: true
      ignore_errors: true
    - name: two kinds at once
      operator_sdk.util.osdk_metric:
        address: ${url}/metrics
        name: x
        description: x
        counter: {increment: true}
        gauge: {increment: true}
      ignore_errors: true
`,
      },
    });
    assert.equal(r.exitCode, 0, r.output);
    assert.deepEqual(bodies, [
      { url: '/metrics', type: 'application/json', body: { name: 'backups_total', description: 'Backups taken', counter: { increment: true } } },
      { url: '/metrics', type: 'application/json', body: { name: 'backup_size_bytes', description: 'Size of the last backup', gauge: { set: 4096 } } },
      { url: '/metrics', type: 'application/json', body: { name: 'backup_seconds', description: 'How long backups take', histogram: { observe: 1.5 } } },
      { url: '/refuse', type: 'application/json', body: { name: 'backups_total', description: 'Backups taken', gauge: { increment: true } } },
    ], 'the module refuses two metric kinds at once itself, without a request');
    assert.equal(taskResult(r, 'count').res['changed'], true);
    const refused = taskResult(r, 'refused');
    assert.equal(refused.event, 'runner_on_failed');
    assert.equal(refused.res['msg'], 'cannot change metric type of backups_total, which is a counter');
    assert.equal(refused.res['status_code'], 400);
    const both = taskResult(r, 'two kinds at once');
    assert.equal(both.event, 'runner_on_failed');
    assert.match(String(both.res['msg']), /mutually exclusive: counter\|gauge\|histogram\|summary/);
  });
});
