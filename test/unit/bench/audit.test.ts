import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { attribute, classify, component, CONTENDER_AGENTS, parseAuditLine, parseTimestamp, writeKey, type AuditEntry } from '../../../bench/audit.js';

/** An audit event line as the API server writes it at level Metadata (made up, not copied). */
function line(o: { verb: string; ua?: string; resource: string; sub?: string; name?: string; group?: string; code?: number; at?: string; stage?: string }): string {
  return JSON.stringify({
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: 'Metadata',
    auditID: 'a1',
    stage: o.stage ?? 'ResponseComplete',
    verb: o.verb,
    user: { username: 'someone' },
    ...(o.ua === undefined ? {} : { userAgent: o.ua }),
    objectRef: { resource: o.resource, namespace: 'ns1', ...(o.name === undefined ? {} : { name: o.name }), ...(o.sub === undefined ? {} : { subresource: o.sub }), ...(o.group === undefined ? {} : { apiGroup: o.group }) },
    responseStatus: { code: o.code ?? 200 },
    requestReceivedTimestamp: o.at ?? '2030-01-02T03:04:05.123456Z',
    stageTimestamp: '2030-01-02T03:04:05.130000Z',
  });
}

const entry = (l: string): AuditEntry => {
  const e = parseAuditLine(l);
  assert.ok(e !== undefined, l);
  return e;
};

describe('bench audit log', () => {
  it('parses timestamps with microseconds', () => {
    // Epoch milliseconds as doubles keep about a microsecond at this magnitude.
    assert.ok(Math.abs(parseTimestamp('2030-01-02T03:04:05.123456Z') - Date.parse('2030-01-02T03:04:05Z') - 123.456) < 0.001);
    assert.equal(parseTimestamp('2030-01-02T03:04:05Z'), Date.parse('2030-01-02T03:04:05Z'));
    assert.ok(Number.isNaN(parseTimestamp('yesterday')));
  });

  it('keeps completed writes and drops reads, other stages and garbage', () => {
    const e = entry(line({ verb: 'patch', ua: 'chartpilot', resource: 'webapps', sub: 'status', name: 'w1', group: 'example.io' }));
    assert.equal(e.verb, 'patch');
    assert.equal(e.subresource, 'status');
    assert.equal(e.group, 'example.io');
    assert.ok(Math.abs(e.completed - e.received - (130 - 123.456)) < 0.001);
    assert.equal(writeKey(e), 'patch webapps/status');
    assert.equal(parseAuditLine(line({ verb: 'get', ua: 'x', resource: 'pods' })), undefined);
    assert.equal(parseAuditLine(line({ verb: 'create', ua: 'x', resource: 'pods', stage: 'RequestReceived' })), undefined);
    assert.equal(parseAuditLine('{"kind":"Ev'), undefined);
    assert.equal(entry(line({ verb: 'create', resource: 'nodes' })).userAgent, '', 'a request without user agent');
  });

  it('classifies writers by user agent', () => {
    const cp = CONTENDER_AGENTS.chartpilot;
    assert.equal(classify('chartpilot', cp), 'operator');
    assert.equal(classify('Helm/4.1.4', cp), 'helm');
    assert.equal(classify('chartpilot-bench', cp), 'bench');
    assert.equal(classify('kube-controller-manager/v1.33.13 (linux/amd64) kubernetes/$Format/deployment-controller', cp), 'control-plane');
    assert.equal(classify('chartpilot-generate', cp), 'control-plane', 'only the operator itself is the operator');
    const osdk = CONTENDER_AGENTS['operator-sdk'];
    assert.equal(classify('helm-operator/v0.0.0 (linux/amd64) kubernetes/$Format', osdk), 'operator');
    assert.equal(classify('Go-http-client/2.0', osdk), 'helm', 'its in-process Helm');
    assert.equal(classify('Go-http-client/2.0', CONTENDER_AGENTS.floor), 'control-plane');
    assert.equal(classify('chartpilot', CONTENDER_AGENTS.floor), 'control-plane', 'the floor has no operator');
    assert.equal(component('kwok/v0.7.0 (linux/amd64)'), 'kwok');
    assert.equal(component('kube-scheduler/v1.33.13 (linux/amd64) kubernetes/$Format/scheduler'), 'kube-scheduler');
    assert.equal(component(''), 'other');
  });

  it('attributes writes to the contender, the control plane and the bench', () => {
    const entries = [
      line({ verb: 'create', ua: 'chartpilot-bench', resource: 'webapps', name: 'w1', group: 'example.io', code: 201 }),
      line({ verb: 'patch', ua: 'chartpilot', resource: 'webapps', name: 'w1', group: 'example.io' }),
      line({ verb: 'patch', ua: 'chartpilot', resource: 'webapps', sub: 'status', name: 'w1', group: 'example.io' }),
      line({ verb: 'patch', ua: 'chartpilot', resource: 'webapps', sub: 'status', name: 'w1', group: 'example.io', code: 409 }),
      line({ verb: 'create', ua: 'chartpilot', resource: 'events', name: 'w1.1' }),
      line({ verb: 'create', ua: 'Helm/4.1.4', resource: 'secrets', name: 'sh.helm.release.v1.w1.v1', code: 201 }),
      line({ verb: 'patch', ua: 'Helm/4.1.4', resource: 'deployments', name: 'w1', group: 'apps', code: 201 }),
      line({ verb: 'update', ua: 'Helm/4.1.4', resource: 'secrets', name: 'sh.helm.release.v1.w1.v1' }),
      line({ verb: 'create', ua: 'kube-controller-manager/v1.33.13 (linux/amd64)', resource: 'replicasets', group: 'apps' }),
      line({ verb: 'patch', ua: 'kwok/v0.7.0', resource: 'pods', sub: 'status' }),
    ].map(entry);
    const a = attribute(entries, CONTENDER_AGENTS.chartpilot);
    assert.equal(a.bench, 1);
    assert.equal(a.total, 9);
    assert.equal(a.operator, 4);
    assert.equal(a.helm, 3);
    assert.equal(a.contender, 7);
    assert.equal(a.contenderRefused, 1);
    assert.equal(a.controlPlane, 2);
    assert.deepEqual(a.operatorByKey, { 'patch webapps': 1, 'patch webapps/status': 2, 'create events': 1 });
    assert.deepEqual(a.helmByKey, { 'create secrets': 1, 'patch deployments': 1, 'update secrets': 1 });
    assert.deepEqual(a.controlPlaneByComponent, { 'kube-controller-manager': 1, kwok: 1 });
  });
});
