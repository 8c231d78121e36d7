import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RemoteChart } from '../../../src/config/types.js';
import { authsHost, fromDockerConfig, fromHelmRepositories, fromSecret, helmConfigFiles } from '../../../src/registry/credentials.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const oci: RemoteChart = { type: 'oci', reference: 'oci://reg.example.com:5000/charts/web', location: 'reg.example.com:5000', name: 'charts/web', version: undefined, digest: undefined, refreshIntervalMs: undefined, pullSecret: 'regcred' };
const repo: RemoteChart = { ...oci, type: 'repository', reference: 'https://charts.example.com/ web', location: 'https://charts.example.com', name: 'web' };

describe('registry credentials', () => {
  it('finds a host in a docker config under any of the spellings docker and helm write', () => {
    for (const key of ['reg.example.com:5000', 'https://reg.example.com:5000', 'https://reg.example.com:5000/v1/', 'http://REG.example.com:5000/v2/']) {
      assert.equal(authsHost(key), 'reg.example.com:5000', key);
      assert.deepEqual(fromDockerConfig(JSON.stringify({ auths: { [key]: { auth: b64('ci:p:w') } } }), 'reg.example.com:5000'), { username: 'ci', password: 'p:w' });
    }
    assert.deepEqual(fromDockerConfig(JSON.stringify({ auths: { 'reg.example.com:5000': { username: 'u', password: 'p' } } }), 'reg.example.com:5000'), { username: 'u', password: 'p' });
    assert.equal(fromDockerConfig(JSON.stringify({ auths: { 'other.example.com': { auth: b64('a:b') } } }), 'reg.example.com:5000'), undefined);
    assert.equal(fromDockerConfig('not json', 'reg.example.com:5000'), undefined);
  });

  it('reads dockerconfigjson, basic-auth and CA-only Secrets, and names what is missing', () => {
    const docker = fromSecret({ type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64(JSON.stringify({ auths: { 'reg.example.com:5000': { auth: b64('ci:s3cret') } } })), 'ca.crt': b64('PEM') } }, 'ops/regcred', oci);
    assert.deepEqual(docker, { ok: true, access: { credentials: { username: 'ci', password: 's3cret' }, ca: 'PEM', origin: 'Secret ops/regcred (user ci)' } });
    const basic = fromSecret({ type: 'kubernetes.io/basic-auth', data: { username: b64('reader'), password: b64('pw') } }, 'ops/repocred', repo);
    assert.deepEqual(basic, { ok: true, access: { credentials: { username: 'reader', password: 'pw' }, ca: undefined, origin: 'Secret ops/repocred (user reader)' } });
    assert.deepEqual(fromSecret({ data: { 'ca.crt': b64('PEM') } }, 'ops/ca', repo), { ok: true, access: { credentials: undefined, ca: 'PEM', origin: 'Secret ops/ca (a CA only, no credentials)' } });
    const otherHost = fromSecret({ data: { '.dockerconfigjson': b64(JSON.stringify({ auths: { 'elsewhere.io': { auth: b64('a:b') } } })) } }, 'ops/regcred', oci);
    assert.deepEqual(otherHost, { ok: false, problem: 'Secret ops/regcred has registry credentials, but none for reg.example.com:5000; add an entry for reg.example.com:5000 to its .dockerconfigjson (kubectl create secret docker-registry --docker-server=reg.example.com:5000 …)' });
    const empty = fromSecret({ data: { token: b64('x') } }, 'ops/x', oci);
    if (empty.ok) assert.fail('expected a problem');
    assert.match(empty.problem, /holds neither registry credentials nor a CA/u);
    // No message carries a password.
    assert.ok(!JSON.stringify([docker, basic].map((r) => (r.ok ? r.access.origin : r.problem))).includes('s3cret'));
  });

  it('reads a helm repo add entry by URL', () => {
    const yaml = 'apiVersion: ""\nrepositories:\n- name: stable\n  url: https://charts.example.com/\n  username: reader\n  password: pw\n  caFile: /etc/ca.pem\n- name: other\n  url: https://other.example.com\n';
    assert.deepEqual(fromHelmRepositories(yaml, 'https://charts.example.com'), { name: 'stable', credentials: { username: 'reader', password: 'pw' }, caFile: '/etc/ca.pem' });
    assert.deepEqual(fromHelmRepositories(yaml, 'https://other.example.com'), { name: 'other', credentials: undefined, caFile: undefined });
    assert.equal(fromHelmRepositories(yaml, 'https://nope.example.com'), undefined);
  });

  it('looks for Helm\'s files where Helm does', () => {
    assert.deepEqual(helmConfigFiles({}, '/home/op'), { registryConfig: '/home/op/.config/helm/registry/config.json', repositoryConfig: '/home/op/.config/helm/repositories.yaml' });
    assert.deepEqual(helmConfigFiles({ HELM_CONFIG_HOME: '/h' }, '/home/op'), { registryConfig: '/h/registry/config.json', repositoryConfig: '/h/repositories.yaml' });
    assert.equal(helmConfigFiles({ HELM_REGISTRY_CONFIG: '/mnt/config.json' }, '/x').registryConfig, '/mnt/config.json');
  });
});
