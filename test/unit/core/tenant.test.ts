import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HelmError } from '../../../src/helm/types.js';
import { forbiddenExplanation, missingServiceAccountMessage, serviceAccountMissing, serviceAccountUser, tenantOf, type Tenant } from '../../../src/core/tenant.js';
import { TARGET } from '../engines/helm/actions/context-fixture.js';

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

  it('words a missing ServiceAccount for the engine that needs it: Helm actions and a chart, or Ansible runs and a role', () => {
    const t: Tenant = { namespace: 'team-a', serviceAccount: 'tenant', user: 'system:serviceaccount:team-a:tenant' };
    const helm = missingServiceAccountMessage(t, 'helm');
    const ansible = missingServiceAccountMessage(t, 'ansible');
    assert.match(helm, /^ServiceAccount team-a\/tenant does not exist: chartpilot runs every Helm action for this resource as system:serviceaccount:team-a:tenant /);
    assert.match(helm, /what the chart needs in namespace team-a .*The deployed release is left as it is$/);
    assert.match(ansible, /runs every Ansible run for this resource .*what the role needs in namespace team-a .*What earlier runs created is left as it is$/);
    assert.doesNotMatch(ansible, /Helm|the chart|release/, 'nothing of the Helm engine in an Ansible kind\'s message');
  });

  it('asks the lookup only for a kind that acts as a ServiceAccount', async () => {
    const asked: string[] = [];
    const lookup = {
      exists: (ns: string, name: string): Promise<boolean> => {
        asked.push(`${ns}/${name}`);
        return Promise.resolve(name === 'present');
      },
    };
    const tenant = (sa: string): Tenant | undefined => tenantOf({ serviceAccount: sa }, 'team-a');
    assert.equal(await serviceAccountMissing(lookup, tenant('present')), false);
    assert.equal(await serviceAccountMissing(lookup, tenant('absent')), true);
    assert.equal(await serviceAccountMissing(lookup, undefined), false, 'the operator acts as itself');
    assert.equal(await serviceAccountMissing(undefined, tenant('absent')), false, 'nothing can look');
    assert.deepEqual(asked, ['team-a/present', 'team-a/absent']);
  });
});
