import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { statusProgram } from '../../../src/config/status-expressions.js';
import { outputsCondition, withReadyWhen, type ReleaseObject, type StatusInput, type StatusVerdict } from '../../../src/core/outputs.js';
import { entry, parse, problems } from './entry-fixture.js';
import { REPO_ROOT } from '../generate/helpers.js';

const SELF = { apiVersion: 'demo.example.com/v1alpha1', kind: 'Web', metadata: { name: 'shop', namespace: 'team-a', labels: { tier: 'front' } } };

function object(kind: string, name: string, rendered: Record<string, unknown>, live?: Record<string, unknown>): ReleaseObject {
  const base = { kind, metadata: { name, namespace: 'team-a' } };
  return { apiVersion: 'v1', kind, name, namespace: 'team-a', rendered: { ...base, ...rendered }, ...(live === undefined ? {} : { live: { ...base, ...live } }) };
}

const SERVICE = object('Service', 'shop-web', { spec: { ports: [{ port: 8080 }] } }, { spec: { clusterIP: '10.96.0.12', ports: [{ port: 8080 }] } });
const SECRET = object('Secret', 'shop-password', { stringData: { password: 'hunter2' } }, { data: { password: 'aHVudGVyMg==' } });
const INPUT: StatusInput = { self: SELF, objects: [SERVICE, SECRET] };

async function verdict(keys: string, input: StatusInput = INPUT): Promise<StatusVerdict> {
  const e = await entry(keys);
  assert.ok(e.status, 'the entry has outputs or readyWhen');
  return statusProgram(e.status).evaluate(input);
}

describe('watches.yaml outputs and readyWhen', () => {
  it('reads the short and the long form, infers a type the checker knows and takes a declared one', async () => {
    const e = await entry(`  outputs:
    url: '"http://" + objects.Service["shop-web"].metadata.name + ":" + string(objects.Service["shop-web"].spec.ports[0].port)'
    port: {expression: 'objects.Service["shop-web"].spec.ports[0].port', type: integer, column: true}
    services: size(objects.Service)
  readyWhen: objects.Service["shop-web"].spec.?clusterIP.hasValue()
`);
    assert.deepEqual(e.status, {
      outputs: [
        { name: 'url', expression: '"http://" + objects.Service["shop-web"].metadata.name + ":" + string(objects.Service["shop-web"].spec.ports[0].port)', type: 'string', column: false },
        { name: 'port', expression: 'objects.Service["shop-web"].spec.ports[0].port', type: 'integer', column: true },
        { name: 'services', expression: 'size(objects.Service)', type: 'integer', column: false },
      ],
      readyWhen: 'objects.Service["shop-web"].spec.?clusterIP.hasValue()',
    });
  });

  it('gives one line per bad expression at start, with the entry, the line and what to do', async () => {
    const found = await problems(`  outputs:
    sum: '1 + "a"'
    open: '(objects'
    Bad-name: '"x"'
    count: {expression: '"x"', type: integer}
    field: 'objects.Service["shop-web"].spec.clusterIP'
    typo: {expr: '"x"'}
    who: nobody.name
    present: {expression: 'has(objects.Service["shop-web"].spec)', type: boolean}
  readyWhen: '"yes"'
`);
    const expected = [
      /^watches\.yaml entry 1 \(Web\.v1alpha1\.demo\.example\.com\), line 6: outputs\.sum: the expression does not compile: no such overload: int \+ string \(at column 1\)$/,
      /line 7: outputs\.open: the expression does not compile: .+\(at column \d+\)$/,
      /line 8: output name "Bad-name" is not usable; use a camelCase name/,
      /line 9: outputs\.count: the expression is of type string, not integer$/,
      /line 10: outputs\.field: the expression is of type dyn; declare what it gives with type: string \| integer \| number \| boolean/,
      /line 11: outputs\.typo has the unknown key "expr"; known keys are expression, type, column$/,
      /line 11: outputs\.typo has no expression/,
      /line 12: outputs\.who: the expression does not compile: Unknown variable: nobody/,
      /line 13: outputs\.present: the expression does not compile: has\(\) invalid argument \(at column 5\); after an index write x\.\?field\.hasValue\(\) or "field" in x$/,
      /line 14: readyWhen is of type string; it must be true or false \(bool\)$/,
    ];
    assert.equal(found.length, expected.length, found.join('\n'));
    expected.forEach((re, i) => {
      assert.match(found[i] ?? '', re);
    });
    for (const line of found) assert.ok(!line.includes('\n'), 'one line each');
  });

  it('refuses, at start, expressions that read Secret data, call matches() or nest comprehensions too deep', async () => {
    for (const expression of ['objects.Secret["shop-password"].data.password', 'objects.Secret["shop-password"].stringData', 'objects["Secret"][self.metadata.name]["data"]', 'has(objects.Secret.x.data)', 'objects.Secret["x"].?data.hasValue()']) {
      const [line, ...more] = await problems(`  outputs:\n    leak: {expression: '${expression}', type: string}\n`);
      assert.equal(more.length, 0);
      assert.match(line ?? '', /outputs\.leak: the expression reads the data of a Secret, which outputs and readyWhen may not \(a Secret's name is fine\)$/, expression);
    }
    assert.match((await problems(`  readyWhen: 'self.metadata.name.matches("^a+$")'\n`))[0] ?? '', /readyWhen calls matches\(\), which is not allowed: JavaScript's regular expressions have no time bound/);
    assert.match(
      (await problems(`  readyWhen: 'objects.Pod.all(a, objects.Pod.all(b, objects.Pod.all(c, a == b)))'\n`))[0] ?? '',
      /readyWhen nests comprehensions 3 deep; at most 2 are allowed/,
    );
    // A Secret's name is fine.
    assert.equal((await entry(`  outputs:\n    secretName: {expression: 'objects.Secret["shop-password"].metadata.name', type: string}\n`)).status?.outputs[0]?.type, 'string');
  });

  it('is a chart key: an Ansible entry is told so', async () => {
    const r = await parse(`- group: demo.example.com\n  version: v1\n  kind: Job\n  role: job\n  outputs: {a: '"x"'}\n  readyWhen: 'true'\n`);
    assert.ok(!r.ok);
    assert.deepEqual(
      r.problems.map((p) => p.replace(/^.*line (\d+): /u, 'line $1: ')),
      ['line 5: outputs is a chart key; this entry runs an Ansible role — remove it (a role writes its own status with operator_sdk.util.k8s_status)', 'line 6: readyWhen is a chart key; this entry runs an Ansible role — remove it (a role writes its own status with operator_sdk.util.k8s_status)'],
    );
  });
});

describe('evaluating outputs', () => {
  it('reads live fields where the caches have them and rendered ones otherwise; ints stay ints', async () => {
    const v = await verdict(`  outputs:
    url: '"http://" + objects.Service["shop-web"].metadata.name + ":" + string(objects.Service["shop-web"].spec.ports[0].port)'
    clusterIP: {expression: 'objects.Service["shop-web"].spec.clusterIP', type: string}
    next: {expression: 'objects.Service["shop-web"].spec.ports[0].port + 1', type: integer}
    half: {expression: 'double(objects.Service["shop-web"].spec.ports[0].port) / 32.0', type: number}
    front: {expression: 'self.metadata.labels.tier == "front"', type: boolean, column: true}
    secretName: {expression: 'objects.Secret["shop-password"].metadata.name', type: string}
`);
    assert.deepEqual(v, { outputs: { url: 'http://shop-web:8080', clusterIP: '10.96.0.12', next: 8081, half: 252.5, front: true, secretName: 'shop-password' }, unresolved: [] });
    const rendered = await verdict(`  outputs:\n    clusterIP: {expression: 'objects.Service["shop-web"].spec.?clusterIP.orValue("pending")', type: string}\n`, { self: SELF, objects: [{ ...SERVICE, live: undefined }] });
    assert.deepEqual(rendered.outputs, { clusterIP: 'pending' });
  });

  it('leaves out what does not resolve and says why, without quoting any value', async () => {
    const v = await verdict(`  outputs:
    byLabel: {expression: 'objects.Service[self.metadata.labels.tier].metadata.name', type: string}
    host: {expression: 'objects.Ingress["shop"].spec.rules[0].host', type: string}
    wrongType: {expression: 'objects.Service["shop-web"].spec.clusterIP', type: integer}
    ok: '"fine"'
`);
    assert.deepEqual(v.outputs, { ok: 'fine' });
    assert.deepEqual(v.unresolved.map((u) => u.name), ['byLabel', 'host', 'wrongType']);
    const text = JSON.stringify(v.unresolved);
    for (const value of ['front', '10.96.0.12', 'shop-web']) assert.ok(!text.includes(value), `${value} is not in ${text}`);
    assert.equal(v.unresolved[2]?.problem, 'gave a string, not an integer');
    const big = object('ConfigMap', 'big', { data: { blob: 'x'.repeat(5000) } });
    const long = await verdict(`  outputs:\n    all: {expression: 'objects.ConfigMap["big"].data.blob + "!"', type: string}\n`, { self: SELF, objects: [big] });
    assert.deepEqual(long, { outputs: {}, unresolved: [{ name: 'all', problem: 'gave a string of 5001 characters; an output holds at most 4096' }] });
    assert.deepEqual(outputsCondition(v), {
      status: 'False',
      reason: 'OutputNotResolved',
      message: `byLabel: ${v.unresolved[0]?.problem ?? ''}; host: ${v.unresolved[1]?.problem ?? ''}; wrongType: gave a string, not an integer`,
    });
    assert.deepEqual(outputsCondition({ outputs: { ok: 'fine' }, unresolved: [] }), { status: 'True', reason: 'OutputsResolved', message: '1 output resolved' });
  });

  it('never shows a Secret its data, however the expression reaches it', async () => {
    const v = await verdict(`  outputs:
    computed: {expression: 'objects["Sec" + "ret"]["shop-password"].?data.hasValue()', type: boolean}
    keys: {expression: 'objects["Sec" + "ret"]["shop-password"].all(k, k != "data" && k != "stringData")', type: boolean}
`);
    assert.deepEqual(v, { outputs: { computed: false, keys: true }, unresolved: [] });
  });

  it('addresses by kind and name only what is unambiguous', async () => {
    const other = { ...object('Service', 'shop-web', {}), apiVersion: 'serving.knative.dev/v1' };
    const v = await verdict(`  outputs:\n    has: {expression: '"shop-web" in objects.Service', type: boolean}\n`, { self: SELF, objects: [SERVICE, other] });
    assert.deepEqual(v.outputs, { has: false });
  });

  it('bounds the cost: a comprehension over many objects is refused before it runs', async () => {
    const many = Array.from({ length: 2000 }, (_, i) => object('ConfigMap', `c${String(i)}`, {}));
    const v = await verdict(`  outputs:\n    pairs: {expression: 'objects.ConfigMap.all(a, objects.ConfigMap.exists(b, a == b))', type: boolean}\n`, { self: SELF, objects: many });
    assert.deepEqual(v.outputs, {});
    assert.match(v.unresolved[0]?.problem ?? '', /^its estimated cost \d+ is over the limit 1000000 \(its comprehensions iterate over 2000 items\)$/);
    const few = await verdict(`  outputs:\n    pairs: {expression: 'objects.ConfigMap.all(a, objects.ConfigMap.exists(b, a == b))', type: boolean}\n`, { self: SELF, objects: many.slice(0, 20) });
    assert.deepEqual(few.outputs, { pairs: true });
  });
});

describe('readyWhen', () => {
  const judged = { ready: true, failed: false, reason: 'AllReady', message: 'all objects are ready' };

  it('narrows Ready: true only when the objects are ready and the rule holds', async () => {
    const holds = await verdict(`  readyWhen: objects.Service["shop-web"].spec.?clusterIP.hasValue()\n`);
    assert.deepEqual(holds.readyWhen, { met: true, message: 'readyWhen holds' });
    assert.equal(withReadyWhen(judged, holds), judged);

    const pending = await verdict(`  readyWhen: objects.Service["shop-web"].spec.?clusterIP.hasValue()\n`, { self: SELF, objects: [{ ...SERVICE, live: undefined }] });
    assert.deepEqual(withReadyWhen(judged, pending), { ready: false, failed: false, reason: 'ReadyWhenNotMet', message: 'readyWhen is false' });

    const failing = { ready: false, failed: true, reason: 'Failed', message: 'Deployment web failed' };
    assert.equal(withReadyWhen(failing, pending), failing, 'a failure says more than the rule');
    assert.equal(withReadyWhen(undefined, pending), undefined, 'readiness not tracked stays so');
  });

  it('is not ready, and says why, when it cannot be told', async () => {
    const v = await verdict(`  readyWhen: objects.Job["migrate"].status.succeeded > 0\n`);
    assert.equal(v.readyWhen?.met, false);
    assert.match(v.readyWhen.message, /^readyWhen cannot be told yet: /);
    assert.deepEqual(v.unresolved.map((u) => u.name), ['readyWhen']);
    assert.equal(outputsCondition(v).status, 'True', 'readyWhen is not an output');
  });
});

describe('readyWhen without watched dependents', () => {
  it('is refused at start: nothing would judge it', async () => {
    const [line, ...more] = await problems(`  watchDependentResources: false\n  readyWhen: 'true'\n`);
    assert.equal(more.length, 0);
    assert.match(line ?? '', /line 6: readyWhen needs watchDependentResources: true \(Ready is judged from the release's live objects\)/);
    assert.deepEqual((await entry(`  watchDependentResources: false\n  outputs: {name: 'self.metadata.name + "-web"'}\n`)).status?.outputs.map((o) => o.name), ['name']);
  });
});

describe('docs/guides/outputs.md', () => {
  const page = readFileSync(join(REPO_ROOT, 'docs/guides/outputs.md'), 'utf8');
  const blocks = (lang: string): string[] => [...page.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'gu'))].map((m) => m[1] ?? '');

  it('its watches entry loads as shown, and its start-up error is what the operator says', async () => {
    const [watches] = blocks('yaml');
    assert.ok(watches !== undefined);
    const loaded = await parse(watches);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.problems.join('\n'));
    assert.deepEqual(loaded.entries[0]?.status?.outputs.map((o) => [o.name, o.type, o.column]), [['url', 'string', false], ['clusterIP', 'string', true], ['replicas', 'integer', false]]);
    const untyped = await parse(watches.replace(", type: integer}", '}'));
    assert.ok(!untyped.ok);
    assert.deepEqual(untyped.problems, [blocks('text')[1]?.trim()]);
  });
});
