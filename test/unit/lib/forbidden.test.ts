import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeForbidden, parseForbidden } from '../../../src/lib/forbidden.js';

describe('forbidden', () => {
  it('reads the API server refusal out of any text and names who may not do what where', () => {
    const ns = parseForbidden('configmaps "web" is forbidden: User "system:serviceaccount:a:t" cannot patch resource "configmaps" in API group "" in the namespace "a"');
    assert.deepEqual(ns, { user: 'system:serviceaccount:a:t', verb: 'patch', resource: 'configmaps', group: '', namespace: 'a', name: 'web', inLookup: false });
    assert.ok(ns);
    assert.equal(describeForbidden(ns), 'system:serviceaccount:a:t may not patch configmaps "web" in namespace a');

    const cluster = parseForbidden('x: y: clusterroles.rbac.authorization.k8s.io is forbidden: User "u" cannot list resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope');
    assert.ok(cluster);
    assert.equal(describeForbidden(cluster), 'u may not list clusterroles.rbac.authorization.k8s.io at the cluster scope');

    const sub = parseForbidden('deployments.apps "w" is forbidden: User "u" cannot update resource "deployments/scale" in API group "apps" in the namespace "n"');
    assert.equal(sub?.resource, 'deployments/scale');

    const imp = parseForbidden('serviceaccounts "tenant" is forbidden: User "system:serviceaccount:op:chartpilot" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-a"');
    assert.ok(imp);
    assert.equal(describeForbidden(imp), 'system:serviceaccount:op:chartpilot may not impersonate serviceaccounts "tenant" in namespace team-a');
  });

  it('marks a refusal met by a lookup, and ignores texts that hold none', () => {
    const f = parseForbidden('error calling lookup: secrets "s" is forbidden: User "u" cannot get resource "secrets" in API group "" in the namespace "kube-system"');
    assert.equal(f?.inLookup, true);
    assert.ok(f);
    assert.equal(describeForbidden(f), 'u may not get secrets "s" in namespace kube-system (a lookup in the chart\'s templates)');
    assert.equal(parseForbidden('secrets "s" is forbidden: ValidatingAdmissionPolicy \'p\' denied request'), undefined);
    assert.equal(parseForbidden('release: not found'), undefined);
  });
});
