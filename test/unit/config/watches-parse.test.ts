import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeEntry, parseWatches, type ChartChecker, type LoadResult } from '../../../src/config/watches.js';
import type { WatchEntry } from '../../../src/config/types.js';

const BASE = '/opt/helm';

/** A checker that accepts every chart and records the paths it was asked about. */
function acceptAll(): { check: ChartChecker; seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    check: (p) => {
      seen.push(p);
      return Promise.resolve(undefined);
    },
  };
}

async function parse(text: string, env: Record<string, string | undefined> = {}): Promise<LoadResult> {
  return parseWatches(text, BASE, env, acceptAll().check);
}

async function entries(text: string, env: Record<string, string | undefined> = {}): Promise<WatchEntry[]> {
  const r = await parse(text, env);
  assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
  return r.entries;
}

async function problems(text: string): Promise<string[]> {
  const r = await parse(text);
  assert.equal(r.ok, false, 'expected problems');
  return r.problems;
}

const MINIMAL = `
- group: demo.example.com
  version: v1alpha1
  kind: Nginx
  chart: helm-charts/nginx
`;

describe('parseWatches', () => {
  it('a minimal entry gets operator-sdk defaults', async () => {
    const [e] = await entries(MINIMAL);
    assert.deepEqual(e, {
      group: 'demo.example.com',
      version: 'v1alpha1',
      kind: 'Nginx',
      chartPath: '/opt/helm/helm-charts/nginx',
      overrideValues: {},
      watchDependentResources: true,
      reconcilePeriodMs: undefined,
      maxConcurrentReconciles: undefined,
      labelSelector: undefined,
      dryRunOption: undefined,
      allowClusterScoped: false,
      allowCrossNamespace: false,
      serviceAccount: undefined,
    });
  });

  it('the operator-sdk sample loads with every key honoured', async () => {
    const text = `# Use the 'create api' subcommand to add watches to this file.
- group: demo.example.com
  version: v1alpha1
  kind: Nginx
  chart: helm-charts/nginx
  overrideValues:
    image.repository: quay.io/mynginx
    proxy: $HTTP_PROXY
  watchDependentResources: false
  reconcilePeriod: 2m
  maxConcurrentReconciles: 4
  selector:
    matchLabels:
      app: web
#+kubebuilder:scaffold:watch
`;
    const [e] = await entries(text, { HTTP_PROXY: 'http://proxy:3128' });
    assert.deepEqual(e, {
      group: 'demo.example.com',
      version: 'v1alpha1',
      kind: 'Nginx',
      chartPath: '/opt/helm/helm-charts/nginx',
      overrideValues: { 'image.repository': 'quay.io/mynginx', proxy: 'http://proxy:3128' },
      watchDependentResources: false,
      reconcilePeriodMs: 120_000,
      maxConcurrentReconciles: 4,
      labelSelector: 'app=web',
      dryRunOption: undefined,
      allowClusterScoped: false,
      allowCrossNamespace: false,
      serviceAccount: undefined,
    });
  });

  it('an unset variable in overrideValues expands to the empty string', async () => {
    const [e] = await entries(`${MINIMAL}  overrideValues:\n    proxy: \${HTTP_PROXY}\n    both: $A-\${B}\n`, { A: 'a' });
    assert.deepEqual(e?.overrideValues, { proxy: '', both: 'a-' });
  });

  it('group may be absent or empty', async () => {
    const list = await entries(`
- version: v1
  kind: Thing
  chart: /charts/thing
- group: ""
  version: v2
  kind: Thing
  chart: /charts/thing
- group:
  version: v3
  kind: Thing
  chart: /charts/thing
`);
    assert.deepEqual(
      list.map((e) => [e.group, describeEntry(e)]),
      [
        ['', 'Thing.v1'],
        ['', 'Thing.v2'],
        ['', 'Thing.v3'],
      ],
    );
  });

  it('chart paths resolve against the watches file directory; absolute paths are kept', async () => {
    const { check, seen } = acceptAll();
    const r = await parseWatches(
      `${MINIMAL}- {group: demo.example.com, version: v1, kind: Other, chart: /abs/chart.tgz}\n- {version: v1, kind: Up, chart: ../up}\n`,
      BASE,
      {},
      check,
    );
    assert.ok(r.ok);
    assert.deepEqual(
      r.entries.map((e) => e.chartPath),
      ['/opt/helm/helm-charts/nginx', '/abs/chart.tgz', '/opt/up'],
    );
    assert.deepEqual(seen, ['/opt/helm/helm-charts/nginx', '/abs/chart.tgz', '/opt/up']);
  });

  it('a chart problem from the checker names the entry, its line and the path', async () => {
    const r = await parseWatches(MINIMAL, BASE, {}, () => Promise.resolve('not found'), { fileName: 'w.yaml' });
    assert.equal(r.ok, false);
    assert.deepEqual(r.problems, [
      `w.yaml entry 1 (Nginx.v1alpha1.demo.example.com), line 5: chart "helm-charts/nginx" (looked for /opt/helm/helm-charts/nginx; relative paths start at the watches file's directory): not found`,
    ]);
  });

  it('an absolute chart path is not explained again', async () => {
    const r = await parseWatches(
      '- {version: v1, kind: A, chart: /charts/a}',
      BASE,
      {},
      () => Promise.resolve('not found'),
    );
    assert.equal(r.ok, false);
    assert.deepEqual(r.problems, ['watches.yaml entry 1 (A.v1), line 1: chart "/charts/a": not found']);
  });

  it('reconcilePeriod takes Go durations, and 0 / 0s mean no periodic requeue', async () => {
    const periods = ['30s', '1m30s', '1h', '5000ms', '1.5h', '0', '0s', '"0"'];
    const text = periods
      .map((p, i) => `- {version: v1, kind: K${i}, chart: c, reconcilePeriod: ${p}}`)
      .join('\n');
    const list = await entries(text);
    assert.deepEqual(
      list.map((e) => e.reconcilePeriodMs),
      [30_000, 90_000, 3_600_000, 5_000, 5_400_000, 0, 0, 0],
    );
  });

  it('reconcilePeriod and chartRefreshInterval below their minimum are errors naming it', async () => {
    const ps = await problems(`
- {version: v1, kind: A, chart: c, reconcilePeriod: 1ms}
- {version: v1, kind: B, chart: oci://r.example/c, chartRefreshInterval: 500ms}
`);
    assert.deepEqual(ps, [
      'watches.yaml entry 1 (A.v1), line 2: reconcilePeriod "1ms" is below the minimum of 5s; use 5s or more, or 0 for no periodic re-reconcile',
      'watches.yaml entry 2 (B.v1), line 3: chartRefreshInterval "500ms" is below the minimum of 2s; use e.g. 10m, or 0 to resolve once',
    ]);
  });

  it('booleans are read as YAML 1.1 (as go-yaml reads them for operator-sdk)', async () => {
    const list = await entries(`
- {version: v1, kind: A, chart: c, watchDependentResources: no}
- {version: v1, kind: B, chart: c, watchDependentResources: off, allowClusterScoped: yes}
- {version: v1, kind: C, chart: c, watchDependentResources: True, allowCrossNamespace: on}
`);
    assert.deepEqual(
      list.map((e) => [e.watchDependentResources, e.allowClusterScoped, e.allowCrossNamespace]),
      [
        [false, false, false],
        [false, true, false],
        [true, false, true],
      ],
    );
  });

  it('keys match case-insensitively, as Go encoding/json matches them for operator-sdk', async () => {
    const [e] = await entries(`
- Group: demo.example.com
  Version: v1
  Kind: Nginx
  Chart: c
  WatchDependentResources: false
  overridevalues: {a: b}
`);
    assert.ok(e);
    assert.equal(describeEntry(e), 'Nginx.v1.demo.example.com');
    assert.equal(e.watchDependentResources, false);
    assert.deepEqual(e.overrideValues, { a: 'b' });
  });

  it('anchors and merge keys share settings between entries', async () => {
    const list = await entries(`
- &base
  group: demo.example.com
  version: v1
  kind: A
  chart: charts/shared
  reconcilePeriod: 5m
  overrideValues: &ov
    image.registry: registry.local
- <<: *base
  kind: B
  reconcilePeriod: 10m
- group: demo.example.com
  version: v1
  kind: C
  chart: charts/c
  overrideValues: *ov
`);
    assert.deepEqual(
      list.map((e) => [e.kind, e.chartPath, e.reconcilePeriodMs, e.overrideValues]),
      [
        ['A', '/opt/helm/charts/shared', 300_000, { 'image.registry': 'registry.local' }],
        ['B', '/opt/helm/charts/shared', 600_000, { 'image.registry': 'registry.local' }],
        ['C', '/opt/helm/charts/c', undefined, { 'image.registry': 'registry.local' }],
      ],
    );
  });

  it('overrideValues keep the text as written, whatever YAML type it would have', async () => {
    const [e] = await entries(`${MINIMAL}  overrideValues:
    image.tag: 1.10
    replicas: 3
    octal: 0777
    enabled: true
    legacy: yes
    nothing:
    tilde: ~
    quoted: "1.10"
    on: x
    big: 12345678901234567890
    folded: >-
      two
      lines
`);
    assert.deepEqual(e?.overrideValues, {
      'image.tag': '1.10',
      replicas: '3',
      octal: '0777',
      enabled: 'true',
      legacy: 'yes',
      nothing: '',
      tilde: '',
      quoted: '1.10',
      on: 'x',
      big: '12345678901234567890',
      folded: 'two lines',
    });
  });

  it('selector becomes the API query form, sorted by label key like apimachinery', async () => {
    const [e] = await entries(`${MINIMAL}  selector:
    matchLabels:
      tier: web
      app.kubernetes.io/name: shop
    matchExpressions:
      - {key: env, operator: In, values: [prod, dev, prod]}
      - {key: zone, operator: NotIn, values: [b, a]}
      - {key: canary, operator: DoesNotExist}
      - {key: owner, operator: Exists}
`);
    assert.equal(
      e?.labelSelector,
      'app.kubernetes.io/name=shop,!canary,env in (dev,prod),owner,tier=web,zone notin (a,b)',
    );
  });

  it('an empty selector selects everything', async () => {
    const list = await entries(`
- {version: v1, kind: A, chart: c, selector: {}}
- {version: v1, kind: B, chart: c, selector: {matchLabels: {}, matchExpressions: []}}
- {version: v1, kind: C, chart: c, selector: }
`);
    assert.deepEqual(
      list.map((e) => e.labelSelector),
      [undefined, undefined, undefined],
    );
  });

  it('matchLabels values keep their text and may be empty', async () => {
    const [e] = await entries(`${MINIMAL}  selector:\n    matchLabels: {version: 1.10, empty: "", flag: true}\n`);
    assert.equal(e?.labelSelector, 'empty=,flag=true,version=1.10');
  });

  it('dryRunOption accepts none, client, server and Helm’s older true/false', async () => {
    const list = await entries(`
- {version: v1, kind: A, chart: c, dryRunOption: none}
- {version: v1, kind: B, chart: c, dryRunOption: client}
- {version: v1, kind: C, chart: c, dryRunOption: server}
- {version: v1, kind: D, chart: c, dryRunOption: "true"}
- {version: v1, kind: E, chart: c, dryRunOption: "false"}
- {version: v1, kind: F, chart: c, dryRunOption: ""}
`);
    assert.deepEqual(
      list.map((e) => e.dryRunOption),
      ['none', 'client', 'server', 'client', 'none', undefined],
    );
  });

  it('maxConcurrentReconciles must be a whole number of at least 1', async () => {
    for (const bad of ['0', '-1', '1.5', '"4"', '[4]']) {
      const ps = await problems(`${MINIMAL}  maxConcurrentReconciles: ${bad}\n`);
      assert.equal(ps.length, 1, ps.join('\n'));
      assert.match(ps[0] ?? '', /line 6: maxConcurrentReconciles is .*; expected a whole number of at least 1/u);
    }
  });

  it('serviceAccount names a ServiceAccount of each resource\'s namespace', async () => {
    const [e] = await entries(`${MINIMAL}  serviceAccount: tenant\n`);
    assert.equal(e?.serviceAccount, 'tenant');
    for (const bad of ['Tenant', '""', '[tenant]', 'a_b']) {
      const ps = await problems(`${MINIMAL}  serviceAccount: ${bad}\n`);
      assert.equal(ps.length, 1, ps.join('\n'));
      assert.match(ps[0] ?? '', /line 6: serviceAccount .*(not a ServiceAccount name|expected a string such as tenant)/u);
    }
  });

  it('the same GVK twice names both entries', async () => {
    const ps = await problems(`${MINIMAL}${MINIMAL}`);
    assert.deepEqual(ps, [
      'watches.yaml entry 2 (Nginx.v1alpha1.demo.example.com), line 7: duplicates entry 1 (line 2); each group/version/kind may appear only once — remove one or change its version or kind',
    ]);
  });

  it('the same kind in another group or version is not a duplicate', async () => {
    const list = await entries(`${MINIMAL}- {group: other.example.com, version: v1alpha1, kind: Nginx, chart: c}
- {group: demo.example.com, version: v1beta1, kind: Nginx, chart: c}`);
    assert.equal(list.length, 3);
  });

  it('problems come in file order, all at once, each on one line', async () => {
    const ps = await problems(`
- version: v1
  kind: lower
  chart: c
- 42
- version: v1
  kind: Ok
  chart: c
  reconcilePeriod: often
  colour: blue
`);
    assert.deepEqual(
      ps.map((p) => p.replace(/;.*$/u, '')),
      [
        'watches.yaml entry 1 (lower.v1), line 3: kind "lower" is not a valid Kind',
        'watches.yaml entry 2, line 5: found a number (42)',
        'watches.yaml entry 3 (Ok.v1), line 10: unknown key "colour"',
        'watches.yaml entry 3 (Ok.v1), line 9: reconcilePeriod "often" is not a Go duration (expected a number at "often")',
      ],
    );
  });

  it('an empty list item is reported as such', async () => {
    const ps = await problems('- \n');
    assert.deepEqual(ps, [
      'watches.yaml entry 1, line 1: found empty; each entry must be a map with group, version, kind and chart',
    ]);
  });

  it('invalid YAML names line and column', async () => {
    const ps = await problems('- group: a\n  version: "v1\n');
    assert.equal(ps.length >= 1, true);
    assert.match(ps[0] ?? '', /^watches\.yaml:\d+:\d+: invalid YAML: /u);
  });

  it('a duplicate YAML key is invalid YAML, with its position', async () => {
    const ps = await problems('- version: v1\n  version: v2\n  kind: A\n  chart: c\n');
    assert.deepEqual(ps, ['watches.yaml:2:3: invalid YAML: Map keys must be unique']);
  });

  it('comment-only and blank files are empty', async () => {
    for (const text of ['', '   \n', '# nothing here\n']) {
      const ps = await problems(text);
      assert.equal(ps.length, 1);
      assert.match(ps[0] ?? '', /^watches\.yaml is empty; it must be a YAML list/u);
    }
  });

  it('a scalar top level is not a list', async () => {
    assert.deepEqual(await problems('hello'), [
      'watches.yaml: the top level is a string ("hello"); it must be a list of entries, each starting with "- " (if this is a single entry, put "- " before its first key)',
    ]);
  });

  it('describeEntry prints Kind.version.group, without a trailing dot for the core group', () => {
    assert.equal(describeEntry({ group: 'cache.example.com', version: 'v1alpha1', kind: 'Nginx' }), 'Nginx.v1alpha1.cache.example.com');
    assert.equal(describeEntry({ group: '', version: 'v1', kind: 'Thing' }), 'Thing.v1');
  });

  it('a map that merges itself does not hang the loader', async () => {
    const ps = await problems('- &a\n  kind: A\n  <<: *a\n');
    assert.deepEqual(
      ps.map((p) => p.replace(/;.*$/u, '')),
      ['watches.yaml entry 1 (kind A), line 2: version is missing', 'watches.yaml entry 1 (kind A), line 2: chart is missing'],
    );
  });

  it('YAML 1.1 timestamps and other typed scalars in overrideValues keep their text', async () => {
    const [e] = await entries(`${MINIMAL}  overrideValues:\n    date: 2001-12-14\n    hex: 0x1F\n    sexagesimal: 1:30\n`);
    assert.deepEqual(e?.overrideValues, { date: '2001-12-14', hex: '0x1F', sexagesimal: '1:30' });
  });

  it('a duplicate is reported even when the entry has other problems too', async () => {
    const ps = await problems(`${MINIMAL}- group: demo.example.com
  version: v1alpha1
  kind: Nginx
  chart: c
  reconcilePeriod: later
`);
    assert.deepEqual(
      ps.map((p) => p.replace(/;.*$/u, '')),
      [
        'watches.yaml entry 2 (Nginx.v1alpha1.demo.example.com), line 10: reconcilePeriod "later" is not a Go duration (expected a number at "later")',
        'watches.yaml entry 2 (Nginx.v1alpha1.demo.example.com), line 6: duplicates entry 1 (line 2)',
      ],
    );
  });
});
