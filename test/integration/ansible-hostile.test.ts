// A CR author attacking the Ansible engine through what they write (spec values and keys), run
// by the real ansible-runner as the operator runs it (extraVarsFor → runAnsible): nothing they
// write is ever evaluated as a template or read as an Ansible setting, whatever the entry's
// markUnsafe, and the run sees none of the operator's own environment. And a run's API proxy
// against the real API server, with request paths as a hostile client writes them (dot segments,
// encoded slashes, subresources, collections, smuggling): nothing lands outside the namespace.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { parse } from 'yaml';
import { extraVarsFor } from '../../src/engines/ansible/extra-vars.js';
import { createApiProxy, type SessionAccess } from '../../src/apiproxy/index.js';
import { runAnsible, type AnsibleRuntimePaths, type RunnerEvent, type RunRequest } from '../../src/engines/ansible/runner.js';
import { createKubeClient, loadKubeConfig } from '../../src/kube/rest.js';
import { ansibleRuntime } from './ansible-run.js';
import { getJson, newNamespace, testCluster } from './harness.js';

const rt = await ansibleRuntime();
const runtime: AnsibleRuntimePaths = { ansibleRunner: rt.ansibleRunner, python: rt.python, collectionsPath: rt.collectionsPath };
const work = await mkdtemp(join(tmpdir(), 'chartpilot-hostile-test-'));
after(async () => {
  await rm(work, { recursive: true, force: true });
});

const gvk = { group: 'hostile.chartpilot.dev', version: 'v1', kind: 'Victim' };

/** A role (the operator author's, trusted) in its own roles directory; returns its path. */
async function role(name: string, tasks: string): Promise<string> {
  const dir = join(work, 'roles', name);
  await mkdir(join(dir, 'tasks'), { recursive: true });
  await writeFile(join(dir, 'tasks', 'main.yml'), tasks);
  return dir;
}

function request(roleDir: string, extraVars: Record<string, unknown>, onEvent: (e: RunnerEvent) => void): RunRequest {
  return {
    runtime,
    runnable: { role: roleDir },
    extraVars,
    kubeconfig: 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n',
    verbosity: 0,
    extraArgs: [],
    rolesPath: [],
    collectionsPath: [],
    artifactsDir: join(work, 'artifacts', randomBytes(4).toString('hex')),
    maxArtifacts: 2,
    timeoutMs: 120_000,
    secrets: [],
    runBase: join(work, 'runs'),
    onEvent,
  };
}

/** The `msg` of every debug task that ran, in order. */
function debugMessages(events: readonly RunnerEvent[]): string[] {
  return events
    .filter((e) => e.event === 'runner_on_ok' && e.event_data?.['task_action'] === 'debug')
    .map((e) => {
      const res = e.event_data?.['res'] as { msg?: unknown } | undefined;
      return String(res?.msg);
    });
}

describe('spec values are data, never templates (markUnsafe: false, the default)', () => {
  it('does not evaluate {{ lookup(...) }} from the spec where a role uses the value', async () => {
    const marker = join(work, `pwned-${randomBytes(4).toString('hex')}`);
    const dir = await role(
      'uses-spec',
      [
        '- debug: { msg: "name={{ greeting }}" }',
        '- debug: { msg: "nested={{ config.inner }}" }',
        '- debug: { msg: "first={{ things[0] }}" }',
        '- set_fact: { copied: "{{ greeting }}" }',
        '- debug: { msg: "copied={{ copied }}" }',
        '- debug: { msg: "object={{ _hostile_chartpilot_dev_victim.spec.greeting }}" }',
        '',
      ].join('\n'),
    );
    const touch = `{{ lookup('pipe', 'touch ${marker}') }}`;
    const cr = {
      apiVersion: 'hostile.chartpilot.dev/v1',
      kind: 'Victim',
      metadata: { name: 'v1', namespace: 'tenant' },
      spec: { greeting: touch, config: { inner: "{{ lookup('env', 'HOME') }}" }, things: ['{{ 7 * 7 }}'] },
    };
    const events: RunnerEvent[] = [];
    const outcome = await runAnsible(request(dir, extraVarsFor(cr, { snakeCaseParameters: true, markUnsafe: false, vars: {} }, gvk), (e) => events.push(e)));
    assert.equal(outcome.result, 'successful', outcome.message);
    assert.equal(existsSync(marker), false, 'a command from the spec ran in the operator');
    assert.deepEqual(debugMessages(events), [
      `name=${touch}`,
      `nested={{ lookup('env', 'HOME') }}`,
      'first={{ 7 * 7 }}',
      `copied=${touch}`,
      `object=${touch}`,
    ]);
  });

  it('does not let a spec key set an Ansible connection or become variable (ansible_*)', async () => {
    const marker = join(work, `pwned-${randomBytes(4).toString('hex')}`);
    const dir = await role('plain', '- command: "true"\n- debug: { msg: "done" }\n');
    const cr = {
      apiVersion: 'hostile.chartpilot.dev/v1',
      kind: 'Victim',
      metadata: { name: 'v2', namespace: 'tenant' },
      // Extra vars have the highest precedence: these would replace the inventory's connection.
      spec: { ansibleBecome: true, ansibleBecomeUser: 'nobody', ansibleBecomeMethod: 'su', ansibleBecomeExe: `touch ${marker}; su` },
    };
    for (const snakeCaseParameters of [true, false]) {
      const spec = snakeCaseParameters
        ? cr.spec
        : { ansible_become: true, ansible_become_user: 'nobody', ansible_become_method: 'su', ansible_become_exe: `touch ${marker}; su` };
      const events: RunnerEvent[] = [];
      const outcome = await runAnsible(request(dir, extraVarsFor({ ...cr, spec }, { snakeCaseParameters, markUnsafe: true, vars: {} }, gvk), (e) => events.push(e)));
      assert.equal(existsSync(marker), false, `a command from the spec ran in the operator (snakeCaseParameters: ${String(snakeCaseParameters)})`);
      assert.equal(outcome.result, 'successful', outcome.message);
      assert.deepEqual(debugMessages(events), ['done']);
    }
  });
});

describe("Ansible's special variables from the spec", () => {
  it('cannot replace omit, so a default(omit) in the role still omits', async () => {
    const dir = await role('omit', '- debug: { msg: "{{ not_set | default(omit) }}" }\n- debug: { msg: "host={{ inventory_hostname }}" }\n');
    const cr = { apiVersion: 'hostile.chartpilot.dev/v1', kind: 'Victim', metadata: { name: 'v5', namespace: 'tenant' }, spec: { omit: 'https://elsewhere.example', inventoryHostname: 'elsewhere' } };
    const events: RunnerEvent[] = [];
    const outcome = await runAnsible(request(dir, extraVarsFor(cr, { snakeCaseParameters: true, markUnsafe: false, vars: {} }, gvk), (e) => events.push(e)));
    assert.equal(outcome.result, 'successful', outcome.message);
    // debug without msg says its default.
    assert.deepEqual(debugMessages(events), ['Hello world!', 'host=localhost']);
  });
});

describe('spec values in kubernetes.core.k8s (definition and template) against the API server', () => {
  it('writes the text as given and runs nothing', async (t) => {
    const c = await testCluster();
    const ns = await newNamespace(t, 'hostile-k8s');
    const marker = join(work, `pwned-${randomBytes(4).toString('hex')}`);
    const dir = await role(
      'k8s-spec',
      [
        '- kubernetes.core.k8s:',
        '    state: present',
        '    definition:',
        '      apiVersion: v1',
        '      kind: ConfigMap',
        '      metadata: { name: from-definition, namespace: "{{ ansible_operator_meta.namespace }}" }',
        '      data: { greeting: "{{ greeting }}" }',
        '- kubernetes.core.k8s:',
        '    state: present',
        '    template: cm.yaml.j2',
        '',
      ].join('\n'),
    );
    await mkdir(join(dir, 'templates'), { recursive: true });
    await writeFile(
      join(dir, 'templates', 'cm.yaml.j2'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-template\n  namespace: {{ ansible_operator_meta.namespace }}\ndata:\n  greeting: {{ greeting | to_json }}\n',
    );
    const greeting = `{{ lookup('pipe', 'touch ${marker}') }}`;
    const cr = { apiVersion: 'hostile.chartpilot.dev/v1', kind: 'Victim', metadata: { name: 'v4', namespace: ns }, spec: { greeting } };
    const req = request(dir, extraVarsFor(cr, { snakeCaseParameters: true, markUnsafe: false, vars: {} }, gvk), () => undefined);
    const outcome = await runAnsible({ ...req, kubeconfig: await readFile(c.kubeconfig, 'utf8') });
    assert.equal(outcome.result, 'successful', outcome.message);
    assert.equal(existsSync(marker), false, 'a command from the spec ran in the operator');
    for (const name of ['from-definition', 'from-template']) {
      const cm = await getJson<{ data: Record<string, string> }>(c, ['get', 'configmap', name, '-n', ns, '-o', 'json']);
      assert.deepEqual(cm.data, { greeting }, name);
    }
  });
});

describe("the run's environment", () => {
  it("holds none of the operator's credentials or settings, only the run's own", async () => {
    const dir = await role(
      'env',
      ['KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT', 'CHARTPILOT_SEAL_KEY', 'CHARTPILOT_HOSTILE_PROBE', 'HELM_KUBETOKEN', 'AWS_SECRET_ACCESS_KEY', 'RELATED_IMAGE_HOSTILE', 'K8S_AUTH_KUBECONFIG']
        .map((v) => `- debug: { msg: "${v}={{ lookup('env', '${v}') }}" }`)
        .join('\n') + '\n',
    );
    const planted: Record<string, string> = {
      KUBERNETES_SERVICE_HOST: '10.0.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      CHARTPILOT_SEAL_KEY: 'seal-key-value',
      CHARTPILOT_HOSTILE_PROBE: 'probe',
      HELM_KUBETOKEN: 'helm-token',
      AWS_SECRET_ACCESS_KEY: 'aws-secret',
      RELATED_IMAGE_HOSTILE: 'registry.example/db:1',
    };
    const before = Object.fromEntries(Object.keys(planted).map((k) => [k, process.env[k]]));
    Object.assign(process.env, planted);
    const events: RunnerEvent[] = [];
    let outcome;
    try {
      outcome = await runAnsible(request(dir, { ansible_operator_meta: { name: 'v3', namespace: 'tenant' } }, (e) => events.push(e)));
    } finally {
      for (const [k, v] of Object.entries(before)) {
        if (v === undefined) Reflect.deleteProperty(process.env, k);
        else process.env[k] = v;
      }
    }
    assert.equal(outcome.result, 'successful', outcome.message);
    const seen = Object.fromEntries(debugMessages(events).map((m) => [m.slice(0, m.indexOf('=')), m.slice(m.indexOf('=') + 1)]));
    assert.deepEqual(
      { ...seen, K8S_AUTH_KUBECONFIG: seen['K8S_AUTH_KUBECONFIG']?.startsWith(join(work, 'runs')) === true ? 'the run kubeconfig' : seen['K8S_AUTH_KUBECONFIG'] },
      {
        KUBERNETES_SERVICE_HOST: '',
        KUBERNETES_SERVICE_PORT: '',
        CHARTPILOT_SEAL_KEY: '',
        CHARTPILOT_HOSTILE_PROBE: '',
        HELM_KUBETOKEN: '',
        AWS_SECRET_ACCESS_KEY: '',
        // The operator author's image references, which roles read as ansible-operator's do.
        RELATED_IMAGE_HOSTILE: 'registry.example/db:1',
        K8S_AUTH_KUBECONFIG: 'the run kubeconfig',
      },
    );
  });
});

describe("a run's API proxy, as a hostile client uses it", () => {
  /** The run's CA (the proxy's certificate) from its kubeconfig. */
  const caOf = (run: SessionAccess): string => {
    const kc = parse(run.kubeconfig) as { clusters: { cluster: { 'certificate-authority-data': string } }[] };
    return Buffer.from(kc.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString('utf8');
  };

  /** One request with its path exactly as given (node's client does not normalize it). */
  const raw = (port: number, run: SessionAccess, method: string, path: string, body?: string): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port, method, path, ca: caOf(run), headers: { authorization: `Bearer ${run.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, text });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  it('lands no write outside the namespace, whatever the path says, and serves no exec', async (t) => {
    const c = await testCluster();
    const ns = await newNamespace(t, 'hostile-proxy');
    const client = createKubeClient(loadKubeConfig({ files: [c.kubeconfig] }), { userAgent: 'chartpilot-hostile-test' });
    const proxy = createApiProxy({ client, log: pino({ level: 'silent' }), port: 0 });
    const { port } = await proxy.start();
    t.after(() => proxy.stop());
    const run = proxy.openSession({
      owner: { apiVersion: 'v1', kind: 'ConfigMap', name: 'the-cr', namespace: ns, uid: 'uid-hostile' },
      confinement: { namespace: ns, allowClusterScoped: false, allowCrossNamespace: false },
      injectOwnerRef: false,
      log: pino({ level: 'silent' }),
    });
    t.after(() => {
      run.close();
    });
    const name = `hostile-${ns}`;
    const cm = (namespace: string): string => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace } });
    const attempts: [string, string, string | undefined][] = [
      ['POST', `/api/v1/namespaces/${ns}/../kube-system/configmaps`, cm('kube-system')],
      ['POST', `/api/v1/namespaces/${ns}/%2e%2e/kube-system/configmaps`, cm('kube-system')],
      ['POST', `/api/v1/namespaces/${ns}/configmaps/%2E%2E/%2e%2E/%2e%2e/namespaces/kube-system/configmaps`, cm('kube-system')],
      ['POST', `/api/v1/namespaces/${ns}/configmaps/x%2F..%2F..%2F..%2Fnamespaces%2Fkube-system%2Fconfigmaps`, cm('kube-system')],
      ['POST', `/api/v1/namespaces/${ns}%2F..%2Fkube-system/configmaps`, cm('kube-system')],
      ['POST', `//x/api/v1/namespaces/kube-system/configmaps`, cm('kube-system')],
      ['PUT', `/api/v1/namespaces/kube-system/configmaps/${name}`, cm('kube-system')],
      ['PATCH', `/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication`, '{"metadata":{"labels":{"x":"y"}}}'],
      ['POST', `/api/v1/namespaces/kube-system/pods/any/exec?command=id&stdout=true`, undefined],
      ['POST', `/api/v1/namespaces/kube-system/pods/any/eviction`, '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"any"}}'],
      ['POST', `/api/v1/namespaces/kube-system/serviceaccounts/default/token`, '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}'],
      ['DELETE', `/api/v1/configmaps`, undefined],
      ['DELETE', `/api/v1/namespaces/kube-system/configmaps`, undefined],
      ['POST', `/api/v1/namespaces`, '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"hostile-made"}}'],
      ['PUT', `/api/v1/namespaces/${ns}/finalize`, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"${ns}"},"spec":{"finalizers":[]}}`],
      ['PATCH', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/clusterrolebindings/x`, '{}'],
    ];
    for (const [method, path, body] of attempts) {
      const r = await raw(port, run, method, path, body);
      assert.ok(r.status >= 400, `${method} ${path} answered ${String(r.status)}: ${r.text.slice(0, 300)}`);
    }
    assert.equal((await c.kubectl(['get', 'configmap', name, '-n', 'kube-system'], { allowFail: true })).exitCode, 1, 'a ConfigMap landed in kube-system');
    assert.equal((await c.kubectl(['get', 'namespace', 'hostile-made'], { allowFail: true })).exitCode, 1, 'a Namespace was made');
    assert.deepEqual(run.objects(), []);

    // exec in the run's own namespace is not a stream through the proxy: no upgrade crosses it.
    const exec = await raw(port, run, 'POST', `/api/v1/namespaces/${ns}/pods/any/exec?command=id&stdout=true`);
    assert.ok(exec.status >= 400, `exec answered ${String(exec.status)}`);
  });

  it('refuses a smuggled second request (Content-Length with Transfer-Encoding) before it reaches the API server', async (t) => {
    const c = await testCluster();
    const ns = await newNamespace(t, 'hostile-smuggle');
    const client = createKubeClient(loadKubeConfig({ files: [c.kubeconfig] }), { userAgent: 'chartpilot-hostile-test' });
    const proxy = createApiProxy({ client, log: pino({ level: 'silent' }), port: 0 });
    const { port } = await proxy.start();
    t.after(() => proxy.stop());
    const run = proxy.openSession({
      owner: { apiVersion: 'v1', kind: 'ConfigMap', name: 'the-cr', namespace: ns, uid: 'uid-hostile' },
      confinement: { namespace: ns, allowClusterScoped: false, allowCrossNamespace: false },
      injectOwnerRef: false,
      log: pino({ level: 'silent' }),
    });
    t.after(() => {
      run.close();
    });
    const name = `smuggled-${ns}`;
    const inner = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'kube-system' } });
    const smuggled = `POST /api/v1/namespaces/kube-system/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${run.token}\r\nContent-Type: application/json\r\nContent-Length: ${String(inner.length)}\r\n\r\n${inner}`;
    const body = `0\r\n\r\n${smuggled}`;
    const head =
      `POST /api/v1/namespaces/${ns}/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${run.token}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${String(body.length)}\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port, ca: caOf(run), servername: 'localhost' }, () => {
        socket.end(head + body);
      });
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => (text += d));
      socket.on('end', () => {
        resolve(text);
      });
      socket.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1\.1 400 /u);
    assert.equal((await c.kubectl(['get', 'configmap', name, '-n', 'kube-system'], { allowFail: true })).exitCode, 1, 'the smuggled request was served');
  });
});
