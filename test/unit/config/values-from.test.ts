import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { entry, HEAD, parse, problems } from './entry-fixture.js';
import { composeReferenced, keyHashes, parseValuesText, planReads, splitSpec, type FetchedObject } from '../../../src/config/values-from.js';
import type { ValuesFromSettings } from '../../../src/core/values-from.js';


const CR_ONLY: ValuesFromSettings = { specField: 'valuesFrom', allowCrossNamespace: false, references: [] };

describe('watches.yaml valuesFrom', () => {
  it('reads specField, allowCrossNamespace and the platform references with their defaults', async () => {
    const e = await entry(`  valuesFrom:
    specField: valuesFrom
    allowCrossNamespace: true
    references:
      - {kind: Secret, name: platform-db, valuesKey: password, targetPath: db.adminPassword}
      - {kind: ConfigMap, name: defaults, optional: true}
`);
    assert.deepEqual(e.valuesFrom, {
      specField: 'valuesFrom',
      allowCrossNamespace: true,
      references: [
        { kind: 'Secret', name: 'platform-db', valuesKey: 'password', targetPath: 'db.adminPassword', optional: false },
        { kind: 'ConfigMap', name: 'defaults', valuesKey: 'values.yaml', optional: true },
      ],
    });
  });

  it('an entry without it keeps the whole spec as values (operator-sdk meaning)', async () => {
    const r = await parse(HEAD);
    assert.ok(r.ok);
    assert.equal(r.entries[0]?.valuesFrom, undefined);
  });

  it('names the line and the fix for each bad part', async () => {
    const found = await problems(`  valuesFrom:
    specField: "spec.values"
    reference: []
    references:
      - {kind: Pod, name: x}
      - {kind: Secret, name: db, namespace: other}
      - {kind: Secret, name: db, targetPath: "a..b"}
`);
    assert.equal(found.length, 5, found.join('\n'));
    assert.match(found[0] ?? '', /line 6: valuesFrom\.specField is a string \("spec\.values"\); expected the name of a top-level spec field/);
    assert.match(found[1] ?? '', /line 7: valuesFrom has the unknown key "reference"; did you mean "references"\?/);
    assert.match(found[2] ?? '', /line 9: valuesFrom\.references\[0\]\.kind is "Pod"; expected Secret or ConfigMap/);
    assert.match(found[3] ?? '', /line 10: valuesFrom\.references\[1\] has the unknown key "namespace".*operator's namespace/);
    assert.match(found[4] ?? '', /line 11: valuesFrom\.references\[2\]\.targetPath "a\.\.b" is not a valid Helm --set path/);
  });

  it('refuses a valuesFrom that does nothing', async () => {
    const found = await problems('  valuesFrom: {allowCrossNamespace: true}\n');
    assert.match(found[0] ?? '', /valuesFrom has neither specField nor references, so it does nothing/);
  });
});

describe('a CR spec with references', () => {
  it('takes the field out of the values and lists its references', () => {
    const split = splitSpec({ replicas: 2, valuesFrom: [{ kind: 'Secret', name: 'db', valuesKey: 'password', targetPath: 'db.password' }] }, CR_ONLY);
    assert.ok(split.ok);
    assert.deepEqual(split.spec, { replicas: 2 });
    assert.deepEqual(split.references, [{ kind: 'Secret', name: 'db', valuesKey: 'password', targetPath: 'db.password', optional: false }]);
  });

  it('leaves the spec whole when the entry names no field', () => {
    const spec = { valuesFrom: [{ kind: 'Secret', name: 'db' }] };
    const split = splitSpec(spec, { specField: undefined, allowCrossNamespace: false, references: [] });
    assert.ok(split.ok);
    assert.equal(split.spec, spec);
    assert.deepEqual(split.references, []);
  });

  it('says what is wrong with a bad reference, naming its place in the spec', () => {
    for (const [field, expected] of [
      [[{ kind: 'Secret' }], /spec\.valuesFrom\[0\]\.name is missing; expected the name of a Secret/],
      [{ kind: 'Secret' }, /spec\.valuesFrom is a map; expected a list of references/],
      ['db', /spec\.valuesFrom is "db"; expected a list of references/],
      [[{ kind: 'Secret', name: 'db', __proto__x: 1 }], /spec\.valuesFrom\[0\] has the unknown key "__proto__x"/],
      [[{ kind: 'Secret', name: 'db', optional: 'yes' }], /spec\.valuesFrom\[0\]\.optional is "yes"; expected true or false/],
      [[{ kind: 'Secret', name: 'db', valuesKey: '../x' }], /spec\.valuesFrom\[0\]\.valuesKey is "\.\.\/x"/],
      [Array.from({ length: 33 }, () => ({ kind: 'Secret', name: 'db' })), /lists 33 references; at most 32/],
    ] as const) {
      const split = splitSpec({ valuesFrom: field }, CR_ONLY);
      assert.ok(!split.ok);
      assert.equal(split.reason, 'ValuesReferenceInvalid');
      assert.match(split.problem, expected);
      assert.match(split.problem, /the deployed release is left as it is/);
    }
  });

  it('a JSON "__proto__" key is refused, never followed', () => {
    const split = splitSpec(JSON.parse('{"valuesFrom":[{"kind":"Secret","name":"db","__proto__":{"optional":true}}]}'), CR_ONLY);
    assert.ok(!split.ok);
  });
});

describe('reading references', () => {
  const secret = (data: Record<string, string>): FetchedObject => ({ found: true, data });

  it('refuses a reference into another namespace unless the entry allows it', () => {
    const refs = [{ kind: 'Secret' as const, name: 'db', namespace: 'kube-system', valuesKey: 'password', optional: false }];
    const refused = planReads('team-a', 'operators', refs, CR_ONLY);
    assert.ok(!refused.ok);
    assert.match(refused.problem, /spec\.valuesFrom\[0\] names Secret kube-system\/db, in another namespace; .*valuesFrom\.allowCrossNamespace/);
    const allowed = planReads('team-a', 'operators', refs, { ...CR_ONLY, allowCrossNamespace: true });
    assert.ok(allowed.ok);
    assert.deepEqual(allowed.reads.map((r) => [r.namespace, r.asTenant, r.side]), [['kube-system', true, 'below']]);
  });

  it("refuses a CR's reference into the operator's namespace even where the entry allows other namespaces", () => {
    const refs = [{ kind: 'Secret' as const, name: 'chartpilot-seal-key', namespace: 'operators', valuesKey: 'key', targetPath: 'k', optional: false }];
    const refused = planReads('team-a', 'operators', refs, { ...CR_ONLY, allowCrossNamespace: true });
    assert.ok(!refused.ok);
    assert.match(refused.problem, /in the operator's own namespace, which no custom resource may read from/);
    assert.ok(planReads('operators', 'operators', refs, CR_ONLY).ok, "a CR in the operator's namespace reads its own namespace");
  });

  it("reads the CR's references as its tenant, under the spec, and the entry's as the operator, over it", () => {
    const plan = planReads('team-a', 'operators', [{ kind: 'ConfigMap', name: 'app', valuesKey: 'values.yaml', optional: false }], {
      ...CR_ONLY,
      references: [{ kind: 'Secret', name: 'platform', valuesKey: 'token', targetPath: 'global.token', optional: false }],
    });
    assert.ok(plan.ok);
    assert.deepEqual(plan.reads.map((r) => [r.ref.name, r.namespace, r.asTenant, r.side]), [
      ['app', 'team-a', true, 'below'],
      ['platform', 'operators', false, 'above'],
    ]);
  });

  it('merges YAML values and places a targetPath value as a string, in order', () => {
    const plan = planReads('team-a', 'operators', [
      { kind: 'ConfigMap', name: 'app', valuesKey: 'values.yaml', optional: false },
      { kind: 'Secret', name: 'db', valuesKey: 'password', targetPath: 'db.password', optional: false },
      { kind: 'Secret', name: 'db', valuesKey: 'port', targetPath: 'db.port', optional: false },
    ], { ...CR_ONLY, references: [{ kind: 'Secret', name: 'platform', valuesKey: 'values.yaml', optional: false }] });
    assert.ok(plan.ok);
    const [app, password, port, platform] = plan.reads;
    assert.ok(app && password && port && platform);
    const got = composeReferenced([
      { read: app, object: { found: true, data: { 'values.yaml': 'db: {host: db.team-a, password: old}\nenabled: yes\n' } } },
      { read: password, object: secret({ password: '{s3cr3t,}', port: '5432' }) },
      { read: port, object: secret({ password: '{s3cr3t,}', port: '5432' }) },
      { read: platform, object: secret({ 'values.yaml': 'global: {region: eu}' }) },
    ]);
    assert.ok(got.ok);
    assert.deepEqual(got.below, { db: { host: 'db.team-a', password: '{s3cr3t,}', port: '5432' }, enabled: true });
    assert.deepEqual(got.above, { global: { region: 'eu' } });
    assert.match(got.digest, /^[0-9a-f]{64}$/u);
  });

  it('counts only the referenced keys in the digest', () => {
    const plan = planReads('team-a', 'operators', [{ kind: 'Secret', name: 'db', valuesKey: 'password', targetPath: 'db.password', optional: false }], CR_ONLY);
    assert.ok(plan.ok);
    const [read] = plan.reads;
    assert.ok(read);
    const digest = (data: Record<string, string>): string => {
      const r = composeReferenced([{ read, object: secret(data) }]);
      assert.ok(r.ok);
      return r.digest;
    };
    assert.equal(digest({ password: 'a', other: '1' }), digest({ password: 'a', other: '2' }));
    assert.notEqual(digest({ password: 'a' }), digest({ password: 'b' }));
  });

  it('an object known by its key hashes gives the same digest as its data, and no values', () => {
    const plan = planReads('team-a', 'operators', [{ kind: 'Secret', name: 'db', valuesKey: 'password', targetPath: 'db.password', optional: false }], CR_ONLY);
    assert.ok(plan.ok);
    const [read] = plan.reads;
    assert.ok(read);
    const data = { password: 'hunter2-secret', other: 'x' };
    const full = composeReferenced([{ read, object: { found: true, data } }]);
    const hashed = composeReferenced([{ read, object: { found: true, hashes: keyHashes(data) } }]);
    assert.ok(full.ok && hashed.ok);
    assert.equal(hashed.digest, full.digest);
    assert.equal(hashed.partial, true);
    assert.deepEqual(hashed.below, {});
    assert.equal(full.partial, undefined);
    assert.doesNotMatch(JSON.stringify(keyHashes(data)), /hunter2/);
    const missingKey = composeReferenced([{ read, object: { found: true, hashes: keyHashes({ other: 'x' }) } }]);
    assert.ok(!missingKey.ok);
  });

  it('a missing required object or key holds the CR back, naming it; an optional one is skipped', () => {
    const ref = { kind: 'Secret' as const, name: 'db', valuesKey: 'password', targetPath: 'db.password', optional: false };
    const plan = planReads('team-a', 'operators', [ref, { ...ref, optional: true, name: 'extra' }], CR_ONLY);
    assert.ok(plan.ok);
    const [required, optional] = plan.reads;
    assert.ok(required && optional);
    const gone = composeReferenced([{ read: required, object: { found: false } }]);
    assert.ok(!gone.ok);
    assert.equal(gone.reason, 'ValuesReferenceNotFound');
    assert.match(gone.problem, /^Secret team-a\/db does not exist \(spec\.valuesFrom\[0\]\): create it, or mark the reference optional: true/);
    const noKey = composeReferenced([{ read: required, object: secret({ user: 'x' }) }]);
    assert.ok(!noKey.ok);
    assert.match(noKey.problem, /^Secret team-a\/db has no key "password"/);
    const skipped = composeReferenced([{ read: required, object: secret({ password: 'p' }) }, { read: optional, object: { found: false } }]);
    assert.ok(skipped.ok);
    assert.deepEqual(skipped.below, { db: { password: 'p' } });
  });

  it('never puts the text of a bad YAML key in its problem', () => {
    const secretText = 'password: [hunter2-very-secret\n  : :';
    const r = parseValuesText(secretText, 'key "values.yaml" of Secret team-a/db');
    assert.ok(!r.ok);
    assert.doesNotMatch(r.problem, /hunter2/);
    assert.match(r.problem, /^key "values\.yaml" of Secret team-a\/db is not valid YAML \([A-Z_]+ at line \d\)/);
    const list = parseValuesText('- a\n- b\n', 'key');
    assert.ok(!list.ok);
    assert.match(list.problem, /holds a list, not a map of values/);
    const deep = parseValuesText(`${'['.repeat(20000)}${']'.repeat(20000)}`, 'key');
    assert.ok(!deep.ok);
    const empty = parseValuesText('', 'key');
    assert.deepEqual(empty, { ok: true, values: {} });
    const dates = parseValuesText('when: 2001-12-14\nblob: !!binary aGk=\n', 'key');
    assert.deepEqual(dates, { ok: true, values: { when: '2001-12-14', blob: 'aGk=' } });
  });
});
