/** CRDs from watches entries: names, versions, printer columns, schemas from charts (dir and .tgz). */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { parse } from 'yaml';
import { compareVersions, generateCrds, gvkProblems, type GeneratedCrd } from '../../../src/generate/crd.js';
import { crdNames, pluralOf, shortNameCandidate } from '../../../src/generate/kind-names.js';
import { crdYaml, renderCrds } from '../../../src/generate/render.js';
import { tar } from '../config/tar-writer.js';
import { REPO_ROOT, tempTree } from './helpers.js';

const WEBAPP = join(REPO_ROOT, 'charts/webapp');
const TINY = join(REPO_ROOT, 'test/fixtures/charts/tiny');

interface Version {
  name: string;
  served: boolean;
  storage: boolean;
  subresources: unknown;
  additionalPrinterColumns: { name: string; type: string; jsonPath: string; priority?: number }[];
  schema: { openAPIV3Schema: { properties: Record<string, Record<string, unknown>> } };
}

function versions(crd: GeneratedCrd): Version[] {
  return (crd.object['spec'] as { versions: Version[] }).versions;
}

async function crds(entries: Parameters<typeof generateCrds>[0]): Promise<GeneratedCrd[]> {
  const r = await generateCrds(entries);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.crds;
}

describe('kind names', () => {
  it('pluralises like kubebuilder', () => {
    assert.equal(pluralOf('WebApp'), 'webapps');
    assert.equal(pluralOf('Policy'), 'policies');
    assert.equal(pluralOf('Gateway'), 'gateways');
    assert.equal(pluralOf('Ingress'), 'ingresses');
    assert.equal(pluralOf('Box'), 'boxes');
    assert.equal(pluralOf('Batch'), 'batches');
    assert.equal(pluralOf('Mesh'), 'meshes');
    assert.equal(pluralOf('Quiz'), 'quizes');
  });

  it('derives short names from capitals, never a taken or ambiguous one', () => {
    assert.equal(shortNameCandidate('WebApp'), 'wa');
    assert.equal(shortNameCandidate('DatabaseCluster'), 'dc');
    assert.equal(shortNameCandidate('Nginx'), undefined, 'one capital is too short');
    assert.equal(shortNameCandidate('ServiceAccount'), undefined, '"sa" is the ServiceAccount short name');
    assert.equal(shortNameCandidate('PersistentVolume'), undefined);
    const names = crdNames(['WebApp', 'WorkAgent', 'DataCache', 'Dc']);
    assert.deepEqual(names.get('WebApp')?.shortNames, [], 'wa would be ambiguous between WebApp and WorkAgent');
    assert.deepEqual(names.get('WorkAgent')?.shortNames, []);
    assert.deepEqual(names.get('DataCache')?.shortNames, [], '"dc" is the singular of kind Dc');
    assert.deepEqual(names.get('Dc'), { kind: 'Dc', listKind: 'DcList', plural: 'dcs', singular: 'dc', shortNames: [] });
  });

  it('orders versions by Kubernetes priority', () => {
    const sorted = ['v1alpha1', 'v2beta1', 'v1', 'foo', 'v1beta2', 'v2', 'v1beta1', 'v11alpha2'].sort(compareVersions);
    assert.deepEqual(sorted, ['v2', 'v1', 'v2beta1', 'v1beta2', 'v1beta1', 'v11alpha2', 'v1alpha1', 'foo']);
  });
});

describe('generateCrds', () => {
  it('builds the sample CRD: names, one served storage version, status subresource, columns', async () => {
    const [crd] = await crds([{ group: 'demo.chartpilot.io', version: 'v1alpha1', kind: 'WebApp', chartPath: WEBAPP }]);
    assert.ok(crd);
    assert.equal(crd.name, 'webapps.demo.chartpilot.io');
    assert.equal(crd.fileName, 'demo.chartpilot.io_webapps.yaml');
    const spec = crd.object['spec'] as Record<string, unknown>;
    assert.equal(spec['scope'], 'Namespaced');
    assert.deepEqual(spec['names'], { kind: 'WebApp', listKind: 'WebAppList', plural: 'webapps', singular: 'webapp', shortNames: ['wa'], categories: ['chartpilot'] });
    const [v] = versions(crd);
    assert.ok(v);
    assert.equal(v.served && v.storage, true);
    assert.deepEqual(v.subresources, { status: {} });
    assert.deepEqual(
      v.additionalPrinterColumns.map((c) => [c.name, c.type, c.jsonPath, c.priority ?? 0]),
      [
        ['State', 'string', '.status.chartpilot.summary.state', 0],
        ['Reason', 'string', '.status.chartpilot.summary.reason', 0],
        ['Revision', 'integer', '.status.deployedRelease.revision', 0],
        ['Chart', 'string', '.status.deployedRelease.chart', 0],
        ['Age', 'date', '.metadata.creationTimestamp', 0],
        ['Message', 'string', '.status.chartpilot.summary.message', 0],
        ['Ready', 'string', '.status.conditions[?(@.type=="Ready")].status', 1],
      ],
    );
    const props = v.schema.openAPIV3Schema.properties;
    assert.deepEqual(props['status'], {
      description: 'Written by chartpilot: conditions (Ready, Deployed, ...), the deployed release, and under chartpilot.summary the state kubectl get prints.',
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    });
    assert.equal((props['spec']?.['properties'] as Record<string, unknown>)['replicaCount'] !== undefined, true);
  });

  it('accepts any spec when the chart has no values.schema.json', async () => {
    const [crd] = await crds([{ group: 'x.example.com', version: 'v1', kind: 'Tiny', chartPath: TINY }]);
    assert.ok(crd);
    const spec = versions(crd)[0]?.schema.openAPIV3Schema.properties['spec'];
    assert.ok(spec);
    assert.equal(spec['type'], 'object');
    assert.equal(spec['x-kubernetes-preserve-unknown-fields'], true);
    assert.equal(spec['properties'], undefined);
  });

  it("gives valuesFrom.specField and dependsOn.specField their schemas, beside the chart's own values", async () => {
    const valuesFrom = { specField: 'valuesFrom', allowCrossNamespace: false, references: [] };
    for (const chartPath of [TINY, WEBAPP]) {
      const [crd] = await crds([{ group: 'x.example.com', version: 'v1', kind: 'Ref', chartPath, valuesFrom }]);
      assert.ok(crd);
      const spec = versions(crd)[0]?.schema.openAPIV3Schema.properties['spec'] as { properties: Record<string, { type: string; maxItems: number; items: { required: string[]; properties: Record<string, { enum?: string[] }> } }> };
      const field = spec.properties['valuesFrom'];
      assert.ok(field, chartPath);
      assert.equal(field.type, 'array');
      assert.equal(field.maxItems, 32);
      assert.deepEqual(field.items.required, ['kind', 'name']);
      assert.deepEqual(field.items.properties['kind']?.enum, ['Secret', 'ConfigMap']);
      assert.ok(field.items.properties['namespace'], 'kept, so that a refused namespace is told, not pruned');
      if (chartPath === WEBAPP) assert.ok(spec.properties['replicaCount'], "the chart's values stay");
    }
    const [withDeps] = await crds([{ group: 'x.example.com', version: 'v1', kind: 'Dep', chartPath: WEBAPP, valuesFrom, dependsOn: { specField: 'needs', allowCrossNamespace: false } }]);
    assert.ok(withDeps);
    const props = (versions(withDeps)[0]?.schema.openAPIV3Schema.properties['spec'] as { properties: Record<string, { type: string; items: { required: string[] } }> }).properties;
    assert.equal(props['needs']?.type, 'array');
    assert.deepEqual(props['needs'].items.required, ['kind', 'name']);
    assert.ok(props['valuesFrom'], 'both fields');
  });

  it('types status.outputs as the entry declares them, and shows the outputs that ask as columns', async () => {
    const outputs = [
      { name: 'url', expression: '"http://" + objects.Service["web"].metadata.name', type: 'string', column: true },
      { name: 'replicas', expression: 'objects.Deployment["web"].spec.replicas', type: 'integer', column: false },
      { name: 'ready', expression: 'true', type: 'boolean', column: true },
    ] as const;
    const [crd] = await crds([{ group: 'demo.chartpilot.io', version: 'v1alpha1', kind: 'WebApp', chartPath: WEBAPP, status: { outputs } }]);
    assert.ok(crd);
    const [v] = versions(crd);
    assert.ok(v);
    assert.deepEqual(
      v.additionalPrinterColumns.map((c) => [c.name, c.type, c.jsonPath]).slice(3, 7),
      [
        ['Chart', 'string', '.status.deployedRelease.chart'],
        ['Url', 'string', '.status.outputs.url'],
        ['OutputReady', 'boolean', '.status.outputs.ready'],
        ['Age', 'date', '.metadata.creationTimestamp'],
      ],
      'after the release, before Age; a name of ours is not taken twice',
    );
    const status = v.schema.openAPIV3Schema.properties['status'] as { 'x-kubernetes-preserve-unknown-fields': boolean; properties: { outputs: { properties: Record<string, { type: string }> } } };
    assert.equal(status['x-kubernetes-preserve-unknown-fields'], true);
    assert.deepEqual(Object.fromEntries(Object.entries(status.properties.outputs.properties).map(([k, p]) => [k, p.type])), { url: 'string', replicas: 'integer', ready: 'boolean' });
  });

  it('reads values.schema.json from a packaged chart', async () => {
    const dir = await tempTree('crd-tgz', {});
    const archive = join(dir, 'packed-0.1.0.tgz');
    await writeFile(
      archive,
      gzipSync(
        tar([
          { name: 'packed/Chart.yaml', data: 'apiVersion: v2\nname: packed\nversion: 0.1.0\n' },
          { name: 'packed/values.yaml', data: 'size: 1\n' },
          { name: 'packed/values.schema.json', data: JSON.stringify({ type: 'object', additionalProperties: false, properties: { size: { type: 'integer', maximum: 3 } } }) },
        ]),
      ),
    );
    const [crd] = await crds([{ group: 'x.example.com', version: 'v1', kind: 'Packed', chartPath: archive }]);
    assert.ok(crd);
    const spec = versions(crd)[0]?.schema.openAPIV3Schema.properties['spec'];
    assert.deepEqual((spec?.['properties'] as Record<string, unknown>)['size'], { type: 'integer', maximum: 3 });
  });

  it('serves one kind in several versions from one CRD, storing the most stable', async () => {
    const all = await crds([
      { group: 'x.example.com', version: 'v1alpha1', kind: 'Web', chartPath: TINY },
      { group: 'x.example.com', version: 'v1', kind: 'Web', chartPath: WEBAPP },
      { group: 'x.example.com', version: 'v1beta1', kind: 'Web', chartPath: TINY },
    ]);
    assert.equal(all.length, 1);
    const vs = versions(all[0] as GeneratedCrd);
    assert.deepEqual(vs.map((v) => [v.name, v.storage]), [['v1', true], ['v1beta1', false], ['v1alpha1', false]]);
  });

  it('reports group, version and kind problems at once', () => {
    assert.deepEqual(gvkProblems({ group: 'demo.chartpilot.io', version: 'v1', kind: 'WebApp' }), []);
    const problems = gvkProblems({ group: '', version: 'V1', kind: 'web-app' });
    assert.equal(problems.length, 3);
    assert.match(problems[0] ?? '', /group "" cannot hold a CustomResourceDefinition; use a lower-case domain/);
    assert.match(problems[1] ?? '', /version "V1" must be a lower-case DNS label/);
    assert.match(problems[2] ?? '', /kind "web-app" cannot name a CustomResourceDefinition/);
    assert.match(gvkProblems({ group: 'nodots', version: 'v1', kind: 'A' })[0] ?? '', /at least one dot/);
  });

  it('refuses a values.schema.json that is not JSON (Helm would too)', async () => {
    const dir = await tempTree('crd-bad', { 'Chart.yaml': 'apiVersion: v2\nname: bad\nversion: 0.1.0\n', 'values.schema.json': '{ nope' });
    const r = await generateCrds([{ group: 'x.example.com', version: 'v1', kind: 'Bad', chartPath: dir }]);
    if (r.ok) assert.fail('expected a problem');
    assert.match(r.problems[0] ?? '', /values\.schema\.json is not valid JSON/);
  });

  it('refuses two kinds whose plurals collide', async () => {
    const r = await generateCrds([
      { group: 'x.example.com', version: 'v1', kind: 'Box', chartPath: TINY },
      { group: 'x.example.com', version: 'v1', kind: 'BOX', chartPath: TINY },
    ]);
    if (r.ok) assert.fail('expected a problem');
    assert.match(r.problems[0] ?? '', /would both be served as boxes\.x\.example\.com/);
  });
});

describe('deploy/crds stays in step with watches.yaml', () => {
  it('matches what generate crd writes today', async () => {
    const watches = join(REPO_ROOT, 'watches.yaml');
    for (const crd of await renderCrds(watches, {})) {
      const committed = await readFile(join(REPO_ROOT, 'deploy/crds', crd.fileName), 'utf8').catch(() => '(missing)');
      assert.equal(
        committed,
        crdYaml(crd, watches),
        `deploy/crds/${crd.fileName} is stale: run chartpilot generate all --output-dir deploy --image chartpilot-webapp:0.1.0 --offline`,
      );
      const parsed = parse(committed) as { metadata: { name: string } };
      assert.equal(parsed.metadata.name, crd.name);
    }
  });
});
