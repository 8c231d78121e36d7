/**
 * The post-renderer decides on the objects the API server will receive: these tables pin the
 * go-yaml (v2, sigs.k8s.io/yaml) reading of scalars, tags, aliases, merge keys and `items`, and
 * show that each way a value could smuggle an object out of the CR's namespace is refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';

import { injectMetadata, PostRenderRefusal } from '../../../src/helm/postrender/inject.js';
import { goFloat32Text, goKeyText, goTimestamp } from '../../../src/helm/postrender/go-scalars.js';
import { ManifestResolveError, resolveManifestObjects, resolvePlain, MAX_DEPTH } from '../../../src/helm/postrender/resolve.js';
import type { PostRenderOwner, PostRenderSpec } from '../../../src/helm/types.js';

const OWNER: PostRenderOwner = {
  reference: { apiVersion: 'demo.chartpilot.io/v1alpha1', kind: 'WebApp', name: 'shop', uid: 'uid-1' },
  namespace: 'team-a',
  clusterScopedKinds: ['rbac.authorization.k8s.io/v1/ClusterRole', 'v1/Namespace', 'apiextensions.k8s.io/v1/CustomResourceDefinition'],
  namespacedKinds: ['v1/ConfigMap', 'v1/Secret', 'v1/ServiceAccount', 'apps/v1/Deployment', 'batch/v1/Job'],
  nonOwnedAnnotations: { 'operator-sdk/primary-resource': 'team-a/shop' },
  allowClusterScoped: false,
  allowCrossNamespace: false,
};

function spec(owner: Partial<PostRenderOwner> = {}): PostRenderSpec {
  return { labels: { 'chartpilot.io/owner-uid': 'uid-1' }, annotations: {}, owner: { ...OWNER, ...owner } };
}

function refusedWith(manifest: string, pattern: RegExp, s: PostRenderSpec = spec()): void {
  assert.throws(
    () => injectMetadata(manifest, s),
    (err: unknown) => err instanceof PostRenderRefusal && pattern.test(err.message) && /Nothing was applied/.test(err.message),
    `expected a refusal matching ${String(pattern)} for:\n${manifest}`,
  );
}

describe('resolvePlain: plain scalars as go-yaml v2 resolves them', () => {
  const cases: [string, unknown][] = [
    ['yes', true], ['Yes', true], ['on', true], ['ON', true], ['y', true], ['true', true],
    ['no', false], ['off', false], ['N', false], ['False', false],
    ['~', null], ['null', null], ['', null], ['NULL', null],
    ['0x1F', 31], ['0o17', 15], ['017', 15], ['0b101', 5], ['-0x10', -16], ['+12', 12], ['1_000', 1000],
    ['08', 8], ['1e3', 1000], ['.5', 0.5], ['1.', 1], ['-1.5e-2', -0.015],
    ['9223372036854775807', 9223372036854775807n], ['9223372036854775808', 9223372036854775808n],
    ['-9223372036854775809', -9223372036854775809], ['18446744073709551616', 18446744073709551616],
    ['1:20', '1:20'], ['2001-12-14', '2001-12-14'], ['abc', 'abc'], ['kube-system', 'kube-system'],
    ['0x', '0x'], ['1.2.3', '1.2.3'], ['+', '+'], ['-', '-'], ['.', '.'], ['.a', '.a'],
  ];
  for (const [text, want] of cases) {
    it(`${JSON.stringify(text)} → ${typeof want === 'bigint' ? `${want}n` : JSON.stringify(want)}`, () => {
      assert.equal(resolvePlain(text), want);
    });
  }
  it('infinity and NaN are refused: JSON cannot carry them', () => {
    for (const t of ['.inf', '-.Inf', '+.INF', '.nan']) assert.throws(() => resolvePlain(t), ManifestResolveError);
  });
});

describe('go-yaml v2 and sigs.k8s.io/yaml on keys and timestamps', () => {
  it('float keys are spelt as strconv.FormatFloat(f, \'g\', -1, 32) spells them', () => {
    // Each as helm v4.1.4's kube client reads it (devcluster/yaml-readers, go 1.26).
    const cases: [number, string][] = [
      [1.5, '1.5'], [0.1, '0.1'], [3.141592653589793, '3.1415927'], [1e6, '1e+06'], [100000, '100000'], [1e-5, '1e-05'],
      [-0, '-0'], [0.0001, '0.0001'], [123456789, '1.2345679e+08'], [16777217, '1.6777216e+07'], [1e10, '1e+10'],
      [1e39, '.inf'], [-1e39, '-.inf'], [-9223372036854775809, '-9.223372e+18'], [98709.19, '98709.19'],
    ];
    for (const [f, want] of cases) assert.equal(goFloat32Text(f), want, String(f));
    // Exactly halfway between two shortest spellings: left to Go's tie-breaking, so refused.
    assert.equal(goFloat32Text(1048576.25), undefined);
    assert.equal(goFloat32Text(0.000244140625), undefined);
  });

  it('keys become text as sigs.k8s.io/yaml makes them; null and uint64 keys it fails on', () => {
    assert.equal(goKeyText(true, false), 'true');
    assert.equal(goKeyText(16, false), '16');
    assert.equal(goKeyText(1, true), '1');
    assert.equal(goKeyText(9223372036854775807n, false), '9223372036854775807');
    assert.equal(goKeyText(9223372036854775808n, false), undefined);
    assert.equal(goKeyText(null, false), undefined);
  });

  it('!!timestamp takes what go-yaml v2 parses as one, and no more', () => {
    for (const t of ['2001-12-14', '2001-1-2', '2004-02-29', '2001-12-14T21:59:43Z', '2001-12-14t21:59:43.10-05:00', '2001-12-14 21:59:43.10']) assert.ok(goTimestamp(t), t);
    for (const t of ['2001-02-29', '2001-13-01', '2001-12-14T21:59:43', '2001-12-14 21:59:43Z', '2001-12-14T24:00:00Z', '01-12-14', '2001-12-14\n', 'tomorrow']) assert.ok(!goTimestamp(t), t);
  });
});

describe('resolveManifestObjects: tags, aliases, merge keys', () => {
  const one = (yaml: string): unknown => resolveManifestObjects(yaml)[0];

  it('quoted and block scalars are strings; plain ones resolve', () => {
    assert.deepEqual(one('a: "yes"\nb: \'0x10\'\nc: |\n  on\nd: yes\ne: 0x10\n'), { a: 'yes', b: '0x10', c: 'on\n', d: true, e: 16 });
  });

  it('YAML 1.1 booleans and plain dates read as helm applies them (go-yaml v2), whatever go-yaml v3 types them as', () => {
    // kyaml (go-yaml v3) reads `Off` as text and a plain date as a time, but helm applies go-yaml
    // v2's reading of what kyaml writes back, which keeps both as written.
    assert.deepEqual(one('d: [Off, y]\nt: 2001-12-14\nu: 2001-12-14T21:59:43Z\n'), { d: [false, true], t: '2001-12-14', u: '2001-12-14T21:59:43Z' });
  });

  it('<< as a value is text, also as kyaml writes it back (!!merge <<)', () => {
    assert.deepEqual(one('d: <<\ne: !!merge <<\nf: [<<]\n'), { d: '<<', e: '<<', f: ['<<'] });
    assert.throws(() => resolveManifestObjects('d: !!merge x\n'), /only a << may be/);
  });

  it('standard tags are honoured, !!binary decoded as go-yaml does', () => {
    assert.deepEqual(one('a: !!str yes\nb: !!int "12"\nc: !!binary a3ViZS1zeXN0ZW0=\nd: !!bool "on"\ne: !!null ~\nf: !!float 1\ng: ! x\nh: !!timestamp 2001-12-14\n'), {
      a: 'yes', b: 12, c: 'kube-system', d: true, e: null, f: 1, g: 'x', h: '2001-12-14',
    });
    // go-yaml v2 makes an integer tagged !!float a float64, as the API server then reads it.
    assert.deepEqual(one('a: !!float 9007199254740993\n'), { a: 9007199254740992 });
  });

  it('custom and unusual tags are refused, as are lying standard tags and tags helm’s readers take differently', () => {
    // ! 12: go-yaml v2 makes it "12", but kyaml drops the tag when it writes the manifest back, and v2 then reads 12.
    // !!timestamp tomorrow, !!float 9223372036854775808: go-yaml v2 fails on them.
    for (const y of ['a: !foo bar\n', 'a: !!set {x: null}\n', 'a: !!omap [x: 1]\n', 'a: !!int abc\n', 'a: !!bool maybe\n', 'a: !!binary "%%%"\n', 'a: !!binary //8=\n', 'a: ! 12\n', 'a: !!timestamp tomorrow\n', 'a: !!timestamp 2001-02-29\n', 'a: !!float 9223372036854775808\n']) {
      assert.throws(() => resolveManifestObjects(y), ManifestResolveError, y);
    }
  });

  it('aliases expand into independent copies', () => {
    const o = one('p: &m {a: 1}\nq: *m\nr: *m\n') as { p: { a: number }; q: { a: number } };
    assert.deepEqual(o, { p: { a: 1 }, q: { a: 1 }, r: { a: 1 } });
    assert.notEqual(o.p, o.q);
  });

  it('merge keys apply; own keys after them win; disagreeing merges are refused', () => {
    assert.deepEqual(one('m: {<<: {a: 1, b: 2}, b: 3}\n'), { m: { a: 1, b: 3 } });
    // go-yaml v2 applies a merge in document order (it overrides the keys before it), v3 never does.
    assert.throws(() => resolveManifestObjects('m: {b: 3, <<: {a: 1, b: 2}}\n'), /sets the key "b" before a merge key/);
    assert.deepEqual(one('m: {b: 2, <<: {a: 1, b: 2}}\n'), { m: { a: 1, b: 2 } });
    assert.deepEqual(one('m: {<<: [{a: 1}, {c: 2}]}\n'), { m: { a: 1, c: 2 } });
    assert.throws(() => resolveManifestObjects('m: {<<: [{a: 1}, {a: 2}]}\n'), /merges two different values/);
    assert.throws(() => resolveManifestObjects('m: {<<: 1}\n'), /not a mapping/);
  });

  it('duplicate keys are refused, also when only YAML 1.1 resolution or quoting tells them apart', () => {
    assert.throws(() => resolveManifestObjects('a: 1\na: 2\n'), ManifestResolveError);
    assert.throws(() => resolveManifestObjects('yes: 1\ntrue: 2\n'), /twice/);
    assert.throws(() => resolveManifestObjects('0.1: 1\n0.10000000149: 2\n'), /twice/);
    assert.throws(() => resolveManifestObjects('a: 1\n"a": 2\n'), /unique|twice/);
    assert.throws(() => resolveManifestObjects('a: 1\n"\\x61": 2\n'), /unique|twice/);
  });

  it('keys resolve like sigs.k8s.io/yaml: booleans and numbers become their text', () => {
    assert.deepEqual(one('on: a\n1: b\n"x": c\n0x10: d\n1e10: e\n3.141592653589793: f\n!!int "7": g\n2001-12-14: h\n'), {
      true: 'a', 1: 'b', x: 'c', 16: 'd', '1e+10': 'e', '3.1415927': 'f', 7: 'g', '2001-12-14': 'h',
    });
    // helm's kube client fails on a null key and on one beyond int64; a float key halfway between two
    // float32 spellings depends on how Go breaks the tie.
    for (const y of ['~: b\n', '!!null "": b\n', '9223372036854775808: b\n', '1048576.25: b\n']) assert.throws(() => resolveManifestObjects(y), ManifestResolveError, y);
  });

  it('a __proto__ key is data, never a prototype', () => {
    const o = one('__proto__: {polluted: true}\n') as Record<string, unknown>;
    assert.ok(Object.hasOwn(o, '__proto__'));
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });

  it('hostile nesting and alias bombs are refused, not a crash', () => {
    const deep = `${'a: '.repeat(1).replace('a: ', '')}${'['.repeat(MAX_DEPTH + 5)}${']'.repeat(MAX_DEPTH + 5)}`;
    assert.throws(() => resolveManifestObjects(`x: ${deep}\n`), ManifestResolveError);
    let bomb = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
    for (let i = 1; i < 9; i++) bomb += `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(', ')}]\n`;
    assert.throws(() => resolveManifestObjects(bomb), /more than/);
  });

  it('multi-document edge cases: empty documents skipped, non-objects refused', () => {
    assert.deepEqual(resolveManifestObjects('---\n---\n# only a comment\n---\nkind: A\n'), [{ kind: 'A' }]);
    assert.throws(() => resolveManifestObjects('---\n- a\n- b\n'), /not an object/);
    assert.throws(() => resolveManifestObjects('---\njust text\n'), /not an object/);
  });
});

describe('resolveManifestObjects: items, the way Kubernetes decodes them', () => {
  it('any object with items is a list, whatever its kind; items without kind and apiVersion take the list’s', () => {
    const objs = resolveManifestObjects('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n- {metadata: {name: t}}\n');
    assert.deepEqual(objs, [
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } },
      { metadata: { name: 't' }, kind: 'ConfigMap', apiVersion: 'v1' },
    ]);
    assert.deepEqual(resolveManifestObjects('apiVersion: v1\nkind: SecretList\nitems:\n- {metadata: {name: t}}\n')[0]?.['kind'], 'Secret');
  });

  it('items: null is an empty list; items that are not a list, or nested lists, are refused', () => {
    assert.deepEqual(resolveManifestObjects('kind: ConfigMap\nitems: ~\n'), []);
    assert.throws(() => resolveManifestObjects('kind: ConfigMap\nitems: {a: 1}\n'), /not a list/);
    assert.throws(() => resolveManifestObjects('kind: List\nitems:\n- kind: List\n  items: []\n'), /nested lists/);
    assert.throws(() => resolveManifestObjects('kind: List\nitems: [1]\n'), /not an object/);
  });
});

describe('post-render confinement: what a value could smuggle out, refused', () => {
  const attacks: [string, string, RegExp][] = [
    ['a !!binary namespace', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: !!binary a3ViZS1zeXN0ZW0=\n', /ConfigMap x in namespace kube-system/],
    ['a !!binary kind', 'apiVersion: rbac.authorization.k8s.io/v1\nkind: !!binary Q2x1c3RlclJvbGU=\nmetadata: {name: x}\n', /cluster-scoped ClusterRole x/],
    ['an alias namespace', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {n: &n kube-system}\n  name: x\n  namespace: *n\n', /ConfigMap x in namespace kube-system/],
    ['a merge key namespace', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {<<: {namespace: kube-system}, name: x}\n', /ConfigMap x in namespace kube-system/],
    ['a merged metadata', 'apiVersion: v1\nkind: ConfigMap\n<<: {metadata: {name: x, namespace: kube-system}}\n', /ConfigMap x in namespace kube-system/],
    [
      'items inside a ConfigMap',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: carrier}\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: team-b}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: kube-system}}\n- {apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: kube-system}}\n',
      /Secret s in namespace team-b, ConfigMap c in namespace kube-system, Deployment d in namespace kube-system/,
    ],
    ['an inherited list kind', 'apiVersion: v1\nkind: SecretList\nitems:\n- metadata: {name: token, namespace: kube-system}\n', /Secret token in namespace kube-system/],
    ['a quoted namespace', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: "kube-system"}\n', /in namespace kube-system/],
  ];
  for (const [what, manifest, pattern] of attacks) {
    it(`refuses ${what}`, () => { refusedWith(manifest, pattern); });
  }

  it('a namespace that is not text is refused', () => {
    refusedWith('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: [a]}\n', /metadata\.namespace that is not text/);
    refusedWith('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: 12}\n', /metadata\.namespace that is not text/);
  });

  it('a document without apiVersion or kind text is refused', () => {
    refusedWith('kind: ConfigMap\nmetadata: {name: x}\n', /no apiVersion or kind/);
    refusedWith('apiVersion: v1\nkind: yes\nmetadata: {name: x}\n', /no apiVersion or kind/);
  });

  it('an unknown kind is refused and named, so the caller can re-read discovery', () => {
    assert.throws(
      () => injectMetadata('apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: kube-system}\n', spec()),
      (err: unknown) => err instanceof PostRenderRefusal && err.unknownKinds.join() === 'example.com/v1/Widget' && /does not serve the kind example\.com\/v1\/Widget/.test(err.message),
    );
  });

  it('a CRD in the same render tells the scope of its kinds (where cluster-scoped objects are allowed)', () => {
    const crd = (scope: string): string =>
      `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: ${scope}\n  names: {kind: Widget, plural: widgets}\n  versions: [{name: v1, served: true, storage: true}]\n---\n`;
    const widget = 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n';
    assert.doesNotThrow(() => injectMetadata(crd('Namespaced') + widget, spec({ allowClusterScoped: true })));
    refusedWith(crd('Cluster') + widget, /cluster-scoped Widget w/, spec({ allowClusterScoped: false }));
    refusedWith(crd('Namespaced') + widget.replace('{name: w}', '{name: w, namespace: kube-system}'), /Widget w in namespace kube-system/, spec({ allowClusterScoped: true }));
  });

  it('an allowed namespace passes, owned, and the output carries no tag, alias or list', () => {
    const out = injectMetadata('apiVersion: v1\nkind: ConfigMapList\nitems:\n- metadata: {name: a, namespace: !!binary dGVhbS1h}\n  data: &d {k: v}\n- metadata: {name: b}\n  data: *d\n', spec());
    assert.doesNotMatch(out, /!!|&|\*|items/);
    const objs = resolveManifestObjects(out);
    assert.deepEqual(objs.map((o) => (o['metadata'] as { name: string }).name), ['a', 'b']);
    assert.deepEqual(objs.map((o) => o['data']), [{ k: 'v' }, { k: 'v' }]);
  });
});

describe('post-render emission', () => {
  it('characters YAML would read as line breaks or refuse are escaped, and read back the same', () => {
    const value = 'a\u2028b\u0085c\u007fd\ufeffe';
    const out = injectMetadata(`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {k: "a\\Lb\\Nc\\x7fd\\ufeffe"}\n`, spec());
    assert.doesNotMatch(out, /[\u2028\u0085\u007f\ufeff]/);
    assert.equal((resolveManifestObjects(out)[0]?.['data'] as { k: string }).k, value);
    // And a YAML 1.1 reader (as go-yaml is) reads the same text.
    const doc = parseAllDocuments(out, { version: '1.1' });
    assert.ok(Array.isArray(doc));
    assert.equal((doc[0]?.toJS() as { data: { k: string } }).data.k, value);
  });
});
