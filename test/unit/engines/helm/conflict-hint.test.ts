import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fieldConflictHint } from '../../../../src/engines/helm/conflict-hint.js';

// helm 4.1.4's words for an upgrade over an HPA's replicas (test/integration/drift-rules.test.ts).
const HPA = 'UPGRADE FAILED: conflict occurred while applying object ns/web apps/v1, Kind=Deployment: Apply failed with 1 conflict: '
  + 'conflict with "kube-controller-manager" with subresource "scale" using apps/v1: .spec.replicas';

describe('field-manager conflict hint', () => {
  it('names the other manager, the field and both ways out', () => {
    assert.equal(
      fieldConflictHint(HPA),
      '"kube-controller-manager (scale)" owns .spec.replicas, which the chart still renders: stop rendering it (a driftDetection.ignore rule covers drift repair, not helm\'s apply), '
        + 'or annotate the resource helm.sdk.operatorframework.io/upgrade-force: "true" to take the field back at each upgrade',
    );
  });

  it('names a manager without a subresource, and the first field where several conflict', () => {
    const one = fieldConflictHint('Apply failed with 1 conflict: conflict with "cainjector" using admissionregistration.k8s.io/v1: .webhooks[name="check"].clientConfig.caBundle');
    assert.match(one ?? '', /^"cainjector" owns \.webhooks\[name="check"\]\.clientConfig\.caBundle, which/);
    const several = fieldConflictHint('Apply failed with 2 conflicts: conflicts with "editor" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name="app"].image');
    assert.match(several ?? '', /^"editor" owns \.spec\.replicas, which/);
  });

  it('says nothing for other failures, ownership-metadata conflicts among them', () => {
    assert.equal(fieldConflictHint('rendered manifests contain a resource that already exists. Unable to continue with install: ConfigMap "x" in namespace "y" exists and cannot be imported into the current release: invalid ownership metadata'), undefined);
    assert.equal(fieldConflictHint('another operation (install/upgrade/rollback) is in progress'), undefined);
    assert.equal(fieldConflictHint(''), undefined);
  });
});
