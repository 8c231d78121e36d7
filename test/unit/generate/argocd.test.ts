import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { argocdConfigMapYaml, healthKey, healthLua, HEALTH_OF_STATE } from '../../../src/generate/argocd.js';
import { SummaryStates } from '../../../src/core/summary.js';

describe('generate argocd', () => {
  it('maps every summary state, in the script too', () => {
    const script = healthLua('1.2.3');
    for (const state of Object.values(SummaryStates)) {
      assert.ok(script.includes(`["${state}"] = "${HEALTH_OF_STATE[state]}"`), state);
    }
    // argocd-cm checks run without Lua's string, math and os libraries unless told otherwise.
    assert.doesNotMatch(script, /\b(?:string|math|os)\./u);
  });

  it("keys each kind as argocd-cm's resource.customizations.health.<group>_<kind>", () => {
    assert.equal(healthKey({ group: 'demo.example.com', kind: 'Guestbook' }), 'resource.customizations.health.demo.example.com_Guestbook');
    const cm = parse(argocdConfigMapYaml([{ group: 'a.example.com', kind: 'One' }, { group: 'b.example.com', kind: 'Two' }], '1.2.3', 'gitops')) as {
      kind: string;
      metadata: { name: string; namespace: string };
      data: Record<string, string>;
    };
    assert.deepEqual([cm.kind, cm.metadata.name, cm.metadata.namespace], ['ConfigMap', 'argocd-cm', 'gitops']);
    assert.deepEqual(Object.keys(cm.data), ['resource.customizations.health.a.example.com_One', 'resource.customizations.health.b.example.com_Two']);
    assert.equal(cm.data['resource.customizations.health.a.example.com_One'], healthLua('1.2.3'));
  });
});
