import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HelmError } from '../../../src/helm/types.js';
import { forbiddenExplanation, serviceAccountUser, tenantOf } from '../../../src/reconcile/identity.js';
import { TARGET } from './actions/context-fixture.js';

describe('identity', () => {
  it('a kind with a ServiceAccount acts as that ServiceAccount of each namespace; without one, as the operator', () => {
    assert.deepEqual(tenantOf({ ...TARGET, serviceAccount: 'tenant' }, 'team-a'), { namespace: 'team-a', serviceAccount: 'tenant', user: 'system:serviceaccount:team-a:tenant' });
    assert.equal(tenantOf(TARGET, 'team-a'), undefined);
    assert.equal(serviceAccountUser('n', 's'), 'system:serviceaccount:n:s');
  });

  it('an RBAC refusal names whose right is missing: the tenant’s, the operator’s impersonation, or the operator’s', () => {
    const tenant = tenantOf({ ...TARGET, serviceAccount: 'tenant' }, 'team-a');
    const byTenant = new HelmError('forbidden', 'system:serviceaccount:team-a:tenant may not create networkpolicies.networking.k8s.io in namespace team-a', 'upgrade');
    assert.match(forbiddenExplanation(byTenant, tenant) ?? '', /; this release runs as ServiceAccount team-a\/tenant: grant it what the chart needs \(chartpilot generate rbac --tenant-namespace team-a\)/);
    const impersonation = new Error('serviceaccounts "tenant" is forbidden: User "system:serviceaccount:ops:chartpilot" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-a"');
    assert.equal(
      forbiddenExplanation(impersonation, tenant),
      'system:serviceaccount:ops:chartpilot may not impersonate serviceaccounts "tenant" in namespace team-a; ' +
        'grant the operator impersonate on ServiceAccount tenant (chartpilot generate rbac --default-service-account tenant)',
    );
    assert.match(forbiddenExplanation(byTenant, undefined) ?? '', /; grant the operator's identity what the chart needs \(chartpilot generate rbac\)$/);
    assert.equal(forbiddenExplanation(new HelmError('render', 'parse error at (x)', 'upgrade'), tenant), undefined);
    assert.equal(forbiddenExplanation(new Error('connection refused'), tenant), undefined);
  });
});
