import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { entry, parse, problems } from './entry-fixture.js';


describe('watches.yaml driftDetection', () => {
  it('is absent unless given: the entry repairs every drifted field, as before', async () => {
    assert.equal((await entry('')).driftDetection, undefined);
  });

  it('reads mode and ignore rules with targets', async () => {
    const e = await entry(`  driftDetection:
    mode: warn
    ignore:
      - paths: [/spec/replicas]
        target: {kind: Deployment}
      - paths: ["/webhooks/0/clientConfig/caBundle", /metadata/annotations/a~1b]
        target:
          kind: ValidatingWebhookConfiguration
          name: hooks
          namespace: other
          labelSelector: app.kubernetes.io/component in (webhook)
      - paths: [/metadata/labels/injected]
`);
    assert.deepEqual(e.driftDetection, {
      mode: 'warn',
      ignore: [
        { paths: ['/spec/replicas'], target: { kind: 'Deployment' } },
        {
          paths: ['/webhooks/0/clientConfig/caBundle', '/metadata/annotations/a~1b'],
          target: { kind: 'ValidatingWebhookConfiguration', name: 'hooks', namespace: 'other', labelSelector: 'app.kubernetes.io/component in (webhook)' },
        },
        { paths: ['/metadata/labels/injected'] },
      ],
    });
  });

  it('defaults the mode to repair and takes Flux’s names for the modes', async () => {
    assert.deepEqual((await entry('  driftDetection: {ignore: [{paths: [/spec/replicas]}]}\n')).driftDetection, { mode: 'repair', ignore: [{ paths: ['/spec/replicas'] }] });
    assert.equal((await entry('  driftDetection: {mode: enabled}\n')).driftDetection?.mode, 'repair');
    assert.equal((await entry('  driftDetection: {mode: disabled}\n')).driftDetection?.mode, 'off');
    assert.equal((await entry('  driftDetection: {mode: off}\n')).driftDetection?.mode, 'off', 'YAML 1.1 reads a bare off as false; the text is what counts');
  });

  it('reports each mistake in one line with the entry, the line and the fix', async () => {
    const found = await problems(`  driftDetection:
    mode: fix
    ignore:
      - paths: [spec.replicas, "/ok", "/a~b"]
        target: {kind: Deployment, annotationSelector: x, nmae: web, labelSelector: "tier in ()"}
      - target: {kind: Deployment}
      - paths: /spec/replicas
      - pahts: [/spec/replicas]
    ignores: []
`);
    const expected = [
      /^watches\.yaml entry 1 \(Web\.v1alpha1\.demo\.example\.com\), line 6: driftDetection\.mode is a string \("fix"\); expected repair .*, warn .* or off/,
      /line 8: driftDetection\.ignore\[0\]\.paths\[0\] "spec\.replicas" is not a JSON pointer: it must start with "\/" \(e\.g\. \/spec\/replicas\)$/,
      /line 8: driftDetection\.ignore\[0\]\.paths\[2\] "\/a~b" has a "~" not followed by 0 or 1/,
      /line 9: driftDetection\.ignore\[0\]\.target\.annotationSelector is not supported by chartpilot; select objects with kind, name, namespace, labelSelector$/,
      /line 9: driftDetection\.ignore\[0\]\.target has unknown key "nmae"; did you mean "name"\?$/,
      /line 9: driftDetection\.ignore\[0\]\.target\.labelSelector "tier in \(\)" lists no values/,
      /line 10: driftDetection\.ignore\[1\] has no paths; list the JSON pointers of the fields to leave alone, e\.g\. paths: \[\/spec\/replicas\]$/,
      /line 11: driftDetection\.ignore\[2\]\.paths is a string \("\/spec\/replicas"\); expected a non-empty list of JSON pointers/,
      /line 12: driftDetection\.ignore\[3\] has unknown key "pahts"; did you mean "paths"\?$/,
      /line 13: driftDetection has unknown key "ignores"; did you mean "ignore"\?$/,
    ];
    for (const re of expected) assert.ok(found.some((p) => re.test(p)), `${String(re)} in\n${found.join('\n')}`);
    assert.equal(found.length, expected.length, found.join('\n'));
  });

  it('refuses a driftDetection that is not a map, and on an Ansible entry', async () => {
    assert.match((await problems('  driftDetection: repair\n'))[0] ?? '', /driftDetection is a string \("repair"\); expected a map with mode and\/or ignore, e\.g\. driftDetection: \{mode: repair/);
    const r = await parse(`- version: v1
  kind: Job
  role: setup
  driftDetection: {mode: warn}
`);
    if (r.ok) assert.fail('expected problems');
    assert.ok(r.problems.some((p) => /driftDetection is a chart key; this entry runs an Ansible role — remove it/.test(p)), r.problems.join('\n'));
  });
});
