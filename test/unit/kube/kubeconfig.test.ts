// Loading kubeconfig files and the in-cluster service account, and the credentials they yield.
// (Every integration test also connects to the real API server through loadKubeConfig.)
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import { kubeConnection, loadKubeConfig } from '../../../src/kube/kubeconfig.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'chartpilot-kubeconfig-'));
  t.after(() => { rmSync(dir, { recursive: true, force: true }); });
  return dir;
}

function write(dir: string, name: string, doc: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, typeof doc === 'string' ? doc : stringify(doc));
  return file;
}

const config = (o: { current?: string; clusters?: unknown[]; users?: unknown[]; contexts?: unknown[] }): unknown => ({
  apiVersion: 'v1',
  kind: 'Config',
  ...(o.current === undefined ? {} : { 'current-context': o.current }),
  clusters: o.clusters ?? [],
  users: o.users ?? [],
  contexts: o.contexts ?? [],
});

describe('kubeconfig', () => {
  it('KUBECONFIG files merge like kubectl: first file wins per name and for current-context', async (t) => {
    const dir = tempDir(t);
    const a = write(dir, 'a.yaml', config({
      current: 'ctx-a',
      clusters: [{ name: 'shared', cluster: { server: 'https://first.example:6443/' } }],
      users: [{ name: 'u', user: { token: 'token-a' } }],
      contexts: [{ name: 'ctx-a', context: { cluster: 'shared', user: 'u', namespace: 'team-a' } }],
    }));
    const b = write(dir, 'b.yaml', config({
      current: 'ctx-b',
      clusters: [{ name: 'shared', cluster: { server: 'https://second.example:6443' } }],
      users: [{ name: 'u', user: { token: 'token-b' } }],
      contexts: [{ name: 'ctx-b', context: { cluster: 'shared', user: 'u' } }],
    }));
    const conn = loadKubeConfig({ env: { KUBECONFIG: `${a}:${b}` } });
    assert.equal(conn.server, 'https://first.example:6443', 'first definition, trailing slash dropped');
    assert.equal(conn.contextName, 'ctx-a');
    assert.equal(conn.namespace, 'team-a');
    assert.deepEqual((await conn.credentials()).headers, { Authorization: 'Bearer token-a' });
  });

  it('relative certificate paths are relative to the kubeconfig file and read for TLS', (t) => {
    const dir = tempDir(t);
    writeFileSync(join(dir, 'ca.crt'), 'CA-PEM');
    writeFileSync(join(dir, 'client.crt'), 'CERT-PEM');
    writeFileSync(join(dir, 'client.key'), 'KEY-PEM');
    const file = write(dir, 'config', config({
      current: 'x',
      clusters: [{ name: 'c', cluster: { server: 'https://k.example', 'certificate-authority': 'ca.crt', 'tls-server-name': 'kubernetes' } }],
      users: [{ name: 'u', user: { 'client-certificate': 'client.crt', 'client-key': 'client.key' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    }));
    const tls = loadKubeConfig({ files: [file] }).tls();
    assert.equal(tls.ca?.toString(), 'CA-PEM');
    assert.equal(tls.cert?.toString(), 'CERT-PEM');
    assert.equal(tls.key?.toString(), 'KEY-PEM');
    assert.equal(tls.servername, 'kubernetes');
    assert.equal(tls.rejectUnauthorized, undefined, 'verification stays on unless the kubeconfig turns it off');
  });

  it('inline data, insecure-skip-tls-verify, basic auth, token-file and impersonation', async (t) => {
    const dir = tempDir(t);
    writeFileSync(join(dir, 'token'), 'file-token');
    const file = write(dir, 'config', config({
      current: 'x',
      clusters: [{ name: 'c', cluster: { server: 'https://k.example', 'certificate-authority-data': Buffer.from('CA').toString('base64'), 'insecure-skip-tls-verify': true } }],
      users: [
        { name: 'basic', user: { username: 'ann', password: 'pw' } },
        { name: 'filetoken', user: { 'token-file': 'token', as: 'someone' } },
      ],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'basic' } }, { name: 'y', context: { cluster: 'c', user: 'filetoken' } }],
    }));
    const basic = loadKubeConfig({ files: [file] });
    assert.equal(basic.tls().ca?.toString(), 'CA');
    assert.equal(basic.tls().rejectUnauthorized, false);
    assert.deepEqual((await basic.credentials()).headers, { Authorization: `Basic ${Buffer.from('ann:pw').toString('base64')}` });

    const other = write(dir, 'other', config({ current: 'y' }));
    const tokenUser = loadKubeConfig({ files: [other, file] });
    assert.deepEqual((await tokenUser.credentials()).headers, { Authorization: 'Bearer file-token', 'Impersonate-User': 'someone' });
  });

  it('an exec credential plugin supplies the token', async (t) => {
    const dir = tempDir(t);
    const plugin = join(dir, 'cred.sh');
    writeFileSync(plugin, `#!/bin/sh
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token"}}'
`);
    chmodSync(plugin, 0o700);
    const conn = kubeConnection(
      { name: 'c', server: 'https://k.example', skipTLSVerify: false },
      { name: 'u', exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' } },
    );
    assert.deepEqual((await conn.credentials()).headers, { Authorization: 'Bearer exec-token' });
  });

  it('in a pod: the service account token, CA and namespace', async (t) => {
    const sa = tempDir(t);
    writeFileSync(join(sa, 'token'), 'sa-token');
    writeFileSync(join(sa, 'ca.crt'), 'SA-CA');
    writeFileSync(join(sa, 'namespace'), 'operators\n');
    const env = { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443', HOME: sa };
    const conn = loadKubeConfig({ env, serviceAccountDir: sa });
    assert.equal(conn.server, 'https://[fd00::1]:443');
    assert.equal(conn.namespace, 'operators');
    assert.equal(conn.tls().ca?.toString(), 'SA-CA');
    assert.deepEqual((await conn.credentials()).headers, { Authorization: 'Bearer sa-token' });
  });

  it('what is wrong is said plainly', async (t) => {
    const dir = tempDir(t);
    const none = { HOME: dir };
    assert.throws(() => loadKubeConfig({ env: none, serviceAccountDir: dir }), /no Kubernetes cluster configured: set KUBECONFIG/);
    assert.throws(() => loadKubeConfig({ files: [join(dir, 'missing')] }), /cannot read kubeconfig .*missing/);
    const noCurrent = write(dir, 'a', config({ clusters: [{ name: 'c', cluster: { server: 'https://k' } }] }));
    assert.throws(() => loadKubeConfig({ files: [noCurrent] }), /has no current-context: set one with kubectl config use-context/);
    const dangling = write(dir, 'b', config({ current: 'x', contexts: [{ name: 'x', context: { cluster: 'gone', user: 'u' } }] }));
    assert.throws(() => loadKubeConfig({ files: [dangling] }), /context "x" names cluster "gone", which is not defined/);
    assert.throws(() => loadKubeConfig({ files: [write(dir, 'c', '[1, 2]')] }), /is not a mapping/);
    assert.throws(
      () => kubeConnection({ name: 'c', server: 'https://k', skipTLSVerify: false, proxyUrl: 'socks5://proxy:1080' }, { name: 'u' }),
      /SOCKS proxies .* are not supported; use an HTTP\(S\) proxy/,
    );
    const legacy = kubeConnection({ name: 'c', server: 'https://k', skipTLSVerify: false }, { name: 'u', authProvider: { name: 'openstack', config: {} } });
    await assert.rejects(legacy.credentials(), /auth-provider "openstack" is not supported: use an exec credential plugin/);
  });
});
